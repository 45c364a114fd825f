/* context_switch.c - coroutines: swapcontext switches a thread between
 * machine stacks, each with traced calls of its own.  The shadow stack
 * follows: at a switch, the frames of the context being left are put
 * aside under its ucontext, and those of the context being entered come
 * back.  A context that ends through uc_link re-enters its successor with
 * a setcontext inside glibc that cannot be interposed; the first return
 * that finds no frame then looks here for the frames whose stack pointer
 * it matches (context_recover).
 *
 * Contexts may be resumed on another thread, so the store is global; a
 * switch is not a traced call, and a mutex is fine here.
 *
 * A switch also sets the signal mask the context holds, unseen by the
 * pthread_sigmask interposer: safe_copy.c is told the new one before the
 * switch, and that the mask is unknown when swapcontext returns (the
 * context was resumed by whoever, with whichever mask). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "agent/dispatch/context_switch.h"
#include "agent/dispatch/consumer.h"
#include "agent/base/control_lock.h"
#include "agent/base/interpose.h"
#include "agent/base/safe_copy.h"
#include "needle.h"
#include "agent/rcu/rcu.h"
#include "agent/dispatch/shadow_frame.h"
#include "agent/thread/thread_state.h"

/* swapcontext and friends: the consumers that asked hear of the switch. */
static void consumers_switch(struct thread_state *ts, const void *from, const void *to)
{
	if (thread_state_forked())
		thread_state_after_fork();
	uint64_t saved = rcu_read_lock(ts);
	for (uint32_t i = 0, n = consumer_slots_used(); i < n; i++) {
		struct consumer *c = &consumer_table[i];
		if (c->context_switch && consumer_live(c))
			c->context_switch(from, to, consumer_thread_data(c, ts), c->user_data);
	}
	rcu_read_unlock(ts, saved);
}

struct saved_frames {
	const void *context;
	uint64_t top_sp;      /* sp of the innermost saved frame */
	size_t bytes;
	struct saved_frames *next;
	uint8_t frames[];
};

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
/* Written under store_lock; context_recover reads it unlocked only as a
 * hint (nothing saved: no need to lock), hence atomic. */
static _Atomic(struct saved_frames *) store;


/* Unlink and return the frames saved for context, or NULL.  Locked. */
static struct saved_frames *take(const void *context, uint64_t sp)
{
	struct saved_frames *prev = NULL;

	for (struct saved_frames *s = atomic_load_explicit(&store, memory_order_relaxed); s; prev = s, s = s->next) {
		if ((context && s->context == context) || (!context && s->top_sp == sp)) {
			if (prev)
				prev->next = s->next;
			else
				atomic_store_explicit(&store, s->next, memory_order_relaxed);
			return s;
		}
	}
	return NULL;
}

static void put_aside(struct thread_state *ts, const void *context)
{
	if (!ts->shadow_top)
		return;
	struct saved_frames *s = malloc(sizeof(*s) + ts->shadow_top);
	if (!s)
		return; /* the frames stay; a mismatched return will close them */
	s->context = context;
	s->top_sp = frame_top(ts)->sp;
	s->bytes = ts->shadow_top;
	memcpy(s->frames, ts->shadow, ts->shadow_top);
	pthread_mutex_lock(&store_lock);
	struct saved_frames *old = take(context, 0); /* a context saved twice keeps the newest */
	s->next = atomic_load_explicit(&store, memory_order_relaxed);
	atomic_store_explicit(&store, s, memory_order_relaxed);
	pthread_mutex_unlock(&store_lock);
	free(old);
	ts->shadow_top = 0;
}

static int bring_back(struct thread_state *ts, const void *context, uint64_t sp)
{
	pthread_mutex_lock(&store_lock);
	struct saved_frames *s = take(context, sp);
	pthread_mutex_unlock(&store_lock);
	if (!s)
		return 0;
	/* Found by stack pointer: a context re-entered inside glibc (uc_link)
	 * that nobody announced. */
	if (!context) {
		consumers_switch(ts, NULL, s->context);
		ts->context = s->context;
	}
	if (ts->shadow_top + s->bytes <= ts->shadow_cap) {
		memcpy(ts->shadow + ts->shadow_top, s->frames, s->bytes);
		ts->shadow_top += s->bytes;
	}
	free(s);
	return 1;
}

void context_check_entry(struct thread_state *ts, uint64_t sp)
{
	const ucontext_t *uc = ts->context;

	/* Contexts saved by swapcontext carry no stack bounds: only those made
	 * by makecontext can be checked. */
	if (!uc->uc_stack.ss_size)
		return;
	uint64_t lo = (uint64_t)uc->uc_stack.ss_sp, hi = lo + uc->uc_stack.ss_size;
	if (sp >= lo && sp < hi)
		return;
	ts->context = uc->uc_link;
	if (uc->uc_link) {
		consumers_switch(ts, uc, uc->uc_link);
		bring_back(ts, uc->uc_link, 0);
	}
}

int context_recover(struct thread_state *ts, uint64_t sp)
{
	return atomic_load_explicit(&store, memory_order_relaxed) ? bring_back(ts, NULL, sp) : 0;
}

NEEDLE_INTERPOSER_SITE int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	struct thread_state *ts = thread_state_self();

	/* The shadow stack is between two contexts until the switch: the
	 * consumers' callbacks and the bookkeeping call the C library, whose
	 * functions may be sites, as the agent. */
	if (ts) {
		needle_agent_busy++;
		consumers_switch(ts, oucp, ucp);
		put_aside(ts, oucp);
		bring_back(ts, ucp, 0);
		ts->context = ucp;
		needle_agent_busy--;
	}
	if (ucp)
		safe_copy_mask_switch(&ucp->uc_sigmask);
	int r = ((int (*)(ucontext_t *, const ucontext_t *))interpose_next(IP_SWAPCONTEXT))(oucp, ucp);
	safe_copy_mask_unknown();
	return r;
}

NEEDLE_INTERPOSER_SITE int setcontext(const ucontext_t *ucp)
{
	struct thread_state *ts = thread_state_self();

	if (ts) {
		needle_agent_busy++;
		consumers_switch(ts, NULL, ucp);
		/* The frames of the context abandoned stay: like after a longjmp,
		 * they are closed when a return or an entry shows them dead. */
		bring_back(ts, ucp, 0);
		ts->context = ucp;
		needle_agent_busy--;
	}
	if (ucp)
		safe_copy_mask_switch(&ucp->uc_sigmask);
	return ((int (*)(const ucontext_t *))interpose_next(IP_SETCONTEXT))(ucp);
}
