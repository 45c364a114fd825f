/* thread_stop.h - stop every other thread of the process at a signal
 * handler, for the rewrites that the int3 protocol alone cannot make
 * safe: turning gcc's five 1-byte NOPs into one NOP5 (a thread may sit
 * between two of them), switching relocated entries (several
 * instructions replaced at once), and patching when a thread blocks
 * SIGTRAP.
 *
 * A stopped thread whose PC is inside one of the given sites is moved
 * where the same instructions run: the site's end for NOPs, the detour
 * for a relocated entry.  A stop ends a system call in progress; the stop
 * handler makes again one the kernel would end with EINTR (same
 * arguments: a relative timeout starts over), and threads asleep in a
 * system call are not signalled at all where a door can be closed behind
 * them (see thread_stop_all and sleeper_door.h). */
#ifndef NEEDLE_THREAD_STOP_H
#define NEEDLE_THREAD_STOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct site;

/* Threads left asleep in a system call, each with its door: the PC past
 * its syscall instruction (sleeper_door.h). */
struct sleepers {
	pid_t *tids;
	uint64_t *pcs;
	size_t cnt;
};
void sleepers_free(struct sleepers *s);

/* Stop all other threads; sites[0..cnt) (sorted by address) are the ranges
 * to move PCs out of.  -EDEADLK if a thread blocks the stop signal.
 *
 * With asleep non-NULL, a thread asleep in a system call that keeps its
 * signal mask, at a PC in no site where a door is ready (door_prepare),
 * and which does not block SIGTRAP, is not signalled (a signal would end
 * calls such as epoll_wait with EINTR) but listed in *asleep: the caller
 * must close their doors, core_sync, call thread_stop_woken, and then
 * rewrite with an int3 on each site's first byte first (a handler of the
 * program's may run in such a thread meanwhile). */
struct task_list;
int thread_stop_all(struct site *const *sites, size_t cnt, struct sleepers *asleep);
/* Stop only the threads in tids (those that block SIGTRAP, which no int3
 * may reach), for an int3 batch that the others run through.  Same
 * errors as thread_stop_all; thread_resume_all ends it. */
int thread_stop_list(struct site *const *sites, size_t cnt, const struct task_list *tids);
/* Room for a stop of the threads there are and extra more, made now:
 * thread_stop_list allocates nothing, and fails with -EAGAIN beyond it.
 * 0 or -ENOMEM. */
int thread_stop_reserve(size_t extra);
/* Stop those of the threads listed asleep that are no longer asleep at
 * their door: one may have woken before it closed.  0 or negative errno. */
int thread_stop_woken(const struct sleepers *asleep);
void thread_resume_all(void);
/* The signal used to stop threads (which a helper thread must not block). */
int thread_stop_signal(void);

/* Threads that block the stop signal are held from outside where that
 * is offered (agent/base/thread_hold.h). */

/* How long threads were kept from running, over every stop so far: the
 * longest window from the first stop signal sent (or thread held) to
 * the release, which the signalled threads spend in the stop handler,
 * and the longest hold from outside.  What `needle info` reports as
 * holds besides the borrowed thread's. */
struct stop_hold_stats {
	uint64_t stops;            /* windows in which a thread was stopped or held */
	uint64_t window_max_ns;    /* longest of them */
	uint64_t outside_max_ns;   /* longest hold from outside (thread_hold.h) */
};
/* The figures since the last call, which starts them over. */
void thread_stop_take_hold_stats(struct stop_hold_stats *st);

#endif
