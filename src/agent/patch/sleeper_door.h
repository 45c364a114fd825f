/* sleeper_door.h - keeping a thread asleep in a system call out of a
 * patch batch without signalling it.
 *
 * A thread asleep in a system call runs no user code until the kernel
 * returns it to one address: the instruction past its syscall
 * instruction.  Closing that door (an int3 on the instruction's first
 * byte) for the length of a batch parks a thread that wakes there, in
 * the SIGTRAP handler, until the batch is over; it then runs the
 * instruction from a copy (a one-instruction detour) and goes on.  So a
 * batch needs no stop signal for such a thread, and calls such as
 * epoll_wait, which any signal handler would end with EINTR, go on
 * undisturbed: their result and their timeout are the program's own.
 *
 * Invariants:
 *   - doors only ever get added (DOOR_MAX), so that a thread that trapped
 *     at one in a past batch, and is late to run its handler, still finds
 *     it; an entry whose instruction has changed is retired, not reused;
 *   - a door is closed only between door_close_all and door_open_all, by
 *     the thread that holds the control mutex (the patcher), which passes
 *     through every door (it may itself make system calls through the
 *     wrappers the doors sit in);
 *   - door_open_all restores every byte and serializes every CPU before
 *     it lets a parked thread go: after it, no thread traps at a door of
 *     that batch except one that had trapped before. */
#ifndef NEEDLE_SLEEPER_DOOR_H
#define NEEDLE_SLEEPER_DOOR_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

/* Whether a thread asleep in system call nr, with arguments args, may be
 * left asleep behind a door.  The call must keep the thread's signal
 * mask as it is: 0 for rt_sigsuspend, and for ppoll, pselect6,
 * epoll_pwait(2) and io_pgetevents given a mask, where the mask on the
 * way back (the saved one) cannot be read, and for rt_sigtimedwait,
 * which unblocks the signals it waits for.  And no child may run in the
 * process's memory meanwhile (task_syscall_shares_memory: posix_spawn's
 * parent, asleep while its child runs the C library until its exec):
 * such a parent is stopped instead, which waits for that exec. */
int door_syscall_allowed(long nr, const uint64_t args[6]);
/* Make sure a door can be closed at pc in this batch: its instruction
 * copied to a detour of its own, the door armed (the caller makes its
 * page writable).  0, or negative errno when no door can be made there
 * (not in an ELF object's code, an instruction that cannot be moved, no
 * room left).  Control mutex held; allocates (before any thread stops). */
int door_prepare(uint64_t pc);
/* 1 if the door at pc is armed and pc's instruction is still the one
 * copied.  Allocates nothing. */
int door_ready(uint64_t pc);
/* No program signal handler blocks SIGTRAP (a handler run in a parked
 * thread's place must be able to take an int3), and neither does the
 * caller: doors may be used.  Allocates nothing. */
int door_allowed(void);
/* Write an int3 at each armed door of pcs[0..n), the caller becoming the
 * patcher.  Then core_sync before relying on them. */
void door_close_all(const uint64_t *pcs, size_t n);
/* Put back every byte the last door_close_all changed, serialize, and
 * let the parked threads go; then disarm every door (the batch's end,
 * whether doors were closed or not). */
void door_open_all(void);
/* The SIGTRAP handler's part: 1 if the trap in uc is at a door
 * (the thread waited, if it had to, and continues in the door's detour),
 * 0 if not. */
int door_trap(ucontext_t *uc);

#endif
