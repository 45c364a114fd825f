/* recorder_direct.c - the function_graph tracer's direct handlers
 * (needle.h, needle_direct_entry_fn): the common call recorded with no
 * needle_ctx and no vector register saved.  They do what graph_entry and
 * graph_exit do for a call with no site flag (but a duration trigger's,
 * and a library function's in uftrace's library-call view, below), no
 * -R spec, -A values in
 * integer registers only, under the depth limit, timed by the TSC, in a
 * chunk with room for the event, and decline everything else before any
 * store, so that graph_entry and
 * graph_exit (recorder.c) handle it whole.  A duration trigger's call is
 * timed here as graph_entry times it (the clock in the cookie), and one
 * that took too long declines its exit, for graph_exit to fire.  Built with
 * -mgeneral-regs-only (the Makefile's *_direct.c rule), and inline code
 * only: no call leaves this file (the slow paths of event_writer.h,
 * chunk_next and event_lost, are the full handlers').
 *
 * The events, depth, open sites and cookie are graph_entry's and
 * graph_exit's, bit for bit, both ways: a call entered here may end in
 * graph_exit (an unwind, an exit site, a declined exit), and a call
 * graph_entry took ends here when its return is hijacked, unless its
 * cookie says the filters changed the thread's state (graph_exit puts it
 * back). */
#include <stdint.h>

#include "agent/record/args.h"
#include "agent/record/event_writer.h"
#define NEEDLE_RECORDER_DIRECT_BODIES
#include "agent/record/recorder_direct.h"
#include "agent/record/trigger.h"

int rec_graph_direct_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
			   void *thread_data, uint64_t *cookie, void *user_data)
{
	struct rec_thread *rt = thread_data;
	uint32_t id = func->site_id;
	(void)user_data;

	if (!rec_active || !use_tsc || !rt)
		return NEEDLE_DIRECT_DECLINE;
	/* A site flag or a spec stays the site's until a reconfiguration
	 * (which updates the link): the full path, without this try.  A
	 * duration trigger's function is timed here; an entry trigger's
	 * fires in graph_entry.  A library's function in uftrace's
	 * library-call view, and a hidden one, are decided here call by
	 * call. */
	unsigned fl = rec_site_flag(id);
	const struct arg_spec *as = args_for(id);
	int lib_view = (fl & (SF_LIB | SF_HIDE)) && !(fl & ~(SF_LIB | SF_HIDE)) && rec_libcall_program;
	if (((fl & ~SF_TRIGGER) && !lib_view) || (as && !as->entry_direct))
		return NEEDLE_DIRECT_DECLINE_FUNC;
	/* Paused (--signal's trace_off, a finish): neither recorded nor
	 * hooked, here, without the full path; a trigger's function goes
	 * there to be timed. */
	if (atomic_load_explicit(&rec_paused, memory_order_relaxed))
		return fl ? NEEDLE_DIRECT_DECLINE : NEEDLE_SKIP_EXIT;
	if (lib_view) {
		/* graph_record_entry's answer for these flags, without its
		 * search of the objects.  Hidden, or a library's call of its
		 * own function (its return address in a library the full path
		 * found one in): neither recorded nor hooked.  Called from the
		 * program: recorded, as a library call.  Any other caller
		 * (libneedle, code in no object): the full path decides. */
		if ((fl & SF_HIDE) || (ret_addr >= rt->lib_lo && ret_addr < rt->lib_hi))
			return NEEDLE_SKIP_EXIT;
		if (ret_addr < rec_program_lo || ret_addr >= rec_program_hi)
			return NEEDLE_DIRECT_DECLINE;
	}
	/* No chunk yet (a thread whose first event this is): the full path
	 * takes one. */
	if (!rt->chunk)
		return NEEDLE_DIRECT_DECLINE;
	const struct trigger_site *ts = fl && !lib_view ? trigger_folded_site(id) : NULL;
	if (ts && ts->on_entry)
		return NEEDLE_DIRECT_DECLINE;
	if (rt->out_count || rec_have_subtree)
		return NEEDLE_DIRECT_DECLINE;
	if (rt->depth >= (rt->limit ? rt->limit : rec_max_depth))
		return NEEDLE_DIRECT_DECLINE;
	/* -A values: event_write_fixed's block, read from the registers
	 * the trampoline saved. */
	uint32_t words = as ? 2u * as->entry_cnt : 0;
	uint64_t now = tsc_read(), delta = now - rt->base;
	if (rt->pos + 1 + (words ? 1 + words : 0) > rt->end || delta > EV_DELTA_MASK)
		return NEEDLE_DIRECT_DECLINE;
	rec_entry_store(rt, id, as, words, regs, delta);
	if (ts && ts->threshold)
		*cookie |= COOKIE_TIMED | (now & COOKIE_TIME_MASK);
	if (rt->lib_top)
		*cookie |= COOKIE_LIB_TOP;
	rt->lib_top = (uint8_t)lib_view; /* graph_record_entry's (fl & SF_LIB) != 0 */
	return 0;
}

int rec_graph_direct_exit(const struct needle_func *func, uint64_t cookie, void *thread_data, void *user_data)
{
	struct rec_thread *rt = thread_data;
	uint32_t id = func->site_id;
	(void)user_data;

	/* A -F or -N call (graph_entry's), a call only a trigger wanted and
	 * a -R spec are graph_exit's. */
	const struct arg_spec *as = args_for(id);
	if ((cookie & (COOKIE_IN | COOKIE_OUT | COOKIE_SKIPPED)) || !rec_active ||
	    atomic_load_explicit(&rec_paused, memory_order_relaxed) || !use_tsc || !rt || !rt->chunk ||
	    (as && as->exit_cnt))
		return NEEDLE_DIRECT_DECLINE;
	uint64_t now = tsc_read(), delta = now - rt->base;
	if (rt->pos + 1 > rt->end || delta > EV_DELTA_MASK)
		return NEEDLE_DIRECT_DECLINE;
	/* A trigger's call that took too long: graph_exit fires it. */
	if (cookie & COOKIE_TIMED) {
		const struct trigger_site *ts = trigger_folded_site(id);
		if (ts && ts->threshold && ((now - cookie) & COOKIE_TIME_MASK) > ts->threshold)
			return NEEDLE_DIRECT_DECLINE;
	}
	*rt->pos++ = ev_make(EV_EXIT, id, delta);
	events_publish(rt);
	rt->lib_top = (cookie & COOKIE_LIB_TOP) != 0;
	if (rt->depth)
		rt->depth--;
	return 0;
}
