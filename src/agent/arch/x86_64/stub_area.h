/* stub_area.h - per-object memory, within CALL rel32 reach of the object's
 * code, holding one 16-byte stub per site.  A site's CALL lands in its
 * stub, which loads the struct site * into r11 and jumps to the shared
 * entry trampoline, so the trampoline never has to search for the site. */
#ifndef NEEDLE_STUB_AREA_H
#define NEEDLE_STUB_AREA_H

#include <stddef.h>
#include <stdint.h>

struct site;

/* The pages holding one object's stubs. */
struct stub_span {
	uint8_t *at;
	size_t size;
};

/* Build stubs for sites[0..cnt) whose code spans [lo, hi).  On success
 * each site's ->stub is set and *out says where they are.  0 or negative
 * errno.  Caller holds the control mutex. */
int stub_area_create(struct site **sites, size_t cnt, uint64_t lo, uint64_t hi, struct stub_span *out);
/* Give an unloaded object's stub pages back (see stub_area.c). */
void stub_area_release(const struct stub_span *span);

#endif
