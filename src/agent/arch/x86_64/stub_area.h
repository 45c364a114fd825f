/* stub_area.h - per-object memory, within CALL rel32 reach of the object's
 * code, holding one 16-byte stub per site.  A site's CALL lands in its
 * stub, which loads the site's cookie (the struct site *, opaque here)
 * into r11 and jumps to the shared entry trampoline, so the trampoline
 * never has to search for the site. */
#ifndef NEEDLE_STUB_AREA_H
#define NEEDLE_STUB_AREA_H

#include <stddef.h>
#include <stdint.h>

/* The pages holding one object's stubs. */
struct stub_span {
	uint8_t *at;
	size_t size;
};

/* The C functions the trampoline copies call (dispatch's entry and exit
 * site points, the direct path's entry and exit site points), the
 * address of the word that says whether to try the direct path, and the
 * probe path a probe stub leads to: set once, before the first
 * stub_area_create. */
void stub_area_set_dispatch(uint64_t dispatch_entry, uint64_t dispatch_exit_site, uint64_t direct_entry,
			    uint64_t direct_users, uint64_t direct_exit_site, uint64_t probe_calling);

#define STUB_SIZE 16
/* Where a STUB_ENTRY_CALLING stub's second stub is: the same site's,
 * leading to the probe path (probe_calling) instead of the calling
 * trampoline. */
#define STUB_PROBE_OFFSET STUB_SIZE

/* What a stub leads to. */
enum stub_kind {
	STUB_ENTRY,      /* a compiled entry: the entry trampoline */
	STUB_ENTRY_CALLING, /* a compiled entry the site JMPs to: the calling trampoline; and,
			     * STUB_PROBE_OFFSET past it, its probe stub: the probe path */
	STUB_ENTRY_FULL, /* a relocated entry (r11 pushed by its detour): every register back */
	STUB_ENTRY_CALLING_RELOCATED, /* a relocated entry whose detour JMPs: the calling trampoline */
	STUB_EXIT,       /* an exit site: pushes r11 itself, the exit trampoline */
	STUB_EXIT_RET,   /* an exit site before a ret: the one that keeps the return value */
};

/* Build one stub for each of cookies[0..cnt) (sites whose code spans
 * [lo, hi)), of kind[i] (enum stub_kind); on success stubs[i] is the
 * address of cookie i's stub, ready to run, and *out says where they
 * are.  0 or negative errno.  Caller holds the control mutex. */
int stub_area_create(const uint64_t *cookies, const uint8_t *kind, size_t cnt, uint64_t lo, uint64_t hi,
		     uint64_t *stubs, struct stub_span *out);
/* Give an unloaded object's stub pages back (see stub_area.c). */
void stub_area_release(const struct stub_span *span);

/* size bytes of fresh pages reachable from [lo, hi), writable, for code
 * whose bytes depend on where it lives (detours): write it at out->at,
 * then stub_area_seal.  0 or negative errno. */
int stub_area_code(size_t size, uint64_t lo, uint64_t hi, struct stub_span *out);
/* Make pages from stub_area_code read-execute for good; on failure they
 * are given back.  0 or negative errno. */
int stub_area_seal(struct stub_span *span);

#endif
