/* context_switch.h - shadow frames that follow swapcontext coroutines. */
#ifndef NEEDLE_CONTEXT_SWITCH_H
#define NEEDLE_CONTEXT_SWITCH_H

#include <stdint.h>

struct thread_state;

/* A return at sp found no frame: bring back frames put aside by a context
 * switch whose innermost frame returns at sp.  1 if found. */
int context_recover(struct thread_state *ts, uint64_t sp);

/* A traced call starts with no frame on the shadow stack while the thread
 * was last switched into a coroutine context: if the call runs on another
 * stack, that context ended and glibc entered its uc_link. */
void context_check_entry(struct thread_state *ts, uint64_t sp);


#endif
