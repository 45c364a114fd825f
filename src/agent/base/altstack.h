/* altstack.h - the alternate signal stack each thread set last. */
#ifndef NEEDLE_ALTSTACK_H
#define NEEDLE_ALTSTACK_H

#include <stdint.h>

/* [*lo, *hi) of the calling thread's alternate stack as it last set it
 * with sigaltstack (interposed), or lo == hi when none is set. */
void altstack_last(uint64_t *lo, uint64_t *hi);

#endif
