/* libc_protos.h - the C library's IFUNC'd string and memory functions
 * as DWARF would describe them, had their implementations any
 * (libc_protos.c). */
#ifndef NEEDLE_LIBC_PROTOS_H
#define NEEDLE_LIBC_PROTOS_H

#include <stddef.h>

#include "cli/args/dwarf_params.h"

size_t libc_protos_count(void);
/* Entry i (< libc_protos_count()) as a dw_func: its sym points into the
 * table (never freed), its items typed and named, f->ifunc set. */
void libc_proto_func(size_t i, struct dw_func *f);

#endif
