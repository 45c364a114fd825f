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

#include "agent/dispatch/consumer.h"
#include "agent/dispatch/context_switch.h"
#include "agent/rcu/rcu.h"
#include "agent/dispatch/shadow_frame.h"
#include "agent/sites/site_table.h"
#include "agent/thread/thread_state.h"
#include "agent/arch/x86_64/stub_area.h"
#include "agent/arch/x86_64/trampoline.h"
#include "agent/dispatch/dispatch.h"

static inline void run_entry(struct consumer *c, const struct needle_ctx *ctx,
			     struct frame_entry *e, uint32_t *n, uint32_t room, struct thread_state *ts)
{
	uint64_t cookie = 0;
	const struct consumer_ops *ops = atomic_load_explicit(&c->ops, memory_order_acquire);
	int ret = ops->entry ? ops->entry(ctx, &cookie, c->user_data) : 0;

	if (!ops->exit || (ret & NEEDLE_SKIP_EXIT))
		return;
	if (*n >= room) {
		ts->shadow_overflows++;
		return;
	}
	e[*n].slot = (uint16_t)c->slot;
	e[*n].ops = consumer_ops_index(ops);
	e[*n].generation = atomic_load_explicit(&c->generation, memory_order_relaxed);
	e[*n].cookie = cookie;
	(*n)++;
}

/* Room on the shadow stack for a frame of n entries. */
static inline int frame_fits(const struct thread_state *ts, uint32_t n)
{
	return ts->shadow_cap - ts->shadow_top >= sizeof(struct frame_header) + n * sizeof(struct frame_entry);
}

/* Push the header over entries already written at the top, and hijack. */
static inline void frame_push(struct thread_state *ts, struct site *site, uint32_t n, uint64_t *ret_slot)
{
	struct frame_entry *e = (struct frame_entry *)(ts->shadow + ts->shadow_top);
	struct frame_header *h = (struct frame_header *)(e + n);

	h->return_addr = *ret_slot;
	h->site = site;
	h->sp = (uint64_t)(ret_slot + 1);
	h->entry_cnt = n;
	ts->shadow_top += n * sizeof(*e) + sizeof(*h);
	if (__builtin_expect(ts->shadow_top > ts->shadow_high, 0))
		ts->shadow_high = ts->shadow_top;
	*ret_slot = (uint64_t)needle_return_trampoline;
}

/* Several consumers: the general path. */
static __attribute__((noinline)) void dispatch_list(struct thread_state *ts, struct site *site,
						    const struct consumer_list *list,
						    const struct needle_ctx *ctx, uint64_t *ret_slot)
{
	size_t free_bytes = ts->shadow_cap - ts->shadow_top;
	uint32_t room = free_bytes > sizeof(struct frame_header)
				? (uint32_t)((free_bytes - sizeof(struct frame_header)) / sizeof(struct frame_entry))
				: 0;
	struct frame_entry *e = (struct frame_entry *)(ts->shadow + ts->shadow_top);
	uint32_t n = 0;

	for (uint32_t i = 0; i < list->cnt; i++)
		run_entry(list->items[i], ctx, e, &n, room, ts);
	if (n)
		frame_push(ts, site, n, ret_slot);
}

/* One consumer: no loop, and a one-entry frame if it wants the exit. */
static inline void dispatch_one(struct thread_state *ts, struct site *site, struct consumer *c,
				const struct needle_ctx *ctx, uint64_t *ret_slot)
{
	uint64_t cookie = 0;
	/* Acquire pairs with consumer_set_ops' release: entry and exit are
	 * read from one ops, never one old and one new. */
	const struct consumer_ops *ops = atomic_load_explicit(&c->ops, memory_order_acquire);
	int ret = ops->entry ? ops->entry(ctx, &cookie, c->user_data) : 0;

	if (!ops->exit || (ret & NEEDLE_SKIP_EXIT))
		return;
	if (__builtin_expect(!frame_fits(ts, 1), 0)) {
		ts->shadow_overflows++;
		return;
	}
	struct frame_entry *e = (struct frame_entry *)(ts->shadow + ts->shadow_top);
	e->slot = (uint16_t)c->slot;
	e->ops = consumer_ops_index(ops);
	e->generation = atomic_load_explicit(&c->generation, memory_order_relaxed);
	e->cookie = cookie;
	frame_push(ts, site, 1, ret_slot);
}

static __attribute__((noinline)) void dispatch_no_state(struct needle_ctx *ctx, uint64_t *ret_slot)
{
	/* First traced call of this thread: take a state, then go again. */
	if (thread_state_get())
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
	stack_t ss;

	if (sigaltstack(NULL, &ss) || !(ss.ss_flags & SS_ONSTACK))
		return 1;
	uint64_t lo = (uint64_t)(uintptr_t)ss.ss_sp, hi = lo + ss.ss_size;
	int here_on_alt = sp >= lo && sp <= hi, top_on_alt = top_sp >= lo && top_sp <= hi;
	return here_on_alt == top_on_alt;
}

void needle_dispatch_entry(struct needle_ctx *ctx, uint64_t *ret_slot)
{
	struct thread_state *ts = needle_thread;
	struct site *site = (struct site *)ctx->func;
	uint64_t sp = (uint64_t)(ret_slot + 1);

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
		    (top == sp && *ret_slot != (uint64_t)needle_return_trampoline))
			shadow_close_unwound(ts, sp);
	}
	const struct consumer_list *list = atomic_load_explicit(&site->consumers, memory_order_acquire);
	if (__builtin_expect(list != NULL, 1)) {
		if (__builtin_expect(list->cnt == 1, 1))
			dispatch_one(ts, site, list->items[0], ctx, ret_slot);
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

/* Run the exit handlers of h's consumers, if still attached. */
static inline void frame_run_exits(struct frame_header *h, struct needle_ctx *ctx)
{
	const struct frame_entry *e = (const struct frame_entry *)h - h->entry_cnt;

	ctx->func = &h->site->func;
	for (uint32_t i = 0; i < h->entry_cnt; i++) {
		struct consumer *c = &consumer_table[e[i].slot];
		/* The exit handler of the ops the entry ran with, even if the
		 * consumer's handlers were replaced since. */
		needle_exit_fn exit = consumer_ops_table[e[i].ops].exit;
		if (atomic_load_explicit(&c->generation, memory_order_relaxed) == e[i].generation && exit)
			exit(ctx, e[i].cookie, c->user_data);
	}
}

void shadow_close_unwound(struct thread_state *ts, uint64_t sp)
{
	struct needle_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.is_exit = NEEDLE_EXIT_UNWOUND;
	while (ts->shadow_top && frame_top(ts)->sp <= sp) {
		struct frame_header *h = frame_top(ts);
		frame_run_exits(h, &ctx);
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
			frame_run_exits(top, &ctx);
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
	frame_run_exits(h, ctx);
	uint64_t return_addr = h->return_addr;
	frame_pop(ts, h);
	rcu_read_unlock(ts, rcu_saved);
	return return_addr;
}

uint64_t needle_unwind_pop(uint64_t sp)
{
	struct thread_state *ts = needle_thread;

	if (!thread_state_valid(ts))
		shadow_stack_lost(sp);
	uint64_t saved = rcu_read_lock(ts);
	struct frame_header *h = frame_for_return(ts, sp);
	uint64_t return_addr = h->return_addr;
	shadow_close_unwound(ts, sp);
	rcu_read_unlock(ts, saved);
	return return_addr;
}

/* A thread exits with traced calls open (pthread_cancel unwinds without
 * asking needle, or the thread ended from inside a traced call): they end
 * here. */
static void close_frames_at_exit(struct thread_state *ts)
{
	uint64_t saved = rcu_read_lock(ts);
	shadow_close_unwound(ts, UINT64_MAX);
	rcu_read_unlock(ts, saved);
}

/* CET user shadow stacks (Linux 6.6+, and a C library that enables them)
 * check every return against a copy the program cannot write: a hijacked
 * return would kill the process with SIGSEGV.  Exit handlers are then
 * refused (dispatch_returns_hookable), entry handlers still work.
 * NEEDLE_ASSUME_SHSTK=1 makes needle behave as if they were on, for tests. */
#define ARCH_SHSTK_STATUS 0x5005
#define ARCH_SHSTK_SHSTK (1ull << 0)
static int shadow_stack_enabled;

int dispatch_returns_hookable(void)
{
	return !shadow_stack_enabled;
}

void dispatch_init(void)
{
	stub_area_set_dispatch((uint64_t)(uintptr_t)needle_dispatch_entry);
	unsigned long long features = 0;
	const char *assume = getenv("NEEDLE_ASSUME_SHSTK");

	if (!syscall(SYS_arch_prctl, ARCH_SHSTK_STATUS, &features) && (features & ARCH_SHSTK_SHSTK))
		shadow_stack_enabled = 1;
	if (assume && *assume == '1')
		shadow_stack_enabled = 1;
	thread_state_frames_hook = close_frames_at_exit;
}
