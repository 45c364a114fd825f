/* phdr_walk.h - dl_iterate_phdr for the agent, safe across the program's
 * forks (phdr_walk.c). */
#ifndef NEEDLE_PHDR_WALK_H
#define NEEDLE_PHDR_WALK_H

#include <link.h>

/* dl_iterate_phdr, but no fork of the program lands while it runs: a
 * fork waits for it (the callbacks must be short: they copy), 200 ms at
 * most, and it waits 100 ms at most for a fork under way.  Not from a
 * signal handler. */
int agent_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

#endif
