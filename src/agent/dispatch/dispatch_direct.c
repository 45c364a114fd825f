/* dispatch_direct.c - the direct path: a call of a function whose only
 * consumer has direct handlers (needle_attach_opts.direct_entry and
 * direct_exit) goes from the trampoline to them with no needle_ctx, no
 * vector register saved and no walk of the consumer list; the kernel's
 * answer for an ftrace_ops alone on a function.
 *
 * Invariants:
 *   - Built with -mgeneral-regs-only (the Makefile's *_direct.c rule):
 *     the trampolines save only the general-purpose registers before
 *     calling here, so nothing here touches an SSE or x87 register, and
 *     nothing here calls out of this file but the direct handlers, whose
 *     contract (needle.h) is the same.  No allocation, lock or system call.
 *   - Every test that fails declines (returns 0) before any effect; the
 *     trampoline then runs the full path (dispatch.c), which decides
 *     again and handles what this one will not: a thread's first traced
 *     call, a raw fork's child, a longjmp or coroutine switch just seen,
 *     a return address the code map does not hold, call data, a shared
 *     site.
 *   - The frames pushed here are dispatch.c's frames (shadow_frame.h),
 *     with the link's slot, ops and generation, so that every slow path
 *     (an unwind, an exit site, a detach, thread exit) closes them with
 *     the ordinary exit handler, as it would a frame of the full path.
 *   - The read section is taken before the consumer list, the consumer
 *     and its generation are read, as on the full path: a detach retires
 *     the consumer (generation), then waits a grace period, so a handler
 *     that runs saw it live and finishes before the link's data goes.
 *
 * NEEDLE_RCU_ABLATION_RWLOCK (a benchmark build whose read side takes a
 * pthread lock) has no direct path: it declines every call. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/base/control_lock.h"
#include "agent/dispatch/consumer.h"
#include "agent/dispatch/direct_layout.h"
#include "agent/dispatch/direct_path.h"
#include "agent/dispatch/dispatch_direct.h"
#include "agent/dispatch/shadow_frame.h"
#include "agent/rcu/rcu.h"
#include "agent/sites/code_map.h"
#include "agent/sites/module.h"
#include "agent/sites/site_table.h"
#include "agent/thread/thread_state.h"

/* NEEDLE_GRAPH_ASM=0 (the benchmarks' ablation, the tests' reference):
 * no site is handed to the probe path's assembly, nor to its shortcut
 * here.  Set by agent.c at start-up, before any site is patched. */
int dispatch_probe_asm_enabled = 1;

/* direct_layout.h, against what it copies. */
#define LAYOUT(cond) _Static_assert(cond, "direct_layout.h: " #cond)
LAYOUT(offsetof(struct thread_state, rcu_word) == G_TS_RCU_WORD);
LAYOUT(offsetof(struct thread_state, rcu_sp) == G_TS_RCU_SP);
LAYOUT(offsetof(struct thread_state, shadow) == G_TS_SHADOW);
LAYOUT(offsetof(struct thread_state, shadow_top) == G_TS_SHADOW_TOP);
LAYOUT(offsetof(struct thread_state, shadow_cap) == G_TS_SHADOW_CAP);
LAYOUT(offsetof(struct thread_state, context) == G_TS_CONTEXT);
LAYOUT(offsetof(struct thread_state, stack_window) == G_TS_STACK_WINDOW);
LAYOUT(offsetof(struct thread_state, shadow_high) == G_TS_SHADOW_HIGH);
LAYOUT(offsetof(struct thread_state, data) == G_TS_DATA);
LAYOUT(offsetof(struct thread_state, data_used) == G_TS_DATA_USED);
LAYOUT(THREAD_STATE_SENTINEL_MAX == G_THREAD_STATE_SENTINEL_MAX);
LAYOUT(STACK_BLOCK_SHIFT == G_STACK_BLOCK_SHIFT && STACK_WINDOW_BLOCKS == G_STACK_WINDOW_BLOCKS);
LAYOUT(RCU_NEST_BITS == G_RCU_NEST_BITS && RCU_NEST_MASK == 0xffff);
LAYOUT(offsetof(struct site, func.site_id) == G_SITE_ID && sizeof(((struct site *)0)->func.site_id) == 4);
LAYOUT(offsetof(struct site, direct_skip) == G_SITE_DIRECT_SKIP);
LAYOUT(offsetof(struct site, direct_graph) == G_SITE_DIRECT_GRAPH);
LAYOUT(offsetof(struct site, module) == G_SITE_MODULE);
LAYOUT(offsetof(struct site, consumers) == G_SITE_CONSUMERS);
LAYOUT(offsetof(struct site, exits_live) == G_SITE_EXITS_LIVE);
LAYOUT(offsetof(struct module, exec[0].lo) == G_MOD_EXEC_LO && offsetof(struct module, exec[0].hi) == G_MOD_EXEC_HI);
LAYOUT(offsetof(struct module, foreign_lo) == G_MOD_FOREIGN_LO);
LAYOUT(offsetof(struct module, foreign_hi) == G_MOD_FOREIGN_HI);
LAYOUT(offsetof(struct consumer_list, cnt) == G_LIST_CNT && offsetof(struct consumer_list, items) == G_LIST_ITEMS);
LAYOUT(offsetof(struct consumer_list, probe) == G_LIST_PROBE);
LAYOUT(offsetof(struct consumer_list, probe_user_data) == G_LIST_PROBE_USER_DATA);
LAYOUT(offsetof(struct consumer, ops) == G_C_OPS && offsetof(struct consumer, generation) == G_C_GENERATION);
LAYOUT(offsetof(struct consumer, slot) == G_C_SLOT && CONSUMER_MAX <= 65536);
LAYOUT(offsetof(struct consumer, tdata_off) == G_C_TDATA_OFF);
LAYOUT(offsetof(struct consumer, tdata_idx) == G_C_TDATA_IDX);
LAYOUT(offsetof(struct consumer, tdata_tag) == G_C_TDATA_TAG);
LAYOUT(sizeof(struct consumer) == G_C_SIZE);
LAYOUT(offsetof(struct consumer_ops, index) == G_OPS_INDEX);
LAYOUT(offsetof(struct consumer_ops, direct_entry) == G_OPS_DIRECT_ENTRY);
LAYOUT(offsetof(struct consumer_ops, direct_exit) == G_OPS_DIRECT_EXIT);
LAYOUT(offsetof(struct consumer_ops, probe) == G_OPS_PROBE && sizeof(((struct consumer_ops *)0)->probe) == 1);
LAYOUT(sizeof(struct consumer_ops) == G_OPS_SIZE);
LAYOUT(offsetof(struct consumer, user_data) == G_C_USER_DATA);
LAYOUT(offsetof(struct site, func) == 0);
LAYOUT(sizeof(struct frame_entry) + sizeof(struct frame_header) == G_FRAME_BYTES);
LAYOUT(sizeof(struct frame_header) == G_FH_HEADER && sizeof(struct frame_entry) == 16);
LAYOUT(offsetof(struct frame_entry, slot) == 0 && offsetof(struct frame_entry, ops) == 2);
LAYOUT(offsetof(struct frame_entry, generation) == 4 && offsetof(struct frame_entry, cookie) == 8);
LAYOUT(offsetof(struct frame_header, return_addr) == G_FH_RETURN_ADDR);
LAYOUT(offsetof(struct frame_header, site) == G_FH_SITE && offsetof(struct frame_header, sp) == G_FH_SP);
LAYOUT(offsetof(struct frame_header, entry_cnt) == G_FH_COUNTS);

int needle_direct_dispatch_entry(struct site *site, uint64_t *ret_slot, const struct needle_regs *regs, int calling)
{
#ifdef NEEDLE_RCU_ABLATION_RWLOCK
	(void)site;
	(void)ret_slot;
	(void)regs;
	(void)calling;
	return 0;
#else
	uint64_t sp = (uint64_t)(uintptr_t)(ret_slot + 1);
	struct thread_state *ts = direct_thread(sp);

	if (!ts)
		return 0;
	/* The site's consumer first: an entry-only one (NEEDLE_ATTACH_ENTRY_ONLY)
	 * needs none of the tests below, which are about its frame. */
	rcu_read_lock_outer(ts);
	const struct consumer_ops *ops;
	uint32_t generation;
	struct consumer *c = direct_sole_consumer(site, &ops, &generation);
	if (!c)
		goto skip_site;
	if (ops->probe) {
		if (!(generation & 1))
			goto decline;
		uint64_t probe_cookie = 0;
		ops->direct_entry(&site->func, regs, *ret_slot, NULL, &probe_cookie, c->user_data);
		/* The site's next calls go straight to the probe path's
		 * assembly (probe_trampoline.S), which tests everything again:
		 * a hint. */
		if (dispatch_probe_asm_enabled && !atomic_load_explicit(&site->direct_graph, memory_order_relaxed))
			atomic_store_explicit(&site->direct_graph, SITE_PROBE_ASM, memory_order_relaxed);
		rcu_read_unlock(ts, 0);
		/* Counted for needle_get_stats, as the direct path's other calls. */
		ts->direct_c_entries++;
		return 1;
	}
	if (!ops->direct_entry || ops->call_data_size)
		goto skip_site;
	int at_exit_site = atomic_load_explicit(&site->exits_live, memory_order_relaxed);
	uint64_t ra = *ret_slot;
	/* A tail call is taken (its return address, a hooked return, is in
	 * the code map: libneedle's), but not at exit sites, whose frames
	 * the full path keeps.  The usual call's test first, alone: the
	 * order's computation on every call cost 2 ns here. */
	int order = 0;
	if (__builtin_expect(ts->shadow_top ? frame_top(ts)->sp <= sp : ts->context != NULL, 0)) {
		order = direct_call_order(ts, sp, ra);
		if (order < 0 || at_exit_site)
			goto decline;
	}
	const struct module *m = site->module;
	if (!at_exit_site && dispatch_shadow_stack_enabled)
		goto decline;
	if (ts->shadow_cap - ts->shadow_top < sizeof(struct frame_entry) + sizeof(struct frame_header))
		goto decline;
	/* The return is hooked only where the full path's return_hookable
	 * says it may be: a return into the callee's own object, outside a
	 * runtime's code (two compares), or into another object's code the
	 * code map holds (a library call: its binary search, under the read
	 * section that keeps the map).  An address the map does not hold
	 * (a JIT's code, an object loaded since the map was built) is the
	 * full path's, which asks the loader too.  A tail call's is a hook,
	 * libneedle's: hookable, no search. */
	if (!at_exit_site && !order &&
	    !(m && ra >= m->exec[0].lo && ra < m->exec[0].hi && (ra < m->foreign_lo || ra >= m->foreign_hi)) &&
	    !code_map_holds(ra))
		goto decline;
	void *td;
	if (!(generation & 1) || !direct_thread_data(c, ts, &td))
		goto decline;
	uint64_t cookie = 0;
	int ret = ops->direct_entry(&site->func, regs, ra, td, &cookie, c->user_data);
	if (ret == NEEDLE_DIRECT_DECLINE_FUNC)
		goto skip_site;
	if (ret == NEEDLE_DIRECT_DECLINE)
		goto decline;
	if (!(ret & NEEDLE_SKIP_EXIT) && ops->exit) {
		direct_frame_push(ts, c, ops, generation, cookie, ra, site, sp, at_exit_site, calling);
		if (!at_exit_site) {
			rcu_read_unlock(ts, 0);
			/* The calling trampoline puts needle_calling_return in
			 * the slot itself, with the call that hooks it.  The
			 * call is counted (needle_get_stats): needle record's
			 * are taken in its assembly path but a site's first. */
			if (calling) {
				ts->direct_c_entries++;
				return 2;
			}
			*ret_slot = return_trampoline_for(site);
			return 1;
		}
	}
	rcu_read_unlock(ts, 0);
	return 1;
skip_site:
	/* A reason that holds until the site's list or its consumer's
	 * handlers change, when link.c clears the byte: the trampoline stops
	 * trying.  Relaxed: a store that loses a race with link.c's clear
	 * leaves the site on the full path until the next change, which
	 * costs time, never a call (the full path decides every call). */
	atomic_store_explicit(&site->direct_skip, 1, memory_order_relaxed);
decline:
	rcu_read_unlock(ts, 0);
	return 0;
#endif
}

#ifndef NEEDLE_RCU_ABLATION_RWLOCK
/* Run the direct exit of h, the top frame of ts, and pop it: 1, or 0
 * with nothing done when h is not a one-entry frame of a live consumer
 * with a direct exit, or the handler declined. */
static inline __attribute__((always_inline)) int direct_exit_frame(struct thread_state *ts, struct frame_header *h)
{
	/* A function whose entries the direct path declined for good (its
	 * consumer's handler said so, or the site is shared) has its exits
	 * declined as well, without the call. */
	if (h->entry_cnt != 1 || h->frame_bytes != sizeof(struct frame_entry) ||
	    atomic_load_explicit(&h->site->direct_skip, memory_order_relaxed))
		return 0;
	const struct frame_entry *e = (const struct frame_entry *)h - 1;
	const struct consumer_ops *ops = &consumer_ops_table[e->ops];
	struct consumer *c = &consumer_table[e->slot];
	void *td;

	if (!ops->direct_exit)
		return 0;
	rcu_read_lock_outer(ts);
	/* Retired since the entry: the full path skips its exit. */
	if (atomic_load_explicit(&c->generation, memory_order_relaxed) != e->generation ||
	    !direct_thread_data(c, ts, &td) ||
	    ops->direct_exit(&h->site->func, e->cookie, td, c->user_data) == NEEDLE_DIRECT_DECLINE) {
		rcu_read_unlock(ts, 0);
		return 0;
	}
	frame_pop(ts, h);
	rcu_read_unlock(ts, 0);
	return 1;
}
#endif

uint64_t needle_direct_dispatch_exit(uint64_t sp)
{
#ifdef NEEDLE_RCU_ABLATION_RWLOCK
	(void)sp;
	return 0;
#else
	struct thread_state *ts = needle_thread;

	/* A hijacked return runs its exit even inside the agent (the full
	 * path does too): only a handler's own calls have no frame here. */
	if (__builtin_expect(!thread_state_valid(ts) || thread_state_forked() || rcu_read_nested(ts), 0))
		return 0;
	if (!ts->shadow_top)
		return 0;
	struct frame_header *h = frame_top(ts);
	if (h->sp != sp || h->at_exit_site)
		return 0;
	uint64_t return_addr = h->return_addr;
	return direct_exit_frame(ts, h) ? return_addr : 0;
#endif
}

int needle_direct_dispatch_exit_site(const struct site *x, uint64_t sp)
{
#ifdef NEEDLE_RCU_ABLATION_RWLOCK
	(void)x;
	(void)sp;
	return 0;
#else
	/* The full path's tests (dispatch.c, needle_dispatch_exit_site), for
	 * the frame on top only. */
	struct thread_state *ts = direct_thread(sp);

	if (!ts || !ts->shadow_top)
		return 0;
	struct frame_header *h = frame_top(ts);
	if (h->sp != sp || !h->at_exit_site || h->site != x->owner)
		return 0;
	return direct_exit_frame(ts, h);
#endif
}
