/* text_window.h - make the code pages under a set of sites writable for
 * the length of a patch batch, then give them back their protection. */
#ifndef NEEDLE_TEXT_WINDOW_H
#define NEEDLE_TEXT_WINDOW_H

#include <stddef.h>
#include <stdint.h>

struct text_range {
	uint64_t lo, hi;
	int prot; /* protection to restore */
};

struct text_window {
	struct text_range *ranges;
	size_t cnt;
};

/* addrs sorted ascending; each patch spans len bytes. */
int text_window_open(struct text_window *w, const uint64_t *addrs, size_t n, size_t len);
/* Restore protections and free the window. */
int text_window_close(struct text_window *w);

#endif
