/* dispatch.c - the C half of the trampolines: from a hit site to its
 * consumers, and from a hijacked return back to the caller.
 *
 * Hot path rules: no lock, no syscall, no allocation, no write to a cache
 * line another thread writes.  Everything per call lands in the calling
 * thread's own state: the RCU word, the recursion guard, the shadow stack
 * (shadow_frame.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/base/altstack.h"
#include "agent/base/control_lock.h"
#include "agent/base/interpose.h"
#include "agent/dispatch/consumer.h"
#include "agent/dispatch/context_switch.h"
#include "agent/rcu/rcu.h"
#include "agent/dispatch/shadow_frame.h"
#include "agent/sites/code_map.h"
#include "agent/sites/module.h"
#include "agent/sites/site_table.h"
#include "agent/thread/thread_state.h"
#include "agent/arch/arch.h"
#include "agent/dispatch/dispatch.h"
#include "agent/dispatch/dispatch_direct.h"

int dispatch_shadow_stack_enabled;

/* Push the header over the entries (bytes of them, n) already written at
 * the top, and hijack the return, unless the function's exit sites are
 * live: then they pop the frame, and the return stays the program's.
 * Relaxed: exits_live is set only after the batch that made every exit
 * site a CALL has completed its core syncs (link.c), so a thread that
 * sees it set runs those CALLs; one that sees it clear hijacks, which is
 * always right. */
static inline void frame_push(struct thread_state *ts, struct site *site, uint32_t n, uint32_t bytes,
			      uint64_t *ret_slot)
{
	struct frame_header *h = (struct frame_header *)(ts->shadow + ts->shadow_top + bytes);
	int at_exit_site = atomic_load_explicit(&site->exits_live, memory_order_relaxed);

	/* Under CET shadow stacks only exit sites can end a call (link.c
	 * attaches exit handlers only to functions that have them); a call
	 * entered before they went live keeps no frame. */
	if (__builtin_expect(!at_exit_site && dispatch_shadow_stack_enabled, 0))
		return;
	h->return_addr = *ret_slot;
	h->site = site;
	h->sp = (uint64_t)(ret_slot + 1);
	h->entry_cnt = n;
	h->frame_bytes = bytes;
	h->at_exit_site = (uint32_t)at_exit_site;
	h->called = 0;
	ts->shadow_top += bytes + sizeof(*h);
	if (__builtin_expect(ts->shadow_top > ts->shadow_high, 0))
		ts->shadow_high = ts->shadow_top;
	if (!at_exit_site)
		*ret_slot = return_trampoline_for(site);
}

/* c's thread data for a handler about to run.  A consumer that keeps
 * per-process state there (the recorder's chunk) must hear of a raw fork
 * before the child uses it; the others do not pay for the check. */
static inline void *handler_thread_data(struct consumer *c, struct thread_state *ts)
{
	if (c->thread_fork && thread_state_forked())
		thread_state_after_fork();
	return consumer_thread_data(c, ts);
}

/* c's handlers.  Acquire pairs with consumer_set_ops' release: entry,
 * exit and the call data size are read from one ops, never one old and
 * one new. */
static inline const struct consumer_ops *consumer_ops_of(struct consumer *c)
{
	return atomic_load_explicit(&c->ops, memory_order_acquire);
}

/* Run c's entry handler (ops, read once by the caller) with its entry
 * (and call data) at e, if there is room for them.  Returns the bytes the
 * entry takes when the exit is wanted and fits, 0 otherwise. */
static inline uint32_t run_entry(struct thread_state *ts, struct consumer *c, const struct consumer_ops *ops,
				 struct needle_ctx *ctx, struct frame_entry *e, size_t room)
{
	uint64_t cookie = 0;
	uint32_t bytes = (uint32_t)sizeof(*e);
	/* Before the handler runs: a detach during it retires the consumer,
	 * and a frame must then carry the live generation it was entered
	 * under (which no longer matches), never the retired one (which
	 * would keep matching until the slot is reused). */
	uint32_t generation = atomic_load_explicit(&c->generation, memory_order_relaxed);

	ctx->thread_data = NULL;
	ctx->call_data = NULL;
	if (__builtin_expect(c->has_extras, 0)) {
		ctx->thread_data = handler_thread_data(c, ts);
		bytes += ops->call_data_size;
		if (ops->call_data_size && ops->exit && room >= bytes && !ctx->exit_flags)
			ctx->call_data = e + 1;
	}
	int ret = 0;
	if (ops->entry)
		ret = ops->entry(ctx, &cookie, c->user_data);
	else if (ops->probe)
		/* NEEDLE_ATTACH_ENTRY_ONLY: the direct entry, with the ctx's
		 * registers (its return is ignored: there is no exit).  The
		 * return address is still in its slot: hijacks come after
		 * every entry ran. */
		ops->direct_entry(ctx->func, &ctx->regs, *(const uint64_t *)(uintptr_t)ctx->sp, NULL, &cookie,
				  c->user_data);

	if (!ops->exit || (ret & NEEDLE_SKIP_EXIT) || ctx->exit_flags)
		return 0;
	if (__builtin_expect(room < bytes, 0)) {
		ts->shadow_overflows++;
		return 0;
	}
	if (__builtin_expect(!(generation & 1), 0))
		return 0; /* retired already: its exit must not run */
	e->slot = (uint16_t)c->slot;
	e->ops = consumer_ops_index(ops);
	e->generation = generation;
	e->cookie = cookie;
	return bytes;
}

/* Bytes free above shadow_top for entries, once a header is counted. */
static inline size_t entry_room(const struct thread_state *ts)
{
	size_t free_bytes = ts->shadow_cap - ts->shadow_top;
	return free_bytes > sizeof(struct frame_header) ? free_bytes - sizeof(struct frame_header) : 0;
}

/* Several consumers: the general path.  Each entry (with its call data)
 * is laid out after the previous one that wants its exit. */
static __attribute__((noinline)) void dispatch_list(struct thread_state *ts, struct site *site,
						    const struct consumer_list *list, struct needle_ctx *ctx,
						    uint64_t *ret_slot)
{
	size_t room = entry_room(ts);
	uint32_t bytes = 0, n = 0;

	for (uint32_t i = 0; i < list->cnt; i++) {
		struct frame_entry *e = (struct frame_entry *)(ts->shadow + ts->shadow_top + bytes);
		uint32_t used = run_entry(ts, list->items[i], consumer_ops_of(list->items[i]), ctx, e, room - bytes);
		bytes += used;
		n += used != 0;
	}
	if (n)
		frame_push(ts, site, n, bytes, ret_slot);
}

/* One consumer: no loop, and a one-entry frame if it wants the exit. */
static inline void dispatch_one(struct thread_state *ts, struct site *site, struct consumer *c,
				const struct consumer_ops *ops, struct needle_ctx *ctx, uint64_t *ret_slot)
{
	struct frame_entry *e = (struct frame_entry *)(ts->shadow + ts->shadow_top);
	uint32_t bytes = run_entry(ts, c, ops, ctx, e, entry_room(ts));

	if (bytes)
		frame_push(ts, site, 1, bytes, ret_slot);
}

/* May this call's return address be replaced with the return trampoline?
 * Not when it points into code outside every ELF object, or into a
 * runtime's own code inside one (code_map.h): HotSpot and V8 read that
 * slot to walk from the frame they called out of.  Such a call's exit is
 * not hooked; its entry handlers see NEEDLE_ENTRY_NO_EXIT.  Calls from
 * the callee's own object, the most common, cost two compares here
 * (its first code span, outside its foreign range); the others a binary
 * search over the loaded objects' spans, about five steps (and the
 * loader's lookup when that misses). */
static inline int return_hookable(const struct site *site, uint64_t ra)
{
	const struct module *m = site->module;

	if (__builtin_expect(m != NULL, 1) && ra >= m->exec[0].lo && ra < m->exec[0].hi &&
	    (ra < m->foreign_lo || ra >= m->foreign_hi))
		return 1;
	return code_map_hookable(ra);
}

/* Stack a thread's first traced call needs below it to take a state
 * (the C library's allocator and the pool's set-up). */
#define STATE_TAKE_STACK (16u << 10)

static __attribute__((noinline)) void dispatch_no_state(struct needle_ctx *ctx, uint64_t *ret_slot)
{
	/* First traced call of this thread: take a state, then go again.
	 * Not on an alternate signal stack too small for it (a handler's on
	 * a stack of MINSIGSTKSZ): that call runs untraced, and the thread
	 * takes its state at a later call, on its own stack, rather than
	 * overflow the program's. */
	/* What this calls (the C library's sigaltstack, and to take a state
	 * its allocator) may be sites: untraced, not back here. */
	needle_agent_busy++;
	uint64_t lo, hi, sp = (uint64_t)(uintptr_t)ret_slot;
	altstack_last(&lo, &hi);
	/* One the interposer did not see: the kernel's, if on it now.  Once
	 * per thread. */
	if (lo == hi)
		altstack_kernel_on(&lo, &hi);
	if (lo != hi && sp >= lo && sp < hi && sp - lo < STATE_TAKE_STACK) {
		needle_agent_busy--;
		return;
	}
	struct thread_state *ts = thread_state_get();
	needle_agent_busy--;
	if (ts)
		needle_dispatch_entry(ctx, ret_slot);
}

/* The top frame lies deeper in memory than this call's stack pointer: a
 * longjmp skipped it, unless this call runs on another stack than the
 * frame, which is what a signal handler on an alternate stack mapped
 * above the interrupted stack looks like.  Asking the kernel costs a
 * system call, paid only on this path (an unwind, or a handler's
 * outermost traced calls). */
static __attribute__((noinline)) int frame_skipped(uint64_t top_sp, uint64_t sp)
{
	uint64_t lo, hi;

	altstack_last(&lo, &hi);
	altstack_kernel_on(&lo, &hi); /* the kernel's, when on it, wins */
	if (lo == hi)
		return 1;
	int here_on_alt = sp >= lo && sp <= hi, top_on_alt = top_sp >= lo && top_sp <= hi;
	return here_on_alt == top_on_alt;
}

void needle_dispatch_entry(struct needle_ctx *ctx, uint64_t *ret_slot)
{
	struct thread_state *ts = needle_thread;
	struct site *site = (struct site *)ctx->func;
	uint64_t sp = (uint64_t)(ret_slot + 1);

	/* The agent's own work calls functions that may be sites (see
	 * control_lock.h): they run untraced. */
	if (__builtin_expect(needle_agent_busy != 0, 0))
		return;
	if (__builtin_expect(!thread_state_valid(ts), 0)) {
		if (!ts)
			dispatch_no_state(ctx, ret_slot);
		return;
	}
	/* Another thread sharing this TLS (raw clone) runs untraced. */
	if (__builtin_expect(!thread_state_owns_stack(ts, sp), 0))
		return;
	if (__builtin_expect(rcu_read_nested(ts), 0)) {
		ts->recursion_skips++; /* a handler called a traced function */
		return;
	}
	rcu_read_lock_outer(ts);
	/* A live caller's frame lies strictly above this call's stack
	 * pointer.  One at or below it belongs to a call that a longjmp
	 * skipped: close it here, where the unwind is first seen.  The
	 * exception: a frame exactly at it whose return is still hijacked
	 * is the caller of a tail call, which returns through both frames. */
	if (__builtin_expect(!ts->shadow_top && ts->context, 0))
		context_check_entry(ts, sp);
	if (ts->shadow_top) {
		uint64_t top = frame_top(ts)->sp;
		if ((top < sp && frame_skipped(top, sp)) ||
		    (top == sp && !is_return_trampoline(*ret_slot)))
			shadow_close_unwound(ts, sp);
	}
	/* Decided before any handler runs, so that a consumer records an
	 * entry whose exit will not come as such.  Exit sites end the call
	 * without touching the return address.  A return into the return
	 * trampoline is a tail call of a hooked call: hookable (libneedle's
	 * code is in the map). */
	const struct consumer_list *list = atomic_load_explicit(&site->consumers, memory_order_acquire);
	if (__builtin_expect(list != NULL, 1)) {
		ts->full_entries++; /* needle_get_stats; the thread's own line */
		/* A lone consumer's ops are read once, so that one with no
		 * exit handler (a counter, the function tracer), which never
		 * hooks the return, skips the lookup of the return address
		 * (a binary search when it misses the callee's object). */
		const struct consumer_ops *ops = list->cnt == 1 ? consumer_ops_of(list->items[0]) : NULL;
		ctx->exit_flags = 0;
		if (__builtin_expect(site->entry_only, 0))
			ctx->exit_flags = NEEDLE_ENTRY_NO_EXIT | NEEDLE_ENTRY_NO_EXIT_FUNC;
		else if ((!ops || ops->exit) && !atomic_load_explicit(&site->exits_live, memory_order_relaxed) &&
			 __builtin_expect(!return_hookable(site, *ret_slot), 0))
			ctx->exit_flags = NEEDLE_ENTRY_NO_EXIT;
		if (__builtin_expect(ops != NULL, 1))
			dispatch_one(ts, site, list->items[0], ops, ctx, ret_slot);
		else
			dispatch_list(ts, site, list, ctx, ret_slot);
	}
	rcu_read_unlock(ts, 0);
}

static void __attribute__((noreturn)) shadow_stack_lost(uint64_t sp)
{
	/* A hijacked return with no frame to go back to: the return address is
	 * gone and no guess is safe. */
	fprintf(stderr, "needle: fatal: a traced function returned at sp=0x%llx without a shadow frame "
		"(did it switch stacks?); aborting\n", (unsigned long long)sp);
	abort();
}

/* Run the exit handlers of h's consumers, if still attached, in the
 * order their entries ran. */
static inline void frame_run_exits(struct thread_state *ts, struct frame_header *h, struct needle_ctx *ctx)
{
	uint8_t *p = (uint8_t *)h - h->frame_bytes;

	ctx->func = &h->site->func;
	for (uint32_t i = 0; i < h->entry_cnt; i++) {
		const struct frame_entry *e = (const struct frame_entry *)p;
		/* The exit handler of the ops the entry ran with, even if the
		 * consumer's handlers were replaced since; the ops also say how
		 * much call data follows the entry. */
		const struct consumer_ops *ops = &consumer_ops_table[e->ops];
		struct consumer *c = &consumer_table[e->slot];
		p += sizeof(*e) + ops->call_data_size;
		if (atomic_load_explicit(&c->generation, memory_order_relaxed) == e->generation && ops->exit) {
			ctx->thread_data = NULL;
			ctx->call_data = ops->call_data_size ? (void *)(e + 1) : NULL;
			if (__builtin_expect(c->has_extras, 0))
				ctx->thread_data = handler_thread_data(c, ts);
			ops->exit(ctx, e->cookie, c->user_data);
		}
	}
}

void shadow_close_unwound(struct thread_state *ts, uint64_t sp)
{
	struct needle_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.is_exit = NEEDLE_EXIT_UNWOUND;
	while (ts->shadow_top && frame_top(ts)->sp <= sp) {
		struct frame_header *h = frame_top(ts);
		frame_run_exits(ts, h, &ctx);
		frame_pop(ts, h);
	}
}

/* The frame of the return being taken at sp, when it is not the top one.
 * The frames above it were skipped: by a longjmp that no traced call has
 * noticed yet (their stack pointers are lower), or by a longjmp out of a
 * signal handler that ran on an alternate stack (higher).  They are
 * closed first.  A return whose frame is nowhere on this stack belongs to
 * a coroutine context put aside (context_recover). */
static __attribute__((noinline)) struct frame_header *frame_for_return_slow(struct thread_state *ts, uint64_t sp)
{
	if (ts->shadow_top && frame_top(ts)->sp != sp && context_recover(ts, sp))
		return frame_top(ts);
	for (struct frame_header *h = ts->shadow_top ? frame_top(ts) : NULL; h; h = frame_below(ts, h)) {
		if (h->sp != sp)
			continue;
		struct needle_ctx ctx;
		memset(&ctx, 0, sizeof(ctx));
		ctx.is_exit = NEEDLE_EXIT_UNWOUND;
		while (frame_top(ts) != h) {
			struct frame_header *top = frame_top(ts);
			frame_run_exits(ts, top, &ctx);
			frame_pop(ts, top);
		}
		return h;
	}
	if (!context_recover(ts, sp))
		shadow_stack_lost(sp);
	return frame_top(ts);
}

static inline struct frame_header *frame_for_return(struct thread_state *ts, uint64_t sp)
{
	if (__builtin_expect(ts->shadow_top && frame_top(ts)->sp == sp, 1))
		return frame_top(ts);
	return frame_for_return_slow(ts, sp);
}

uint64_t needle_dispatch_exit(struct needle_ctx *ctx, uint64_t sp)
{
	struct thread_state *ts = needle_thread;

	if (!thread_state_valid(ts))
		shadow_stack_lost(sp);
	/* Read section (and so recursion guard) first: a signal handler's
	 * traced calls must not push over the frame while it is read. */
	uint64_t rcu_saved = rcu_read_lock(ts);
	struct frame_header *h = frame_for_return(ts, sp);
	frame_run_exits(ts, h, ctx);
	uint64_t return_addr = h->return_addr;
	frame_pop(ts, h);
	rcu_read_unlock(ts, rcu_saved);
	return return_addr;
}

/* An exit site whose frame is not on top.  Frames deeper than sp were
 * skipped by a longjmp (as at an entry, unless this runs on another
 * stack): they are closed.  A frame put aside by a coroutine switch may
 * come back.  NULL when the call has no frame: it was entered before
 * the exit sites went live (and hijacked, so the frame on top at sp is
 * not at_exit_site), or with no consumer wanting its exit. */
static __attribute__((noinline)) struct frame_header *frame_for_exit_site_slow(struct thread_state *ts, uint64_t sp)
{
	if (ts->shadow_top) {
		uint64_t top = frame_top(ts)->sp;
		if (top < sp && frame_skipped(top, sp))
			shadow_close_unwound(ts, sp - 1);
		if (ts->shadow_top && frame_top(ts)->sp == sp)
			return frame_top(ts);
		if (ts->shadow_top && frame_top(ts)->sp < sp)
			return NULL; /* on an alternate signal stack, above this call */
	}
	return context_recover(ts, sp) ? frame_top(ts) : NULL;
}

void needle_dispatch_exit_site(struct needle_ctx *ctx, uint64_t sp)
{
	struct thread_state *ts = needle_thread;
	const struct site *x = (const struct site *)ctx->func;

	/* As at the entry: the agent's own calls, a thread without state or
	 * on a borrowed TLS, and a handler's calls have no frame here. */
	if (__builtin_expect(needle_agent_busy != 0 || !thread_state_valid(ts), 0))
		return;
	if (__builtin_expect(!thread_state_owns_stack(ts, sp) || rcu_read_nested(ts), 0))
		return;
	rcu_read_lock_outer(ts);
	struct frame_header *h = NULL;
	if (__builtin_expect(ts->shadow_top && frame_top(ts)->sp == sp, 1))
		h = frame_top(ts);
	else
		h = frame_for_exit_site_slow(ts, sp);
	/* A hijacked frame at sp (entered before the exit sites went live)
	 * is left to its hijacked return. */
	if (h && h->at_exit_site && h->site == x->owner) {
		frame_run_exits(ts, h, ctx);
		frame_pop(ts, h);
	}
	rcu_read_unlock(ts, 0);
}

uint64_t needle_unwind_pop(uint64_t sp)
{
	struct thread_state *ts = needle_thread;

	if (!thread_state_valid(ts))
		shadow_stack_lost(sp);
	uint64_t saved = rcu_read_lock(ts);
	struct frame_header *h = frame_for_return(ts, sp);
	/* A tail call's frame sits at its caller's sp, with the caller's
	 * hook as its return address: the unwind goes on from the bottom
	 * hooked frame at sp, whose return address is the real one, and
	 * closes them all. */
	for (struct frame_header *b; (b = frame_below(ts, h)) && b->sp == sp && frame_hijacked(b);)
		h = b;
	uint64_t return_addr = h->return_addr;
	shadow_close_unwound(ts, sp);
	rcu_read_unlock(ts, saved);
	return return_addr;
}

/* A thread exits.  Traced calls still open (pthread_cancel unwinds without
 * asking needle, or the thread ended from inside a traced call) end here,
 * then every consumer whose storage the thread used hears of it. */
/* Call thread_exit (or thread_fork) of every live consumer whose storage
 * the thread used.  Inside a read section. */
static void tell_storage_users(struct thread_state *ts, int forked)
{
	for (uint32_t i = 0, n = ts->data_used ? consumer_slots_used() : 0; i < n; i++) {
		struct consumer *c = &consumer_table[i];
		void (*fn)(void *, void *) = forked ? c->thread_fork : c->thread_exit;
		void *data;
		if (fn && consumer_live(c) && (data = consumer_thread_data_if_used(c, ts)))
			fn(data, c->user_data);
	}
}

static void thread_exit(struct thread_state *ts)
{
	uint64_t saved = rcu_read_lock(ts);
	/* The thread ends in its TLS destructors, called by functions that
	 * may be traced (the C library's, relocated: start_thread's callees)
	 * and that will still return.  Their real return addresses go back
	 * on the stack, above this frame, before the state goes. */
	uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	for (struct frame_header *h = ts->shadow_top ? frame_top(ts) : NULL; h; h = frame_below(ts, h)) {
		uint64_t *slot = frame_ret_slot(h);
		if ((uint64_t)(uintptr_t)slot > here && is_return_trampoline(*slot))
			*slot = h->return_addr;
	}
	if (ts->shadow_top)
		shadow_close_unwound(ts, UINT64_MAX);
	tell_storage_users(ts, 0);
	rcu_read_unlock(ts, saved);
}

/* In a forked child: the thread that forked has a copy of its storage. */
static void thread_fork(struct thread_state *ts)
{
	uint64_t saved = rcu_read_lock(ts);
	tell_storage_users(ts, 1);
	rcu_read_unlock(ts, saved);
}

/* CET user shadow stacks (Linux 6.6+, and a C library that enables them)
 * check every return against a copy the program cannot write: a hijacked
 * return would kill the process with SIGSEGV.  Exit handlers are then
 * refused (dispatch_returns_hookable), entry handlers still work.
 * NEEDLE_ASSUME_SHSTK=1 makes needle behave as if they were on, for tests. */
#define ARCH_SHSTK_STATUS 0x5005
#define ARCH_SHSTK_SHSTK (1ull << 0)
int dispatch_returns_hookable(void)
{
	return !dispatch_shadow_stack_enabled;
}

void dispatch_init(void)
{
	stub_area_set_dispatch((uint64_t)(uintptr_t)needle_dispatch_entry,
			       (uint64_t)(uintptr_t)needle_dispatch_exit_site,
			       (uint64_t)(uintptr_t)needle_direct_dispatch_entry,
			       (uint64_t)(uintptr_t)&consumer_direct_users,
			       (uint64_t)(uintptr_t)needle_direct_dispatch_exit_site,
			       (uint64_t)(uintptr_t)needle_probe_calling);
	unsigned long long features = 0;
	const char *assume = getenv("NEEDLE_ASSUME_SHSTK");

	if (!syscall(SYS_arch_prctl, ARCH_SHSTK_STATUS, &features) && (features & ARCH_SHSTK_SHSTK))
		dispatch_shadow_stack_enabled = 1;
	if (assume && *assume == '1')
		dispatch_shadow_stack_enabled = 1;
	static const struct thread_callbacks cb = { .on_exit = thread_exit, .on_fork = thread_fork };
	thread_state_register(&cb);
}
