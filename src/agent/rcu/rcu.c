/* rcu.c - the write side of needle's RCU: grace periods (see rcu.h).
 *
 * Why not liburcu: its bp flavour must be called through its shared object
 * from a -fPIC agent (its .a cannot be linked into one), measured at 5-7 ns
 * per read section against about 1 ns inlined here, and it registers each
 * reader thread under a mutex on first use.  needle already gives every
 * traced thread a pool slot, which doubles as the reader registry. */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/base/log.h"
#include "agent/rcu/rcu.h"

_Atomic uint64_t rcu_gp_generation = 1;
#ifdef NEEDLE_RCU_ABLATION_RWLOCK
pthread_rwlock_t rcu_ablation_lock = PTHREAD_RWLOCK_INITIALIZER;
#endif
static _Atomic uint64_t grace_periods;
static pthread_mutex_t gp_lock = PTHREAD_MUTEX_INITIALIZER;

int rcu_init(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0)) {
		int err = -errno;
		pr_warn("membarrier(REGISTER_PRIVATE_EXPEDITED) failed (%d): needle needs Linux 4.14 or later\n", err);
		return err;
	}
	return 0;
}

static void memory_barrier_all_threads(void)
{
	syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

struct wait_arg {
	uint64_t generation;
};

static int reader_blocks(uint64_t w, uint64_t generation)
{
	return (w & RCU_NEST_MASK) && (w >> RCU_NEST_BITS) < generation;
}

static void wait_for_reader(struct thread_state *ts, void *arg)
{
	struct wait_arg *wa = arg;
	unsigned spins = 0;

	while (reader_blocks(atomic_load_explicit(&ts->rcu_word, memory_order_acquire), wa->generation)) {
		if (++spins < 128) {
			__builtin_ia32_pause();
		} else if (spins < 256) {
			sched_yield();
		} else {
			struct timespec t = { 0, 50 * 1000 };
			nanosleep(&t, NULL);
		}
	}
}

int rcu_synchronize(void)
{
	struct thread_state *self = needle_thread;
	struct wait_arg wa;

	if (thread_state_forked())
		thread_state_after_fork();
	if (thread_state_valid(self) && (atomic_load(&self->rcu_word) & RCU_NEST_MASK))
		return -EDEADLK;
	pthread_mutex_lock(&gp_lock);
#ifdef NEEDLE_RCU_ABLATION_RWLOCK
	/* The ablation's grace period: wait out every reader. */
	pthread_rwlock_wrlock(&rcu_ablation_lock);
	pthread_rwlock_unlock(&rcu_ablation_lock);
#endif
	/* The bump is a locked RMW (a full barrier on x86): the lists the
	 * caller unpublished are visible before the new generation. */
	wa.generation = atomic_fetch_add(&rcu_gp_generation, 1) + 1;
	/* Pairs with rcu_read_lock's unfenced store (rcu.h). */
	memory_barrier_all_threads();
	/* Acquire loads there pair with rcu_read_unlock's store. */
	thread_state_for_each(wait_for_reader, &wa);
	/* Nothing the caller frees next may be reordered before the waits. */
	atomic_thread_fence(memory_order_seq_cst);
	atomic_fetch_add(&grace_periods, 1);
	pthread_mutex_unlock(&gp_lock);
	return 0;
}

uint64_t rcu_grace_periods(void)
{
	return atomic_load(&grace_periods);
}
