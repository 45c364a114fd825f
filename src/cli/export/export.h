/* export.h - `needle export` and its formats (export.c, one file per
 * format).  This folder may include cli/view, reader, format, cli/util
 * and common. */
#ifndef NEEDLE_EXPORT_H
#define NEEDLE_EXPORT_H

#include <stdio.h>

#include "reader/trace_reader.h"

int cmd_export(int argc, char **argv);
/* needle dump: every event as a line (dump.c). */
int cmd_dump(int argc, char **argv);

/* Each writes the whole trace to out; 0, or 1 if the trace is damaged. */
int export_perfetto(struct trace *t, FILE *out);
int export_chrome(struct trace *t, FILE *out);
/* The calls filter shows (view_filter_start'ed, or NULL: all) that defer
 * keeps (view_defer_start'ed: -t, or NULL), of thread tid only (0: every
 * thread): dump --chrome -F/-N/-D/-t/--tid. */
struct view_filter;
struct view_defer;
int export_chrome_filtered(struct trace *t, FILE *out, struct view_filter *filter, struct view_defer *defer,
			   uint32_t tid);
int export_folded(struct trace *t, FILE *out);
/* uftrace dump --flame-graph's form (folded.c). */
struct folded_opts {
	uint64_t sample_ns; /* values in samples of this many ns; 0: in ns */
	int merge_threads;  /* every thread's stacks under one root, unnamed */
};
int export_folded_opts(struct trace *t, FILE *out, const struct folded_opts *o);
int export_pprof(struct trace *t, FILE *out);
/* --format=otlp: the spans of the calls of the functions spans[] names
 * (all without) that lasted min_ns or more; json: OTLP/JSON, else the
 * protobuf ExportTraceServiceRequest. */
struct otlp_opts {
	const char *const *spans;
	size_t span_cnt;
	uint64_t min_ns;
	int json;
};
int export_otlp(struct trace *t, FILE *out, const struct otlp_opts *o);
/* A uftrace data directory at dir (which must not exist): 0, or 1 after
 * printing why (dir is then not created). */
int export_uftrace(struct trace *t, const char *dir);
/* A CTF 1.8 trace at dir (which must not exist), for babeltrace2 and
 * Trace Compass: 0, or 1 after printing why. */
int export_ctf(struct trace *t, const char *dir);

#endif
