/* patch_batch.h - rewrite many sites at once while other threads run them. */
#ifndef NEEDLE_PATCH_BATCH_H
#define NEEDLE_PATCH_BATCH_H

#include <stddef.h>
#include <stdint.h>

struct site;

struct patch_op {
	struct site *site;
	uint8_t len;        /* 5, or 6 for a 6-byte fentry call becoming NOP5 + NOP */
	uint8_t bytes[8];   /* the new instruction(s) */
	uint8_t want_call;  /* 1 if the new bytes are the CALL to the site's stub */
};

/* Apply ops with the int3 protocol: int3 on every site, core sync, tails,
 * core sync, first bytes, core sync: 3 syncs for any batch size.  Every op
 * must replace one instruction by one instruction (or by NOP5 + NOPs), so
 * no thread can be inside a site.  If a thread blocks SIGTRAP, threads are
 * stopped instead (thread_stop.h); -EDEADLK if that is impossible too. */
int patch_batch_apply(struct patch_op *ops, size_t n);

/* Rewrite ops whose old bytes are several instructions (gcc's NOPs,
 * relocated entries): with every other thread stopped and moved out of
 * the sites, a few thousand sites per stop (a long batch is several
 * stops, each kept short), or asleep behind a door (sleeper_door.h).  On
 * error, the sites of the stops that completed are switched and marked
 * so (site->enabled), the others untouched. */
int patch_rewrite_stopped(struct patch_op *ops, size_t n);

struct patch_stats {
	uint64_t batches, last_syncs, last_sites;
};
void patch_get_stats(struct patch_stats *st);

#endif
