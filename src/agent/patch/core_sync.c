/* core_sync.c - see core_sync.h.  Registration is required once per
 * process before the command can be used; without it (kernels before
 * 4.16) live patching is refused rather than done unsafely. */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/patch/core_sync.h"
#include "agent/base/log.h"

static _Atomic uint64_t syncs;

int core_sync_init(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0)) {
		int err = -errno;
		pr_warn("membarrier(REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) failed (%d): "
			"live code patching needs Linux 4.16 or later\n", err);
		return err;
	}
	return 0;
}

void core_sync(void)
{
	syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	atomic_fetch_add_explicit(&syncs, 1, memory_order_relaxed);
}

uint64_t core_sync_count(void)
{
	return atomic_load(&syncs);
}
