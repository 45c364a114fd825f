/* reader_internal.h - what trace_reader.c (opening) lends trace_iter.c
 * (iterating); private to src/reader. */
#ifndef NEEDLE_READER_INTERNAL_H
#define NEEDLE_READER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format/trace_format.h"
#include "reader/trace_reader.h"

/* The error text, when err is not NULL. */
void reader_error(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* len bytes at off of f: 0, or -1 on a short read or an error. */
int reader_read_at(FILE *f, uint64_t off, void *buf, size_t len);
/* The size of a chunk's header in this file's format version, and the
 * header at p decoded. */
size_t reader_chunk_header_size(const struct trace *t);
void reader_chunk_header(const struct trace *t, const uint8_t *p, struct sec_chunk *c);

/* Module m's load bias in the recorded process from its file e (its
 * sites' addresses less their symbols' values, two that agree): 1, or 0
 * when the file has not the trace's functions where the trace saw them
 * (gone, rebuilt). */
struct Elf;
int reader_module_bias(struct trace *t, size_t m, struct Elf *e, uint64_t *bias);

/* Site i's shown name from its symbol, demangled as mode says
 * (trace_set_demangle's, for one site). */
void reader_demangle_site(struct trace *t, size_t i, enum trace_demangle mode);
/* Give s (malloc'ed) to the trace, freed when it is closed: 0, or -1
 * (s not taken). */
int reader_own_name(struct trace *t, char *s);

#endif
