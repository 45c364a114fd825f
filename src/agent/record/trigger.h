/* trigger.h - snapshot triggers of needle record --snapshot (trigger.c). */
#ifndef NEEDLE_TRIGGER_H
#define NEEDLE_TRIGGER_H

#include <stddef.h>
#include <stdint.h>

struct shm_header;

/* Attach the triggers of spec (lines "GLOB\tNS": NS 0 fires on entry,
 * else on a call longer than NS nanoseconds), requests at least
 * min_gap_ns apart, into the buffer shm, each freezing the rings
 * after_ns after it fired (shm_header.freeze_at).  0, or negative errno with why
 * filled in (a trigger that matches no function names the nearest). */
int trigger_start(struct shm_header *shm, const char *spec, uint64_t min_gap_ns, uint64_t after_ns, char *why,
		  size_t whylen);
/* Detach them all. */
void trigger_stop(void);

/* The recording's buffer, for trigger_snapshot_now, and this program's
 * image number, said with each trigger's site (before trigger_start). */
void trigger_init(struct shm_header *shm, uint32_t image);
/* needle ctl PID snapshot: ask for one now.  -EOPNOTSUPP when the
 * recording is not in snapshot mode. */
int trigger_snapshot_now(void);

#endif
