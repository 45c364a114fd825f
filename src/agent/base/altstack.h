/* altstack.h - the alternate signal stack each thread set last. */
#ifndef NEEDLE_ALTSTACK_H
#define NEEDLE_ALTSTACK_H

#include <stdint.h>

/* [*lo, *hi) of the calling thread's alternate stack as it last set it
 * with sigaltstack (interposed), or lo == hi when none is set. */
void altstack_last(uint64_t *lo, uint64_t *hi);

/* 1 with [*lo, *hi) the kernel's alternate stack when the calling thread
 * runs on it now (SS_ONSTACK), else 0: for one the interposer did not see
 * set (before a -p attach, or by a raw system call).  One call of the C
 * library's sigaltstack; not a hot path. */
int altstack_kernel_on(uint64_t *lo, uint64_t *hi);

#endif
