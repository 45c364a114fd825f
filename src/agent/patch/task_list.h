/* task_list.h - the threads of this process as /proc/self/task shows them,
 * with the signals each one blocks. */
#ifndef NEEDLE_TASK_LIST_H
#define NEEDLE_TASK_LIST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct task_list {
	pid_t *tids;
	size_t cnt;
};

/* Fill list with every thread but the caller.  0 or negative errno. */
int task_list_read(struct task_list *list);
/* The same into tids (room for cap), allocating nothing: for use while
 * threads are stopped (one may hold malloc's lock).  0, -ENOSPC, or
 * negative errno. */
int task_list_read_into(pid_t *tids, size_t cap, size_t *cnt);
void task_list_free(struct task_list *list);
/* 1 if thread tid blocks signal sig, 0 if not, negative errno if it is gone. */
int task_blocks_signal(pid_t tid, int sig);
/* The system call thread tid is blocked in (>= 0), -1 if it is not blocked
 * in one (running, or stopped elsewhere), or negative errno below -1 if it
 * cannot be told (-ESRCH: gone).  From /proc/self/task/TID/syscall, which
 * shows "NR ARGS... SP PC" only while the thread sleeps in call NR. */
long task_syscall(pid_t tid);
/* The same, and the user PC it will return to (just past its syscall
 * instruction) in *pc when it is asleep in one. */
long task_syscall_pc(pid_t tid, uint64_t *pc);
/* The same, and the call's six arguments in args (NULL: not wanted). */
long task_syscall_args(pid_t tid, uint64_t args[6], uint64_t *pc);
/* Whether a thread asleep in system call nr (arguments args) waits for a
 * child that runs in this process's memory meanwhile: a vfork, or a clone
 * or clone3 with CLONE_VM and without CLONE_THREAD.  The C
 * library's posix_spawn, system and popen make such a child, which runs
 * the C library's code with every signal blocked until its exec: stopping
 * or holding its parent does not stop it. */
int task_syscall_shares_memory(long nr, const uint64_t args[6]);
/* How long ago thread tid was created, in milliseconds (10 ms steps), or
 * negative errno. */
long task_age_ms(pid_t tid);
/* The CPU time thread tid (of this process) has run, in ns, counting the
 * slice it may be running now (its thread CPU clock), or 0 if it cannot
 * be read. */
uint64_t task_cpu_ns(pid_t tid);
/* 1 with the user PC in *pc if thread tid is in a stop (ptrace's: state
 * 't' or 'T'), 0 if it is not, negative errno (-ESRCH: gone). */
int task_stopped_pc(pid_t tid, uint64_t *pc);
/* Number of threads in the process (including the caller). */
long task_count(void);
/* The same from one read of /proc/self/status: O(1) in threads. */
long task_count_fast(void);

#endif
