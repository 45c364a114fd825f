/* libc_protos.h - the C library's IFUNC'd string and memory functions
 * and system call stubs as DWARF would describe them, had their
 * implementations any, and the flags of a few system calls by name
 * (libc_protos.c). */
#ifndef NEEDLE_LIBC_PROTOS_H
#define NEEDLE_LIBC_PROTOS_H

#include <stddef.h>

#include "cli/args/dwarf_params.h"

size_t libc_protos_count(void);
/* Entry i (< libc_protos_count()) as a dw_func: its sym points into the
 * table (never freed), its items typed and named, f->ifunc set; an
 * enum's items have enum_id an index of libc_protos_enums(). */
void libc_proto_func(size_t i, struct dw_func *f);
/* Does entry i have a value of an enum (flags, a signal)?  Those take
 * the place of what debug info says of the function. */
int libc_proto_has_enum(size_t i);
/* The enums of the entries, in out->enums (static: never freed, out
 * has nothing else). */
void libc_protos_enums(struct dw_info *out);

#endif
