/* trace_writer.h - writes needle.data: sections with CRCs, and chunks of
 * raw buffer events re-encoded compactly (varint tags and time deltas). */
#ifndef NEEDLE_TRACE_WRITER_H
#define NEEDLE_TRACE_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "format/thread_stack.h"
#include "format/trace_format.h"

struct trace_writer {
	FILE *f;
	int err;            /* first write error (positive errno), sticky */
	int tracer;         /* enum trace_tracer */
	struct stack_map stacks;
	uint8_t *buf;
	size_t buf_cap;
	uint64_t events, chunks, salvaged;
	uint64_t bytes;     /* handed to f so far */
};

int trace_writer_open(struct trace_writer *w, FILE *f, int tracer);
int trace_writer_section(struct trace_writer *w, uint32_t type, const void *payload, uint64_t len);
/* Encode and write one chunk of raw 8-byte events (shm_layout.h).  The
 * header is the file's: every field of the shared-memory chunk, open_depth,
 * serial and comm included. */
int trace_writer_chunk(struct trace_writer *w, const struct sec_chunk *hdr, const uint64_t *events, uint32_t n);
/* Flush and report the first error: 0 or negative errno. */
int trace_writer_finish(struct trace_writer *w);

#endif
