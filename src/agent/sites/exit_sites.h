/* exit_sites.h - the exits the compiler prepared (gcc's __return_loc,
 * XRay's exit and tail-call sleds), given to their functions' entry sites. */
#ifndef NEEDLE_EXIT_SITES_H
#define NEEDLE_EXIT_SITES_H

struct module;
struct elf_image;
struct discovery;

/* After d's entry sites are made: make the exit sites of m (m->exit_sites)
 * and hang each on its function's entry site (site->exits).  Exit sites
 * whose bytes need a rewrite first are listed in d (xray, xray_ret).
 * 0 or negative errno. */
int exit_sites_discover(struct module *m, const struct elf_image *img, struct discovery *d);

#endif
