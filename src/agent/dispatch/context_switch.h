/* context_switch.h - shadow frames that follow swapcontext coroutines. */
#ifndef NEEDLE_CONTEXT_SWITCH_H
#define NEEDLE_CONTEXT_SWITCH_H

#include <stdint.h>

struct thread_state;

/* A return at sp found no frame: bring back frames put aside by a context
 * switch whose innermost frame returns at sp.  1 if found. */
int context_recover(struct thread_state *ts, uint64_t sp);

#endif
