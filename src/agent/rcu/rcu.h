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
 * reader's load and store restores exactly what it found. */
#ifndef NEEDLE_RCU_H
#define NEEDLE_RCU_H

#include <stdatomic.h>
#include <stdint.h>

#include "thread_state.h"

#define RCU_NEST_BITS 16
#define RCU_NEST_MASK ((1u << RCU_NEST_BITS) - 1)

extern _Atomic uint64_t rcu_gp_generation;

static inline void rcu_read_lock(struct thread_state *ts)
{
	uint64_t w = atomic_load_explicit(&ts->rcu_word, memory_order_relaxed);

	if (!(w & RCU_NEST_MASK))
		w = atomic_load_explicit(&rcu_gp_generation, memory_order_relaxed) << RCU_NEST_BITS;
	atomic_store_explicit(&ts->rcu_word, w + 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void rcu_read_unlock(struct thread_state *ts)
{
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&ts->rcu_word,
			      atomic_load_explicit(&ts->rcu_word, memory_order_relaxed) - 1,
			      memory_order_relaxed);
}

int rcu_init(void);
/* Wait for every read section that began before the call.  -EDEADLK when
 * called from inside a read section (a handler detaching its own link). */
int rcu_synchronize(void);
uint64_t rcu_grace_periods(void);

#endif
