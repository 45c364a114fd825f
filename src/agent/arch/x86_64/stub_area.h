/* stub_area.h - per-object memory, within CALL rel32 reach of the object's
 * code, holding one 16-byte stub per site.  A site's CALL lands in its
 * stub, which loads the struct site * into r11 and jumps to the shared
 * entry trampoline, so the trampoline never has to search for the site. */
#ifndef NEEDLE_STUB_AREA_H
#define NEEDLE_STUB_AREA_H

#include <stddef.h>
#include <stdint.h>

struct site;

/* Build stubs for sites[0..cnt) whose code spans [lo, hi).  On success
 * each site's ->stub is set.  0 or negative errno. */
int stub_area_create(struct site **sites, size_t cnt, uint64_t lo, uint64_t hi);

#endif
