/* thread_hold.h - threads held from outside the process.
 *
 * A thread that blocks the stop signal (a runtime's helper thread blocks
 * every signal) can be held from outside, where something outside offers
 * to: needle record, with ptrace (agent/record/hold_client.c offers it,
 * agent/patch/thread_stop.c uses it).  It lives in the base layer so that
 * both may reach it.
 *
 * A hold is asked for in two steps, so that the stopper signals the other
 * threads while the holder works: hold_begin() asks for the threads
 * tids[0..n) (the array is copied), hold_end() waits for the answer and
 * gives each one's PC in pcs[] (0: not read: the thread is gone, or its
 * stop was not waited for, which is then the caller's to wait for: it is
 * asked to stop and cannot run user code once stopped, see shm_hold);
 * each returns 0 or negative errno, and nothing is held after an error.
 * release() lets them go, each at pcs[i] (which the caller may have
 * changed); it does not wait: the next hold_begin does, so that a
 * release is never overtaken.  All three run while other threads of the
 * process may be stopped at the stop signal: they must not allocate,
 * lock or print.  None offered: such a thread fails the stop with
 * -EDEADLK. */
#ifndef NEEDLE_THREAD_HOLD_H
#define NEEDLE_THREAD_HOLD_H

#include <stddef.h>
#include <stdint.h>

#define THREAD_HOLD_MAX 32
struct thread_hold_ops {
	int (*hold_begin)(const int *tids, size_t n);
	int (*hold_end)(uint64_t *pcs, size_t n);
	void (*release)(const int *tids, size_t n, const uint64_t *pcs);
};
/* Offered when a recording maps its buffer and withdrawn before it is
 * unmapped; read when a stop begins. */
void thread_hold_offer(const struct thread_hold_ops *ops);
const struct thread_hold_ops *thread_hold_offered(void);

#endif
