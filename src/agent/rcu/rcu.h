/* rcu.h - the read side of needle's RCU, inlined into the dispatch path.
 *
 * A reader stores the current grace-period generation and a nesting count
 * into its own thread_state word: one load of a shared read-mostly
 * variable, one store to a line only this thread writes, no fence.  The
 * writer pays instead: it bumps the generation, runs
 * membarrier(PRIVATE_EXPEDITED) so that every reader's earlier stores are
 * visible and later loads see the new pointers, then waits for each word
 * that is nested and older than the new generation.  One store updates
 * both fields, so a signal handler that nests a read section between the
 * reader's load and store restores exactly what it found.
 *
 * Which barrier pairs with which (x86-64 only; each relies on TSO):
 *  - lock: the relaxed store of the nested word has no fence after it.
 *    The writer's membarrier(PRIVATE_EXPEDITED) runs a full barrier on
 *    every CPU running one of our threads, so after it either the
 *    writer sees the reader's word, or the reader's later loads of
 *    consumer lists see what the writer published before the
 *    membarrier.  This pairs lock with rcu_synchronize()'s membarrier and
 *    closes the race "reader loads the old list, writer misses the
 *    reader".
 *  - unlock: a relaxed store, preceded only by a compiler barrier.  Under
 *    TSO a store is never made visible before the loads and stores that
 *    precede it in program order, so it acts as a release store; it pairs
 *    with wait_for_reader()'s acquire load, and closes the race "writer
 *    frees a list the reader is still reading".  A weakly ordered port
 *    needs memory_order_release here.
 *
 * The dispatch path uses the nesting count as its recursion guard too: a
 * thread whose word is nested is already inside needle (running a
 * handler), and a traced call it makes is not dispatched. */
#ifndef NEEDLE_RCU_H
#define NEEDLE_RCU_H

#include <stdatomic.h>
#include <stdint.h>

#include "agent/thread/thread_state.h"

#define RCU_NEST_BITS 16
#define RCU_NEST_MASK ((1u << RCU_NEST_BITS) - 1)

extern _Atomic uint64_t rcu_gp_generation __attribute__((visibility("hidden")));

#ifdef NEEDLE_RCU_ABLATION_RWLOCK
/* Benchmark-only ablation (bench/bench_probe.c): the same dispatch with a
 * reader-writer lock in place of RCU.  The word still carries the nesting
 * count, which is the recursion guard. */
#include <pthread.h>
extern pthread_rwlock_t rcu_ablation_lock;
#define RCU_ABLATION_READ_LOCK() pthread_rwlock_rdlock(&rcu_ablation_lock)
#define RCU_ABLATION_READ_UNLOCK() pthread_rwlock_unlock(&rcu_ablation_lock)
#else
#define RCU_ABLATION_READ_LOCK() ((void)0)
#define RCU_ABLATION_READ_UNLOCK() ((void)0)
#endif

/* The outermost section's opener: its stack pointer, which
 * thread_state_before_jump compares with a longjmp's target.  Stored
 * before the word and again after it (a signal fence orders each for a
 * handler on this thread): a signal whose handler opens and closes a
 * section of its own between the first store and the word leaves its
 * stack pointer there, and the second store puts the opener's back.  A
 * plain store to the thread's own line. */
static inline void rcu_note_opener(struct thread_state *ts)
{
	uint64_t sp;
	__asm__ volatile("movq %%rsp, %0" : "=r"(sp));
	atomic_store_explicit(&ts->rcu_sp, sp, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

/* Enter a read section known to be outermost (rcu_read_nested() was 0). */
static inline void rcu_read_lock_outer(struct thread_state *ts)
{
	rcu_note_opener(ts);
	atomic_store_explicit(&ts->rcu_word,
			      atomic_load_explicit(&rcu_gp_generation, memory_order_relaxed) << RCU_NEST_BITS | 1,
			      memory_order_relaxed);
	rcu_note_opener(ts);
	atomic_signal_fence(memory_order_seq_cst);
	RCU_ABLATION_READ_LOCK();
}

/* Enter a read section; returns the word to hand back to rcu_read_unlock.
 * Unlock stores that saved word instead of decrementing, so consecutive
 * calls do not chain through a load-modify-store of the same location. */
static inline uint64_t rcu_read_lock(struct thread_state *ts)
{
	uint64_t w = atomic_load_explicit(&ts->rcu_word, memory_order_relaxed);

	if (!(w & RCU_NEST_MASK)) {
		rcu_read_lock_outer(ts);
		return w;
	}
	atomic_store_explicit(&ts->rcu_word, w + 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	RCU_ABLATION_READ_LOCK();
	return w;
}

static inline int rcu_read_nested(const struct thread_state *ts)
{
	return (atomic_load_explicit(&ts->rcu_word, memory_order_relaxed) & RCU_NEST_MASK) != 0;
}

/* Release by TSO (see the top of this file): pairs with the acquire load
 * in rcu.c's wait_for_reader. */
static inline void rcu_read_unlock(struct thread_state *ts, uint64_t saved)
{
	RCU_ABLATION_READ_UNLOCK();
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&ts->rcu_word, saved, memory_order_relaxed);
}

int rcu_init(void);
/* Wait for every read section that began before the call.  -EDEADLK when
 * called from inside a read section (a handler detaching its own link). */
int rcu_synchronize(void);
uint64_t rcu_grace_periods(void);

#endif
