/* process_ids.h - the process's pid and its parent's, for the recorder's
 * TASKS records (each thread's process and that process's parent).
 *
 * Invariants: read once at start-up (two system calls, before any traced
 * call), and in a forked child set by the thread layer's fork handling,
 * which runs while the child has one thread: the parent's pid becomes the
 * ppid (getppid would name a reaper once the parent has exited), and the
 * thread that forked, the child's first, has the child's pid for its tid.
 * So a thread reads them with plain loads, and needle adds no system call
 * per thread for them (with --kernel the program's own are recorded). */
#ifndef NEEDLE_PROCESS_IDS_H
#define NEEDLE_PROCESS_IDS_H

#include <stdint.h>

extern uint32_t process_pid __attribute__((visibility("hidden")));
extern uint32_t process_ppid __attribute__((visibility("hidden")));

/* At start-up. */
void process_ids_init(void);
/* In a forked child: pid is the child's (0: unknown, getpid reads it). */
void process_ids_forked(uint32_t pid);

#endif
