/* graph_direct.c - needle record's calls on the calling trampolines'
 * direct path, in C: the kernel gives an ftrace_ops alone on a function a
 * trampoline of its own, and needle's recorder, alone on a site, has one
 * in assembly (graph_trampoline.S).  This file is the C side of it:
 *   - the calling trampoline's call into C (needle_graph_calling_c): the
 *     recorder's plain call is taken here the first time, with the same
 *     tests and stores as the assembly, and the site handed to the
 *     assembly path (its direct_graph byte); anything else goes on to the
 *     direct path (dispatch_direct.c), as before;
 *   - the layout the assembly relies on, asserted (graph_layout.h);
 *   - NEEDLE_GRAPH_ASM=0, which keeps every site in C.
 *
 * Invariants:
 *   - Built with -mgeneral-regs-only (the Makefile's *_direct.c rule):
 *     the calling trampoline saved only the general-purpose registers.
 *   - It lives in the top layer because it is the one layer that may see
 *     both the dispatch layer's frames and the recorder's storage.
 *   - The frames it pushes are the direct path's (direct_path.h), closed
 *     by any exit path. */
#include <stddef.h>
#include <stdint.h>

#include "agent/dispatch/direct_path.h"
#include "agent/dispatch/dispatch_direct.h"
#include "agent/graph_direct.h"
#include "agent/graph_layout.h"
#include "agent/sites/module.h"
#include "agent/sites/site_table.h"
#define NEEDLE_RECORDER_DIRECT_BODIES
#include "agent/record/recorder_direct.h"
#include "agent/record/trigger.h"

/* graph_layout.h, against what it copies (direct_layout.h's are
 * asserted in dispatch_direct.c). */
#define LAYOUT(cond) _Static_assert(cond, "graph_layout.h: " #cond)
LAYOUT(offsetof(struct rec_thread, chunk) == G_RT_CHUNK && offsetof(struct rec_thread, pos) == G_RT_POS);
LAYOUT(offsetof(struct rec_thread, end) == G_RT_END && offsetof(struct rec_thread, base) == G_RT_BASE);
LAYOUT(offsetof(struct rec_thread, depth) == G_RT_DEPTH);
LAYOUT(offsetof(struct rec_thread, out_count) == G_RT_OUT_COUNT);
LAYOUT(offsetof(struct rec_thread, limit) == G_RT_LIMIT);
LAYOUT(offsetof(struct rec_thread, lib_top) == G_RT_LIB_TOP);
LAYOUT(offsetof(struct rec_thread, open_site) == G_RT_OPEN_SITE && REC_OPEN_SITES == G_REC_OPEN_SITES);
LAYOUT(offsetof(struct shm_chunk, used) == G_CHUNK_USED && sizeof(struct shm_chunk) == G_CHUNK_EVENTS);
LAYOUT(EV_SITE_SHIFT == G_EV_SITE_SHIFT && EV_SITE_MASK == G_EV_SITE_MASK);
LAYOUT(EV_DELTA_MASK == (1ull << G_EV_DELTA_BITS) - 1 && EV_SITE_SHIFT == G_EV_DELTA_BITS);
LAYOUT(EV_ENTRY == 0 && EV_TYPE_SHIFT == G_EV_EXIT_BIT && EV_EXIT == 1);
LAYOUT(COOKIE_LIB_TOP == 1ull << G_COOKIE_LIB_TOP_BIT);
LAYOUT((COOKIE_IN | COOKIE_OUT | COOKIE_SKIPPED) == G_COOKIE_NOT_PLAIN);
LAYOUT(COOKIE_TIMED == 1ull << G_COOKIE_TIMED_BIT && COOKIE_TIME_MASK == (1ull << G_COOKIE_TIME_BITS) - 1);
LAYOUT(SF_TRIGGER == G_SF_TRIGGER);
LAYOUT(offsetof(struct trigger_table, cnt) == G_TT_CNT && offsetof(struct trigger_table, site) == G_TT_SITE);
LAYOUT(sizeof(struct trigger_site) == 1u << G_TS_SHIFT && offsetof(struct trigger_site, id) == G_TS_ID);
LAYOUT(offsetof(struct trigger_site, on_entry) == G_TS_ON_ENTRY);
LAYOUT(offsetof(struct trigger_site, threshold) == G_TS_THRESHOLD);
LAYOUT(SITE_FLAG_IDS == G_SITE_FLAG_IDS);
LAYOUT(offsetof(struct args_table, specs) == 0 && offsetof(struct args_table, cnt) == 8);
LAYOUT(offsetof(struct arg_spec, entry_cnt) == G_AS_ENTRY_CNT && offsetof(struct arg_spec, exit_cnt) == G_AS_EXIT_CNT);
LAYOUT(offsetof(struct arg_spec, entry_direct) == G_AS_ENTRY_DIRECT && offsetof(struct arg_spec, entry) == G_AS_ENTRY);
LAYOUT(sizeof(struct arg_item) == G_AI_SIZE && offsetof(struct arg_item, shift) == G_AI_SHIFT);
LAYOUT(offsetof(struct arg_item, reg) == G_AI_REG && sizeof(((struct arg_item *)0)->reg) == 2);
LAYOUT(offsetof(struct arg_item, mask) == G_AI_MASK && offsetof(struct arg_item, word) == G_AI_WORD);
LAYOUT(((uint64_t)EV_SWITCH << EV_TYPE_SHIFT | (uint64_t)(EV_DATA_SITE & EV_SITE_MASK) << EV_SITE_SHIFT) == G_EV_DATA_SITE_SWITCH);
LAYOUT(offsetof(struct needle_regs, rdi) == 0 && offsetof(struct needle_regs, rsi) == 8);
LAYOUT(offsetof(struct needle_regs, rdx) == 16 && offsetof(struct needle_regs, rcx) == 24);
LAYOUT(offsetof(struct needle_regs, r8) == 32 && offsetof(struct needle_regs, r9) == 40);
LAYOUT(offsetof(struct needle_regs, rax) == 48 && offsetof(struct needle_regs, r10) == 56);

/* NEEDLE_GRAPH_ASM=0 (the benchmarks' ablation, and the tests'
 * reference): no site is handed to the assembly path, so every call the
 * direct path takes is taken in C.  Set by agent.c at start-up, before
 * any site is patched. */
int graph_asm_enabled = 1;
/* Some site was handed to the assembly path: the calling trampolines'
 * returns try it (trampoline.S reads the byte).  Set once, never cleared:
 * a return it declines costs the try, never a wrong exit. */
uint8_t needle_graph_live;

#ifndef NEEDLE_RCU_ABLATION_RWLOCK
/* The recorder's call from the calling trampoline, lean: the site's only
 * consumer is the recorder, its return goes back into the program's own
 * object (no library call, no exit site), and the call is plain
 * (rec_graph_plain_entry).  The direct path's tests that such a call
 * cannot fail, and the general handler's branches, are not made.  2 with
 * the frame pushed; 0 for the direct path, which decides the call whole.
 * The assembly path (graph_trampoline.S) makes the same tests and
 * stores. */
static inline __attribute__((always_inline)) int graph_calling_entry(struct site *site, uint64_t *ret_slot,
								     const struct needle_regs *regs)
{
	uint64_t sp = (uint64_t)(uintptr_t)(ret_slot + 1);
	uint32_t id = site->func.site_id;
	/* A flag (the library-call view's, a filter's, but a trigger's) is
	 * the general handler's for as long as the site's link stays as it
	 * is, and so are exit sites (their frames are the C path's) and CET
	 * shadow stacks (no hooked return, dispatch.c): the site stays in C,
	 * without this try (link.c clears the byte).  The assembly path takes
	 * only sites this function handed it, so these tests cover it too.
	 * A site whose exit sites are turned off later stays in C until its
	 * list changes: slower, never wrong. */
	if ((rec_site_flag(id) & ~SF_TRIGGER) || atomic_load_explicit(&site->exits_live, memory_order_relaxed) ||
	    dispatch_shadow_stack_enabled) {
		atomic_store_explicit(&site->direct_graph, SITE_GRAPH_C, memory_order_relaxed);
		return 0;
	}
	struct thread_state *ts = direct_thread(sp);

	if (!ts)
		return 0;
	uint64_t ra = *ret_slot;
	/* A tail call returns through its caller's hooked return, not into
	 * the function's object. */
	int order = direct_call_order(ts, sp, ra);
	if (order < 0)
		return 0;
	if (ts->shadow_cap - ts->shadow_top < sizeof(struct frame_entry) + sizeof(struct frame_header))
		return 0;
	const struct module *m = site->module;
	if (!m || (!order && (ra < m->exec[0].lo || ra >= m->exec[0].hi || (ra >= m->foreign_lo && ra < m->foreign_hi))))
		return 0;

	rcu_read_lock_outer(ts);
	const struct consumer_ops *ops;
	uint32_t generation;
	struct consumer *c = direct_sole_consumer(site, &ops, &generation);
	if (!c || ops->direct_entry != rec_graph_direct_entry || !(generation & 1))
		goto decline;
	/* So is a spec with values the assembly does not read (strings,
	 * stack words, floating point, a filter). */
	const struct arg_spec *as = args_for(id);
	if (as && !as->entry_direct) {
		atomic_store_explicit(&site->direct_graph, SITE_GRAPH_C, memory_order_relaxed);
		goto decline;
	}
	struct rec_thread *rt = consumer_thread_data_if_used(c, ts);
	uint64_t cookie;
	if (!rt || !rec_graph_plain_entry(rt, id, regs, &cookie))
		goto decline;
	direct_frame_push(ts, c, ops, generation, cookie, ra, site, sp, 0, 1);
	rcu_read_unlock(ts, 0);
	/* The site's next calls try the assembly path first (a hint: it
	 * tests everything again).  Only reached with graph_asm_enabled
	 * (needle_graph_calling_c's test). */
	if (!atomic_load_explicit(&site->direct_graph, memory_order_relaxed)) {
		needle_graph_live = 1;
		atomic_store_explicit(&site->direct_graph, SITE_GRAPH_ASM, memory_order_relaxed);
	}
	return 2;
decline:
	rcu_read_unlock(ts, 0);
	return 0;
}
#endif

int needle_graph_calling_c(struct site *site, uint64_t *ret_slot, const struct needle_regs *regs)
{
#ifndef NEEDLE_RCU_ABLATION_RWLOCK
	/* A site neither handed to the assembly path nor kept in C yet,
	 * while needle record records (an API consumer's calls never stop
	 * here).  Not while the recording is paused (--disable, a trace_off
	 * trigger): every such try would decline in rec_graph_plain_entry
	 * after the read section, and the direct path then decide the call
	 * again; the site is handed over at its first call once resumed. */
	if (__builtin_expect(!atomic_load_explicit(&site->direct_graph, memory_order_relaxed), 0) && graph_asm_enabled &&
	    rec_active && !atomic_load_explicit(&rec_paused, memory_order_relaxed)) {
		int ret = graph_calling_entry(site, ret_slot, regs);
		/* Counted for needle_get_stats: the calls not taken in
		 * assembly (needle_direct_dispatch_entry counts its own). */
		if (ret) {
			needle_thread->direct_c_entries++;
			return ret;
		}
	}
#endif
	/* A tail call: this function costs the decided sites one test. */
	return needle_direct_dispatch_entry(site, ret_slot, regs, 1);
}
