/* trigger.h - snapshot triggers of needle record --snapshot (trigger.c).
 *
 * A trigger's functions that the recorder's function_graph link traces
 * are timed by the recorder itself (trigger_fold): their sites carry
 * SF_TRIGGER, and the table below says what each one watches.  The
 * rest keep a link of the trigger's own. */
#ifndef NEEDLE_TRIGGER_H
#define NEEDLE_TRIGGER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct shm_header;

/* What the recorder watches at one site: an entry trigger, and the
 * shortest duration of the duration triggers naming it (clock units; 0:
 * none). */
struct trigger_site {
	uint32_t id;
	uint32_t on_entry;
	uint64_t threshold;
};

struct trigger_table {
	size_t cnt;
	struct trigger_site site[]; /* by id, ascending */
};

/* Published with a release store by trigger_fold; a table it replaces is
 * freed after a grace period, so a handler (inside the dispatcher's read
 * section) may use what it loaded until it returns. */
extern const struct trigger_table *_Atomic trigger_folded;

/* The site's entry in the table, or NULL.  Inline and integer-only: the
 * recorder's direct handlers (built -mgeneral-regs-only, calling
 * nothing) use it. */
static inline const struct trigger_site *trigger_folded_site(uint32_t id)
{
	/* Acquire: pairs with trigger_fold's release, the table's entries
	 * before its pointer. */
	const struct trigger_table *t = atomic_load_explicit(&trigger_folded, memory_order_acquire);
	size_t lo = 0, hi = t ? t->cnt : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->site[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return t && lo < t->cnt && t->site[lo].id == id ? &t->site[lo] : NULL;
}

/* The recording's buffer, for trigger_snapshot_now, and this program's
 * image number, said with each trigger's site (before trigger_parse). */
void trigger_init(struct shm_header *shm, uint32_t image);
/* Read the triggers of spec (lines "GLOB\tNS": NS 0 fires on entry,
 * else on a call longer than NS nanoseconds), requests at least
 * min_gap_ns apart, each freezing the rings after_ns after it fired
 * (shm_header.freeze_at).  Nothing is attached yet.  0, or negative
 * errno with why filled in (a trigger that matches no function names
 * the nearest). */
int trigger_parse(const char *spec, uint64_t min_gap_ns, uint64_t after_ns, char *why, size_t whylen);
/* Does some trigger name site id? */
int trigger_matches(uint32_t id);
/* The recorder times the sites ids (ascending; n may be 0) from now on:
 * publish their table, and give each trigger a link of its own on the
 * functions it names that are not among them.  Called again whenever
 * the recorder's sites or tracer change.  0, or negative errno with why
 * filled in. */
int trigger_fold(const uint32_t *ids, size_t n, char *why, size_t whylen);
/* Detach them all and forget them. */
void trigger_stop(void);

/* The clock the recording's timestamps use, and a trigger that fired
 * (SNAPSHOT_ENTERED or SNAPSHOT_DURATION) at site id: a snapshot
 * request, unless one was made less than the minimum gap ago. */
uint64_t trigger_clock(void);
void trigger_fire(uint32_t kind, uint32_t site, uint64_t now, uint64_t duration);

/* needle ctl PID snapshot: ask for one now.  -EOPNOTSUPP when the
 * recording is not in snapshot mode. */
int trigger_snapshot_now(void);

#endif
