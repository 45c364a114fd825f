/* sigmask_watch.h - whether any thread may block SIGTRAP, kept up to date
 * by interposing the functions that change signal masks. */
#ifndef NEEDLE_SIGMASK_WATCH_H
#define NEEDLE_SIGMASK_WATCH_H

struct thread_state;

void sigmask_watch_init(void);
/* 0 when no thread is known or suspected to block SIGTRAP. */
int sigmask_may_block_sigtrap(void);
void sigmask_watch_thread_exit(struct thread_state *ts);

#endif
