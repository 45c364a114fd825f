/* stub_area.c - stub memory near an object's code (see stub_area.h).
 *
 * Stubs live in arenas of 4 MiB reserved PROT_NONE within rel32 reach of
 * the code they serve.  An arena starts with a copy of the entry
 * trampoline, so that each stub reaches it with a direct jmp rel32 rather
 * than an indirect jump through a memory slot (a load and a branch-target
 * entry per call); objects get whole pages after it.  Many objects share
 * an arena: mapping one area per object at 16 MiB steps ran out of room
 * within 2 GiB after about 128 dlopen/dlclose cycles.
 *
 * Invariants: a page of an arena is PROT_NONE (free), or read-execute and
 * holding the stubs of exactly one live object, or the trampoline header.
 * Pages are made writable only while nothing points at them: stubs are
 * written on fresh or freed pages, then sealed read-execute, and only then
 * do sites point at them.  No page that a thread may execute is ever
 * mprotected.  The pages of an unloaded object go back to the arena: its
 * sites' bytes went with the object, so no CALL can reach them any more. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/arch/x86_64/stub_area.h"
#include "agent/arch/x86_64/trampoline.h"

#define PAGE 4096u
#define REACH ((uint64_t)1 << 31)
#define STEP ((uint64_t)1 << 24)
#define ARENA_SIZE ((size_t)4 << 20)

struct free_run {
	uint8_t *at;
	size_t size;
	struct free_run *next;
};

struct arena {
	uint8_t *base;
	size_t header;  /* bytes of the trampoline copy, page rounded */
	size_t used;    /* bump offset: pages below it are taken or on free */
	size_t size;    /* bytes reserved */
	struct free_run *free;
	struct arena *next;
};

static struct arena *arenas;
static uint64_t dispatch_entry, dispatch_exit_site, direct_entry, direct_users, direct_exit_site, probe_calling;

void stub_area_set_dispatch(uint64_t entry, uint64_t exit_site, uint64_t direct, uint64_t users,
			    uint64_t direct_exit, uint64_t probe)
{
	probe_calling = probe;
	dispatch_entry = entry;
	dispatch_exit_site = exit_site;
	direct_entry = direct;
	direct_users = users;
	direct_exit_site = direct_exit;
}

static int in_reach(uint64_t at, size_t size, uint64_t lo, uint64_t hi)
{
	/* Every site in [lo, hi) must reach every byte of [at, at+size). */
	uint64_t end = at + size;
	uint64_t far = end > hi ? end - lo : hi - at;
	return far < REACH - PAGE;
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
			void *p = mmap((void *)at, size, PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)p == at)
				return p;
			munmap(p, size); /* old kernels ignore NOREPLACE: treat as a miss */
		}
	}
	return NULL;
}

static size_t trampoline_len(void)
{
	return (size_t)(needle_entry_trampoline_end - (const char *)needle_entry_trampoline);
}

/* An arena of ARENA_SIZE, or larger for an object with more stubs than
 * that holds (more than about 260,000 functions). */
static struct arena *arena_create(uint64_t lo, uint64_t hi, size_t need)
{
	struct arena *a = calloc(1, sizeof(*a));
	size_t len = trampoline_len();

	if (!a)
		return NULL;
	a->header = (len + PAGE - 1) & ~(size_t)(PAGE - 1);
	a->size = ARENA_SIZE;
	if (a->header + need > a->size)
		a->size = (a->header + need + ARENA_SIZE - 1) & ~(ARENA_SIZE - 1);
	a->base = map_near(a->size, lo, hi);
	if (!a->base) {
		free(a);
		return NULL;
	}
	if (mprotect(a->base, a->header, PROT_READ | PROT_WRITE))
		goto fail;
	memcpy(a->base, (const void *)needle_entry_trampoline, len);
	memcpy(a->base + (needle_entry_dispatch_slot - (const char *)needle_entry_trampoline), &dispatch_entry,
	       sizeof(dispatch_entry));
	memcpy(a->base + (needle_exit_dispatch_slot - (const char *)needle_entry_trampoline), &dispatch_exit_site,
	       sizeof(dispatch_exit_site));
	memcpy(a->base + (needle_direct_entry_slot - (const char *)needle_entry_trampoline), &direct_entry,
	       sizeof(direct_entry));
	memcpy(a->base + (needle_direct_users_slot - (const char *)needle_entry_trampoline), &direct_users,
	       sizeof(direct_users));
	memcpy(a->base + (needle_direct_exit_site_slot - (const char *)needle_entry_trampoline), &direct_exit_site,
	       sizeof(direct_exit_site));
	uint64_t calling = (uint64_t)(uintptr_t)needle_calling_trampoline;
	memcpy(a->base + (needle_calling_slot - (const char *)needle_entry_trampoline), &calling, sizeof(calling));
	calling = (uint64_t)(uintptr_t)needle_calling_trampoline_relocated;
	memcpy(a->base + (needle_calling_relocated_slot - (const char *)needle_entry_trampoline), &calling,
	       sizeof(calling));
	memcpy(a->base + (needle_probe_slot - (const char *)needle_entry_trampoline), &probe_calling,
	       sizeof(probe_calling));
	if (mprotect(a->base, a->header, PROT_READ | PROT_EXEC))
		goto fail;
	a->used = a->header;
	a->next = arenas;
	arenas = a;
	return a;
fail:
	munmap(a->base, a->size);
	free(a);
	return NULL;
}

/* size bytes of free pages in a, reachable from [lo, hi), or NULL. */
static uint8_t *arena_take(struct arena *a, size_t size, uint64_t lo, uint64_t hi)
{
	for (struct free_run **p = &a->free; *p; p = &(*p)->next) {
		struct free_run *r = *p;
		if (r->size < size || !in_reach((uint64_t)r->at, size, lo, hi))
			continue;
		uint8_t *at = r->at;
		r->at += size;
		r->size -= size;
		if (!r->size) {
			*p = r->next;
			free(r);
		}
		return at;
	}
	if (a->size - a->used < size || !in_reach((uint64_t)(a->base + a->used), size, lo, hi))
		return NULL;
	uint8_t *at = a->base + a->used;
	a->used += size;
	return at;
}

static void arena_give_back(uint8_t *at, size_t size)
{
	for (struct arena *a = arenas; a; a = a->next) {
		if (at < a->base || at >= a->base + a->size)
			continue;
		struct free_run *r = malloc(sizeof(*r));
		mprotect(at, size, PROT_NONE);
		if (!r)
			return; /* the pages stay unused */
		r->at = at;
		r->size = size;
		r->next = a->free;
		a->free = r;
		return;
	}
}

/* An exit stub pushes r11 first (17 bytes): it takes two slots.  A
 * calling entry's stub is followed by its probe stub. */
static size_t stub_slots(uint8_t kind)
{
	return kind == STUB_EXIT || kind == STUB_ENTRY_CALLING ? 2 : 1;
}

/* movabs $cookie, %r11; jmp to the arena's copy of the blob at `to`. */
static void stub_emit(uint8_t *p, uint64_t cookie, uint64_t to)
{
	*p++ = 0x49;
	*p++ = 0xbb;
	memcpy(p, &cookie, 8);
	p += 8;
	int32_t rel = (int32_t)((int64_t)to - (int64_t)(uint64_t)(p + 5));
	*p++ = 0xe9;
	memcpy(p, &rel, 4);
}

static void stub_write(uint8_t *stub, uint64_t cookie, uint8_t kind, const struct arena *a)
{
	const char *blob = (const char *)needle_entry_trampoline;
	uint64_t to = (uint64_t)a->base;
	uint8_t *p = stub;

	memset(stub, 0xcc, stub_slots(kind) * STUB_SIZE); /* never reached */
	if (kind == STUB_EXIT) {
		*p++ = 0x41; /* push %r11 */
		*p++ = 0x53;
		to += (uint64_t)((const char *)needle_exit_trampoline - blob);
	} else if (kind == STUB_EXIT_RET) {
		to += (uint64_t)((const char *)needle_exit_trampoline_ret - blob);
	} else if (kind == STUB_ENTRY_FULL) {
		to += (uint64_t)((const char *)needle_entry_trampoline_full - blob);
	} else if (kind == STUB_ENTRY_CALLING) {
		to += (uint64_t)((const char *)needle_calling_thunk - blob);
		stub_emit(stub + STUB_PROBE_OFFSET, cookie,
			  (uint64_t)a->base + (uint64_t)((const char *)needle_probe_thunk - blob));
	} else if (kind == STUB_ENTRY_CALLING_RELOCATED) {
		to += (uint64_t)((const char *)needle_calling_thunk_relocated - blob);
	}
	stub_emit(p, cookie, to);
}

int stub_area_create(const uint64_t *cookies, const uint8_t *kind, size_t cnt, uint64_t lo, uint64_t hi,
		     uint64_t *stubs, struct stub_span *out)
{
	size_t slots = 0;
	for (size_t i = 0; i < cnt; i++)
		slots += stub_slots(kind[i]);
	size_t size = (slots * STUB_SIZE + PAGE - 1) & ~(size_t)(PAGE - 1);
	struct arena *a;
	uint8_t *area = NULL;

	for (a = arenas; a && !area; a = area ? a : a->next)
		area = arena_take(a, size, lo, hi);
	if (!area) {
		if (!(a = arena_create(lo, hi, size)) || !(area = arena_take(a, size, lo, hi)))
			return -ENOMEM;
	}
	if (mprotect(area, size, PROT_READ | PROT_WRITE)) {
		int err = -errno;
		arena_give_back(area, size);
		return err;
	}
	for (size_t i = 0, at = 0; i < cnt; at += stub_slots(kind[i]), i++)
		stub_write(area + at * STUB_SIZE, cookies[i], kind[i], a);
	if (mprotect(area, size, PROT_READ | PROT_EXEC)) {
		int err = -errno;
		arena_give_back(area, size);
		return err;
	}
	/* Only now, with the pages executable for good: nobody is handed a
	 * stub that could be given back or is not executable. */
	for (size_t i = 0, at = 0; i < cnt; at += stub_slots(kind[i]), i++)
		stubs[i] = (uint64_t)(area + at * STUB_SIZE);
	out->at = area;
	out->size = size;
	return 0;
}

int stub_area_code(size_t size, uint64_t lo, uint64_t hi, struct stub_span *out)
{
	struct arena *a;
	uint8_t *area = NULL;

	size = (size + PAGE - 1) & ~(size_t)(PAGE - 1);
	for (a = arenas; a && !area; a = area ? a : a->next)
		area = arena_take(a, size, lo, hi);
	if (!area && (!(a = arena_create(lo, hi, size)) || !(area = arena_take(a, size, lo, hi))))
		return -ENOMEM;
	if (mprotect(area, size, PROT_READ | PROT_WRITE)) {
		int err = -errno;
		arena_give_back(area, size);
		return err;
	}
	out->at = area;
	out->size = size;
	return 0;
}

int stub_area_seal(struct stub_span *span)
{
	if (mprotect(span->at, span->size, PROT_READ | PROT_EXEC)) {
		int err = -errno;
		arena_give_back(span->at, span->size);
		span->at = NULL;
		span->size = 0;
		return err;
	}
	return 0;
}

void stub_area_release(const struct stub_span *span)
{
	if (span->at)
		arena_give_back(span->at, span->size);
}
