/* core_sync.h - serialize instruction fetch on every CPU running a thread
 * of this process: membarrier(PRIVATE_EXPEDITED_SYNC_CORE), the user-space
 * counterpart of the kernel's text_poke_sync() IPI. */
#ifndef NEEDLE_CORE_SYNC_H
#define NEEDLE_CORE_SYNC_H

#include <stdint.h>

int core_sync_init(void);
void core_sync(void);
uint64_t core_sync_count(void);

#endif
