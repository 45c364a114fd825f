/* site_discover.h - find the sites of one loaded object and classify the
 * instruction each one holds. */
#ifndef NEEDLE_SITE_DISCOVER_H
#define NEEDLE_SITE_DISCOVER_H

#include <stddef.h>

struct module;
struct site;

/* What one object's discovery found.  Sites whose bytes must be rewritten
 * before they can be switched (normalized) are listed by kind; the layer
 * that patches does it (patch/prepare.c), since discovery does not. */
struct discovery {
	struct site **sites;        /* new sites, in the site table */
	size_t site_cnt;
	struct site **fentry;       /* call __fentry__ -> NOP5: int3 protocol */
	size_t fentry_cnt;
	struct site **nops;         /* gcc's five NOPs -> NOP5: threads stopped */
	size_t nops_cnt;
	struct site **xray;         /* XRay entry and tail-call sleds: their never-run nops rewritten */
	size_t xray_cnt;
	struct site **xray_ret;     /* XRay exit sleds, "ret; NOPs" -> "NOP5; ret": threads stopped */
	size_t xray_ret_cnt;
};

/* Which sites discovery makes: those compilers prepared, those it can
 * relocate (functions no compiler prepared), or both.  Set before the
 * first discovery; applies to every object found from then on. */
#define SITE_KINDS_COMPILED 1
#define SITE_KINDS_RELOCATED 2
#define SITE_KINDS_ALL 3
void site_discover_kinds(int kinds);
int site_discover_get_kinds(void);

/* Add the sites of m to the site table.  0 or negative errno. */
int site_discover(struct module *m, struct discovery *d);
void discovery_free(struct discovery *d);
/* Append s to one of a discovery's lists.  0 or -ENOMEM. */
int discovery_list_add(struct site ***list, size_t *cnt, struct site *s);

#endif
