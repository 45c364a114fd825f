/* recorder_direct.h - what the recorder's function_graph handlers and
 * their direct twins (recorder_direct.c) share: the recording's switches
 * and per-site flags (written by recorder.c on the cold side, read on the
 * hot one with plain or relaxed loads), the cookie bits, and the direct
 * handlers themselves, and the plain call's entry for the top layer.
 * Included by recorder.c, recorder_direct.c and agent/graph_direct.c. */
#ifndef NEEDLE_RECORDER_DIRECT_H
#define NEEDLE_RECORDER_DIRECT_H

#include <stdatomic.h>
#include <stdint.h>

#include "needle.h"

/* Recording (0 while a recording starts and once it stops: the handlers
 * then write nothing). */
extern int rec_active;
/* The switches uftrace's triggers and --signal turn (recorder.c): while
 * nonzero, calls are neither recorded nor hooked.  PAUSE_OFF: a trace_off
 * (or --disable) until a trace_on; the calls open at the trace_off still
 * record their exits.  PAUSE_FINISHED: a finish, for good; nothing more
 * is written.  The direct handlers decline while either is set. */
#define PAUSE_OFF 1
#define PAUSE_FINISHED 2
extern _Atomic int rec_paused;
/* -D: the depth of calls recorded; UINT32_MAX for no limit. */
extern uint32_t rec_max_depth;
/* Some -F: nothing outside a -F call is recorded. */
extern int rec_have_subtree;
/* Some site flag is set: the handlers read them. */
extern int rec_have_flags;

/* What a site is to the filters and to the library-call view, by site id
 * (21 bits; a site past them has no flags): written by select_sites
 * before the site is patched, read by the handlers.  Untouched pages are
 * never committed. */
#define SITE_FLAG_IDS (1u << 21)
extern _Atomic uint16_t rec_site_flags[SITE_FLAG_IDS];

static inline unsigned rec_site_flag(uint32_t id)
{
	return rec_have_flags && id < SITE_FLAG_IDS ? atomic_load_explicit(&rec_site_flags[id], memory_order_relaxed)
						    : 0;
}

/* Cookie of a call the filters changed the thread's state for: its exit
 * puts the state back. */
#define COOKIE_IN (1ull << 62)  /* a -F call: the old limit in the low 32 bits */
#define COOKIE_OUT (1ull << 63) /* a -N call, not recorded */
#define COOKIE_LIB_TOP (1ull << 61) /* the thread's lib_top before this call */
/* A call a --trigger times (a SF_TRIGGER site): its entry clock in the
 * low bits; with COOKIE_SKIPPED, the filters did not record it and its
 * exit is only the trigger's.  Never with COOKIE_IN (no -F site is
 * folded). */
#define COOKIE_TIMED (1ull << 60)
#define COOKIE_SKIPPED (1ull << 59)
#define COOKIE_TIME_MASK ((1ull << 59) - 1)

/* The site flags the direct handlers act on; recorder.c has the others.
 * SF_LIB: a relocated function of a library, whose calls are recorded
 * when the library-call view says so (recorder.c, libcall_recorded).
 * SF_HIDE: never recorded (start-up, C++ exception machinery).  SF_TRIGGER: a
 * function whose --trigger the recorder times (trigger_fold). */
#define SF_LIB 4u
#define SF_HIDE 8u
#define SF_TRIGGER 128u
/* The library-call view is uftrace's default (the program's calls into
 * libraries, not the libraries' calls of their own functions), and the
 * program's address span (the first object dl_iterate_phdr reports):
 * a library function called from there is a recorded library call. */
extern int rec_libcall_program;
extern uint64_t rec_program_lo, rec_program_hi;

/* The function_graph tracer's direct handlers (needle.h's contract):
 * a call of a function with no flag but a trigger's, no -R, -A values in
 * integer registers only, within the depth limit, in
 * a chunk with room, timed by the TSC; everything else declines to
 * graph_entry and graph_exit. */
int rec_graph_direct_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
			   void *thread_data, uint64_t *cookie, void *user_data);
int rec_graph_direct_exit(const struct needle_func *func, uint64_t cookie, void *thread_data, void *user_data);

/* For recorder_direct.c and the top layer's entry of the recorder
 * (agent/graph_direct.c), both built with -mgeneral-regs-only (the
 * *_direct.c rule). */
#ifdef NEEDLE_RECORDER_DIRECT_BODIES
#include "agent/record/args.h"
#include "agent/record/event_writer.h"
#include "agent/record/trigger.h"

/* The entry's event at the thread's position, with the -A block after
 * it when `words` (2 per value of as, read from regs: event_write_fixed's
 * layout), and the thread's open site and depth; room and delta were
 * checked by the caller. */
static inline __attribute__((always_inline)) void rec_entry_store(struct rec_thread *rt, uint32_t id,
								   const struct arg_spec *as, uint32_t words,
								   const struct needle_regs *regs, uint64_t delta)
{
	uint64_t *p = rt->pos;

	p[0] = ev_make(EV_ENTRY, id, delta);
	if (words) {
		p[1] = ev_make(EV_SWITCH, EV_DATA_SITE, words);
		for (uint8_t k = 0; k < as->entry_cnt; k++) {
			p[2 + 2 * k] = as->entry[k].word;
			p[3 + 2 * k] = args_value_in(&as->entry[k], regs);
		}
		p += 1 + words;
	}
	rt->pos = p + 1;
	events_publish(rt);
	if (rt->depth < REC_OPEN_SITES)
		rt->open_site[rt->depth] = id;
	rt->depth++;
}

/* The plain call, whole: a function with no site flag but a duration
 * trigger's, -A values only in integer registers and no filter on them,
 * in a thread inside no -F or -N call, recorded as graph_entry records
 * it (rec_graph_direct_entry's path with every branch for something else
 * taken away).  1, or 0 with nothing done, for the caller to try the
 * general handler.  Its exit is rec_graph_direct_exit's. */
static inline __attribute__((always_inline)) int rec_graph_plain_entry(struct rec_thread *rt, uint32_t id,
								       const struct needle_regs *regs,
								       uint64_t *cookie)
{
	const struct arg_spec *as = args_for(id);
	unsigned fl = rec_site_flag(id);
	const struct trigger_site *trig = NULL;

	if (!rec_active || !use_tsc || rec_have_subtree || atomic_load_explicit(&rec_paused, memory_order_relaxed) ||
	    !rt->chunk || rt->out_count || (as && !as->entry_direct))
		return 0;
	if (fl) {
		if (fl != SF_TRIGGER || as)
			return 0;
		trig = trigger_folded_site(id);
		if (trig && trig->on_entry)
			return 0;
	}
	if (rt->depth >= (rt->limit ? rt->limit : rec_max_depth))
		return 0;
	uint32_t words = as ? 2u * as->entry_cnt : 0;
	uint64_t now = tsc_read(), delta = now - rt->base;
	if (rt->pos + 1 + (words ? 1 + words : 0) > rt->end || delta > EV_DELTA_MASK)
		return 0;
	rec_entry_store(rt, id, as, words, regs, delta);
	*cookie = rt->lib_top ? COOKIE_LIB_TOP : 0;
	if (trig && trig->threshold)
		*cookie |= COOKIE_TIMED | (now & COOKIE_TIME_MASK);
	rt->lib_top = 0;
	return 1;
}

#endif /* NEEDLE_RECORDER_DIRECT_BODIES */

#endif
