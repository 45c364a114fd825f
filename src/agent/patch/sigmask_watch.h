/* sigmask_watch.h - whether any thread may block SIGTRAP, kept up to date
 * by interposing the functions that change signal masks and handlers. */
#ifndef NEEDLE_SIGMASK_WATCH_H
#define NEEDLE_SIGMASK_WATCH_H

#include <signal.h>
#include <sys/types.h>

struct thread_state;

void sigmask_watch_init(void);
/* libneedle was loaded into a running process: adjust the handlers that
 * exist and count the threads that block SIGTRAP now, once; interposed:
 * the program's calls reach the interposers from now on, so later changes
 * are seen without reading /proc. */
void sigmask_watch_adopt(int interposed);
/* The int3 batch gate: from close to open, no thread starts blocking
 * SIGTRAP through pthread_sigmask, and no blocking thread creates one
 * (they wait).  Close returns 0 once none is on its way, -ETIMEDOUT
 * (the gate open again) if one stays on its way for 50 ms.  The
 * patching thread itself passes. */
int sigmask_gate_close(void);
void sigmask_gate_open(void);
/* Whether thread tid waits at the closed gate with every signal blocked,
 * running nothing until it opens: a batch need not stop it. */
int sigmask_gate_parked(pid_t tid);
/* In a child just forked: the gate its parent may have closed is open. */
void sigmask_gate_forked(void);
/* 0 when no thread is known or suspected to block SIGTRAP. */
int sigmask_may_block_sigtrap(void);

#endif
