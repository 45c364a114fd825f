/* stub_area.c - allocates stub memory near an object's code and writes the
 * stubs (see stub_area.h).  An area starts with a copy of the entry
 * trampoline, so that each stub reaches it with a direct jmp rel32 rather
 * than an indirect jump through a memory slot (a load and a branch-target
 * entry per call).  Stub memory is never freed: a thread may be
 * preempted inside a stub at any time, and objects are rarely unloaded. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "site_table.h"
#include "stub_area.h"
#include "trampoline.h"

#define STUB_SIZE 16
#define REACH ((uint64_t)1 << 31)
#define STEP ((uint64_t)1 << 24)

static int in_reach(uint64_t at, size_t size, uint64_t lo, uint64_t hi)
{
	/* Every site in [lo, hi) must reach every byte of [at, at+size). */
	uint64_t end = at + size;
	uint64_t far = end > hi ? end - lo : hi - at;
	return far < REACH - 4096;
}

static void *map_near(size_t size, uint64_t lo, uint64_t hi)
{
	/* Probe upwards from the end of the code, then downwards from its
	 * start; MAP_FIXED_NOREPLACE fails fast on occupied ranges. */
	for (int dir = 0; dir < 2; dir++) {
		for (uint64_t k = 0; k < REACH / STEP; k++) {
			uint64_t at = dir == 0 ? ((hi + STEP - 1) & ~(STEP - 1)) + k * STEP
					       : (lo & ~(STEP - 1)) - (k + 1) * STEP;
			if (dir == 1 && at > lo)
				break;
			if (!in_reach(at, size, lo, hi))
				break;
			void *p = mmap((void *)at, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)p == at)
				return p;
			munmap(p, size); /* old kernels ignore NOREPLACE: treat as a miss */
		}
	}
	return NULL;
}

int stub_area_create(struct site **sites, size_t cnt, uint64_t lo, uint64_t hi)
{
	size_t tramp_len = (size_t)(needle_entry_trampoline_end - (const char *)needle_entry_trampoline);
	size_t header = (tramp_len + 63) & ~(size_t)63;
	size_t size = (header + cnt * STUB_SIZE + 4095) & ~(size_t)4095;
	uint8_t *area = map_near(size, lo, hi);

	if (!area)
		return -ENOMEM;
	uint64_t dispatch = (uint64_t)needle_dispatch_entry;
	memcpy(area, (const void *)needle_entry_trampoline, tramp_len);
	memcpy(area + (needle_entry_dispatch_slot - (const char *)needle_entry_trampoline), &dispatch,
	       sizeof(dispatch));
	for (size_t i = 0; i < cnt; i++) {
		uint8_t *stub = area + header + i * STUB_SIZE;
		uint64_t site = (uint64_t)sites[i];
		/* movabs $site, %r11 */
		stub[0] = 0x49;
		stub[1] = 0xbb;
		memcpy(stub + 2, &site, 8);
		/* jmp trampoline copy */
		int32_t rel = (int32_t)((int64_t)(uint64_t)area - (int64_t)(uint64_t)(stub + 15));
		stub[10] = 0xe9;
		memcpy(stub + 11, &rel, 4);
		stub[15] = 0xcc; /* never reached */
	}
	if (mprotect(area, size, PROT_READ | PROT_EXEC)) {
		int err = -errno;
		munmap(area, size);
		return err;
	}
	/* Only now, with the area executable for good: a site never points
	 * at a stub that could be unmapped or is not executable. */
	for (size_t i = 0; i < cnt; i++)
		sites[i]->stub = (uint64_t)(area + header + i * STUB_SIZE);
	return 0;
}
