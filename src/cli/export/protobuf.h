/* protobuf.h - the few protocol buffer encodings the exports write
 * (perfetto.c's TracePacket stream, pprof.c's profile.proto): varints and
 * length-delimited fields appended to a view_buf.  Nested messages are
 * built in a buffer of their own and appended with pb_bytes, so that
 * every length is known when it is written.  An allocation failure leaves
 * the buffer marked (view_buf.oom) and the rest of the writes no-ops. */
#ifndef NEEDLE_EXPORT_PROTOBUF_H
#define NEEDLE_EXPORT_PROTOBUF_H

#include <stdint.h>
#include <string.h>

#include "cli/view/view_format.h"
#include "format/varint.h"

static inline void pb_raw(struct view_buf *b, const void *data, size_t n)
{
	view_buf_put(b, data, n);
}

static inline void pb_varint(struct view_buf *b, uint64_t v)
{
	if (!view_buf_reserve(b, 10))
		b->len += varint_put((uint8_t *)b->p + b->len, v);
}

/* Field of wire type 0 (varint: int64, uint64, bool). */
static inline void pb_uint(struct view_buf *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3 | 0);
	pb_varint(b, v);
}

/* Field of wire type 2 (bytes, string, a nested message). */
static inline void pb_bytes(struct view_buf *b, unsigned field, const void *data, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, data, n);
}

static inline void pb_string(struct view_buf *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

#endif
