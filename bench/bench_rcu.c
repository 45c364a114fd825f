/* bench_rcu - the read-side choice of docs/design.md, measured: a read
 * section of liburcu-bp called through its shared object (what a -fPIC
 * agent like libneedle would have to do: liburcu's bp .a cannot be linked
 * into a shared object) against needle's own read side, inlined as the
 * dispatcher inlines it.  Prints liburcu_bp_read_ns and needle_rcu_read_ns,
 * the floor of several runs of 50M lock/unlock pairs each. */
#include <stdio.h>
#include <time.h>

#include "agent/rcu/rcu.h"

/* The agent's definitions, private to this benchmark. */
__thread struct thread_state *needle_thread __attribute__((tls_model("initial-exec")));
_Atomic uint64_t rcu_gp_generation = 1;

/* needle's read section, named before liburcu's macros take the names. */
static inline void needle_read_lock(struct thread_state *t)
{
	rcu_read_lock_outer(t);
}

static inline void needle_read_unlock(struct thread_state *t)
{
	rcu_read_unlock(t, 0);
}

#include <urcu-bp.h>

#define N 50000000L

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void)
{
	static struct thread_state ts;
	double urcu = 1e18, needle = 1e18;

	needle_thread = &ts;
	urcu_bp_register_thread();
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();
		for (long i = 0; i < N; i++) {
			urcu_bp_read_lock();
			__asm__ volatile("" ::: "memory");
			urcu_bp_read_unlock();
		}
		double t1 = now_ns();
		for (long i = 0; i < N; i++) {
			struct thread_state *t = needle_thread;
			needle_read_lock(t);
			__asm__ volatile("" ::: "memory");
			needle_read_unlock(t);
		}
		double t2 = now_ns();
		urcu = (t1 - t0) / N < urcu ? (t1 - t0) / N : urcu;
		needle = (t2 - t1) / N < needle ? (t2 - t1) / N : needle;
	}
	printf("liburcu_bp_read_ns %.2f\nneedle_rcu_read_ns %.2f\n", urcu, needle);
	return 0;
}
