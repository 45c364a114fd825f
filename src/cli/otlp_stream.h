/* otlp_stream.h - needle record --otlp-endpoint's span stream (see
 * otlp_stream.c); main.c sets record_stream_open to it. */
#ifndef NEEDLE_OTLP_STREAM_H
#define NEEDLE_OTLP_STREAM_H

struct recording;
struct record_stream_ops;

void *otlp_stream_open(struct recording *r, const struct record_stream_ops **ops);

#endif
