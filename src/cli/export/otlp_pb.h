/* otlp_pb.h - OTLP's trace messages in protobuf, as export --format=otlp
 * writes them to a file and needle record --otlp-endpoint sends them to
 * a collector (an ExportTraceServiceRequest, what OTLP/HTTP takes at
 * /v1/traces): KeyValue attributes, a Span, the resource, and the request
 * around spans already encoded.  Field numbers are those of
 * opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto. */
#ifndef NEEDLE_EXPORT_OTLP_PB_H
#define NEEDLE_EXPORT_OTLP_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/export/protobuf.h"

#define OTLP_SPAN_KIND_INTERNAL 1

/* Trace and span ids are made by mixing a seed and a counter
 * (murmur3's finalizer): distinct inputs give distinct ids. */
static inline uint64_t otlp_id_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static inline void otlp_pb_fixed64(struct view_buf *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3 | 1);
	pb_raw(b, &v, 8); /* little-endian on x86-64 */
}

/* A KeyValue field {key = 1, value = 2: AnyValue} whose AnyValue body is
 * any_len bytes, written by the caller right after.  The lengths are
 * counted, not buffered: no allocation per attribute (a span has three,
 * and needle record --otlp-endpoint encodes a span per call). */
static inline void otlp_pb_kv_head(struct view_buf *b, unsigned field, const char *key, size_t any_len)
{
	size_t klen = strlen(key);
	size_t kv_len = 1 + varint_len(klen) + klen + 1 + varint_len(any_len) + any_len;
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, kv_len);
	pb_bytes(b, 1, key, klen);
	pb_varint(b, (uint64_t)2 << 3 | 2);
	pb_varint(b, any_len);
}

static inline void otlp_pb_kv_string(struct view_buf *b, unsigned field, const char *key, const char *val)
{
	size_t vlen = strlen(val);
	otlp_pb_kv_head(b, field, key, 1 + varint_len(vlen) + vlen);
	pb_bytes(b, 1, val, vlen); /* AnyValue.string_value */
}

static inline void otlp_pb_kv_int(struct view_buf *b, unsigned field, const char *key, int64_t val)
{
	otlp_pb_kv_head(b, field, key, 1 + varint_len((uint64_t)val));
	pb_uint(b, 3, (uint64_t)val); /* AnyValue.int_value */
}

/* A Span's body in s (empty on entry): ids, name, kind INTERNAL, start
 * and end (Unix ns), and the attributes every span has (code.function,
 * thread.id, thread.name); the caller may add attributes (field 9), then
 * appends it with otlp_pb_span_end. */
static inline void otlp_pb_span_begin(struct view_buf *s, const uint8_t trace_id[16], const uint8_t span_id[8],
				      const uint8_t *parent_id, const char *name, uint64_t start, uint64_t end,
				      uint32_t tid, const char *thread_name)
{
	pb_bytes(s, 1, trace_id, 16);
	pb_bytes(s, 2, span_id, 8);
	if (parent_id)
		pb_bytes(s, 4, parent_id, 8);
	pb_string(s, 5, name);
	pb_uint(s, 6, OTLP_SPAN_KIND_INTERNAL);
	otlp_pb_fixed64(s, 7, start);
	otlp_pb_fixed64(s, 8, end);
	otlp_pb_kv_string(s, 9, "code.function", name);
	otlp_pb_kv_int(s, 9, "thread.id", tid);
	otlp_pb_kv_string(s, 9, "thread.name", thread_name);
}

/* Append the span in s to b as a ScopeSpans.spans field; s is emptied. */
static inline void otlp_pb_span_end(struct view_buf *b, struct view_buf *s)
{
	pb_bytes(b, 2, s->p, s->len);
	b->oom |= s->oom;
	s->len = 0;
}

/* The resource's attributes (Resource.attributes, field 1 each). */
static inline void otlp_pb_resource(struct view_buf *r, const char *service, int64_t pid, const char *cmdline,
				    const char *exe)
{
	otlp_pb_kv_string(r, 1, "service.name", service);
	otlp_pb_kv_int(r, 1, "process.pid", pid);
	otlp_pb_kv_string(r, 1, "process.command_line", cmdline);
	otlp_pb_kv_string(r, 1, "process.executable.path", exe);
}

/* The start of an ExportTraceServiceRequest whose spans (ScopeSpans.spans
 * fields, spans_len bytes) follow it: ExportTraceServiceRequest {
 * resource_spans = 1: ResourceSpans { resource = 1, scope_spans = 2:
 * ScopeSpans { scope = 1: {name: "needle"}, spans = 2 ... } } }. */
static inline void otlp_pb_request_head(struct view_buf *h, const struct view_buf *resource, uint64_t spans_len)
{
	struct view_buf sc = { 0 }, scope = { 0 }, head = { 0 };
	pb_string(&sc, 1, "needle");
	pb_bytes(&scope, 1, sc.p, sc.len); /* ScopeSpans.scope */
	uint64_t scope_len = scope.len + spans_len;
	pb_bytes(&head, 1, resource->p, resource->len); /* ResourceSpans.resource */
	pb_varint(&head, (uint64_t)2 << 3 | 2);
	pb_varint(&head, scope_len); /* ResourceSpans.scope_spans */
	pb_varint(h, (uint64_t)1 << 3 | 2);
	pb_varint(h, head.len + scope_len); /* ExportTraceServiceRequest.resource_spans */
	pb_raw(h, head.p, head.len);
	pb_raw(h, scope.p, scope.len);
	h->oom |= sc.oom | scope.oom | head.oom | resource->oom;
	free(sc.p);
	free(scope.p);
	free(head.p);
}

#endif
