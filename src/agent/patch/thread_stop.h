/* thread_stop.h - stop every other thread of the process at a signal
 * handler, for the rare rewrites that the int3 protocol cannot make safe:
 * turning gcc's five 1-byte NOPs into one NOP5 (a thread may sit between
 * two of them) and patching when a thread blocks SIGTRAP.
 *
 * A stopped thread whose PC is inside one of the given sites is moved to
 * the site's end, which is harmless because the bytes it skips are NOPs.
 * Stopping interrupts system calls; those the kernel cannot restart
 * return EINTR, so this is used only where nothing else works, and
 * threads asleep in a system call are left alone where the caller can
 * cover them with int3 (see thread_stop_all). */
#ifndef NEEDLE_THREAD_STOP_H
#define NEEDLE_THREAD_STOP_H

#include <stddef.h>
#include <stdint.h>

struct site;

/* Stop all other threads; sites[0..cnt) (sorted by address) are the ranges
 * to move PCs out of.  -EDEADLK if a thread blocks the stop signal.
 *
 * With asleep non-NULL, a thread asleep in a system call, whose PC is
 * just past a syscall instruction and so in no site, and which does not
 * block SIGTRAP, is not signalled (a signal would make calls such as
 * epoll_wait return EINTR) but listed in *asleep: the caller must then
 * rewrite with an int3 on each site's first byte in place first, so that
 * such a thread waking meanwhile traps instead of running the site, and
 * call thread_stop_woken before writing the other bytes. */
struct task_list;
int thread_stop_all(struct site *const *sites, size_t cnt, struct task_list *asleep);
/* Stop only the threads in tids (those that block SIGTRAP, which no int3
 * may reach), for an int3 batch that the others run through.  Same
 * errors as thread_stop_all; thread_resume_all ends it. */
int thread_stop_list(struct site *const *sites, size_t cnt, const struct task_list *tids);
/* Stop those of the threads listed asleep that are no longer in a system
 * call: one may have woken, run into a site and been preempted inside it
 * before the int3 was there.  0 or negative errno. */
int thread_stop_woken(const struct task_list *asleep);
void thread_resume_all(void);
/* The signal used to stop threads (which a helper thread must not block). */
int thread_stop_signal(void);

/* Threads that block the stop signal are held from outside where that
 * is offered (agent/base/thread_hold.h). */

#endif
