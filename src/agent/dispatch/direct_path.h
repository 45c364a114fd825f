/* direct_path.h - the pieces of the direct path (dispatch_direct.c) that
 * another path to the same handlers shares: the recorder's own entry in
 * the top layer (agent/graph_direct.c) tests the thread, finds its
 * storage and pushes its frame exactly as the direct path does, so that
 * each closes the other's frames.  Inline code only, for files built
 * with -mgeneral-regs-only (the Makefile's *_direct.c rule). */
#ifndef NEEDLE_DIRECT_PATH_H
#define NEEDLE_DIRECT_PATH_H

#include <stdatomic.h>
#include <stdint.h>

#include "agent/base/control_lock.h"
#include "agent/dispatch/consumer.h"
#include "agent/dispatch/shadow_frame.h"
#include "agent/rcu/rcu.h"
#include "agent/thread/thread_state.h"

/* The thread, when it may take the direct path at sp at all: not inside
 * the agent or a handler, with a state it owns, in the process the state
 * was made in (a raw fork's child fixes its pool on the full path). */
static inline struct thread_state *direct_thread(uint64_t sp)
{
	struct thread_state *ts = needle_thread;

	if (__builtin_expect(needle_agent_busy != 0 || !thread_state_valid(ts) || thread_state_forked(), 0))
		return NULL;
	if (__builtin_expect((sp >> STACK_BLOCK_SHIFT) - ts->stack_window >= STACK_WINDOW_BLOCKS, 0))
		return NULL;
	if (__builtin_expect(rcu_read_nested(ts), 0))
		return NULL;
	return ts;
}

/* Where a call at sp with return address ra stands among the thread's
 * frames.  The usual call is below every frame (0).  A call at the top
 * frame's own sp whose return address is a hooked return is a tail call
 * of that frame's function (the caller jumped, leaving its hooked return
 * in the slot): its frame goes on top of its caller's at the same sp, as
 * the full path pushes it, and its return goes through both (1).  Any
 * other frame at or below sp was skipped by a longjmp (or this runs on an
 * alternate signal stack), and a thread with no frame may be back from a
 * coroutine switch: the full path sorts those out (-1, decline).  The
 * same tests as dispatch.c's needle_dispatch_entry. */
static inline int direct_call_order(const struct thread_state *ts, uint64_t sp, uint64_t ra)
{
	if (!ts->shadow_top)
		return ts->context ? -1 : 0;
	uint64_t top = frame_top((struct thread_state *)ts)->sp;
	if (top > sp)
		return 0;
	return top == sp && is_return_trampoline(ra) ? 1 : -1;
}

/* c's storage in the thread, if it has claimed it already (claiming
 * zeroes it, a memset: the full path does that).  1 with *td set (NULL
 * for a consumer with none), 0 to decline. */
static inline int direct_thread_data(const struct consumer *c, struct thread_state *ts, void **td)
{
	*td = consumer_thread_data_if_used(c, ts);
	return *td || !c->tdata_size;
}

/* The site's only consumer, with its ops and its generation read once (the
 * one tested is the one the frame keeps); NULL when the site's list is
 * not one consumer.  Inside the read section. */
static inline __attribute__((always_inline)) struct consumer *direct_sole_consumer(const struct site *site,
										     const struct consumer_ops **ops,
										     uint32_t *generation)
{
	const struct consumer_list *list = atomic_load_explicit(&site->consumers, memory_order_acquire);

	if (!list || list->cnt != 1)
		return NULL;
	struct consumer *c = list->items[0];
	/* Acquire: pairs with consumer_set_ops' release, as in dispatch.c. */
	*ops = atomic_load_explicit(&c->ops, memory_order_acquire);
	*generation = atomic_load_explicit(&c->generation, memory_order_relaxed);
	return c;
}

/* dispatch.c's frame_push for one entry with no call data (room checked
 * by the caller). */
static inline __attribute__((always_inline)) void direct_frame_push(struct thread_state *ts, const struct consumer *c,
								     const struct consumer_ops *ops,
								     uint32_t generation, uint64_t cookie, uint64_t ra,
								     struct site *site, uint64_t sp, int at_exit_site,
								     int calling)
{
	struct frame_entry *e = (struct frame_entry *)(ts->shadow + ts->shadow_top);
	struct frame_header *h = (struct frame_header *)(e + 1);

	e->slot = (uint16_t)c->slot;
	e->ops = consumer_ops_index(ops);
	e->generation = generation;
	e->cookie = cookie;
	h->return_addr = ra;
	h->site = site;
	h->sp = sp;
	h->entry_cnt = 1;
	h->frame_bytes = sizeof(*e);
	h->at_exit_site = (uint32_t)at_exit_site;
	h->called = calling && !at_exit_site;
	ts->shadow_top += sizeof(*e) + sizeof(*h);
	if (__builtin_expect(ts->shadow_top > ts->shadow_high, 0))
		ts->shadow_high = ts->shadow_top;
}

#endif
