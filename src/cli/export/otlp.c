/* otlp.c - `needle export --format=otlp`: OpenTelemetry traces, the
 * calls of chosen functions as spans, in OTLP's protobuf encoding (an
 * ExportTraceServiceRequest, what an OTLP/HTTP collector takes at
 * /v1/traces) or, with --json, OTLP/JSON.
 *
 * Which calls: those of the functions --spans GLOB names (every function
 * without it) that lasted -t TIME or more (0 without it).  A span's parent
 * is the nearest enclosing chosen call of its thread, and a trace is an
 * outermost chosen call with what it encloses, on one thread: any call
 * that encloses a chosen one lasted at least as long, so whether it is
 * chosen too is known from its name, before its exit.
 *
 * A span: name (the function), kind INTERNAL, start and end (Unix time,
 * nanoseconds: the trace's CLOCK_MONOTONIC times moved by the offset of
 * the file's modification, its end, to CLOCK_MONOTONIC's at the
 * recording's end), attributes code.function, thread.id, thread.name and
 * the values recorded with -A/-R (arg1, ..., retval: as replay writes
 * them).  The resource: service.name (the program), process.pid,
 * process.command_line, process.executable.path.
 *
 * Ids: a trace id is 16 bytes, a span id 8, derived from the trace
 * file's identity and a counter of calls, so that exporting the same file
 * twice gives the same ids.
 *
 * Invariants: one pass over the events, O(1) per event (the nearest
 * chosen ancestor is kept by depth); memory is the stacks' (a call's
 * entry values are kept until its exit, by depth); the protobuf's spans
 * go to a temporary file first, since their total length precedes them,
 * then are copied after the request's header. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/export/export.h"
#include "cli/export/otlp_pb.h"
#include "cli/util/cli_util.h"
#include "cli/view/view.h"
#include "cli/view/view_filter.h"
#include "cli/view/view_format.h"

struct otlp_frame {
	uint64_t span;      /* this call's span id (every call gets one) */
	uint64_t start_ns;
	int chosen_name;    /* its function is one --spans names */
	uint32_t parent;    /* depth + 1 of the nearest chosen call enclosing it, 0: none */
	uint32_t root;      /* depth + 1 of the outermost chosen call enclosing it or it, 0: none */
	uint64_t root_span; /* that call's span id: the trace's */
	char *values;       /* its entry's values (-A), "name\0value\0..." */
	size_t values_len, values_cap;
};

struct otlp_thread {
	struct otlp_frame *f;
	size_t cap;
};

struct otlp {
	struct trace *t;
	const struct otlp_opts *o;
	struct otlp_thread *th;
	struct view_filter sel; /* --spans, as -F patterns: globs or regular expressions */
	uint64_t next_span;
	uint64_t id_seed;    /* from the file's identity */
	int64_t unix_offset; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	uint64_t mono0;
	uint64_t spans;
	FILE *spans_out;     /* protobuf: the spans, each a ScopeSpans.spans field */
	FILE *out;           /* json: the output */
	int json, oom;
	struct view_buf b;
};


/* A function --spans names (each site's answer kept by view_filter). */
static int site_chosen(struct otlp *x, uint32_t site)
{
	return !x->o->span_cnt || view_filter_names(&x->sel, site);
}

static struct otlp_frame *frame_at(struct otlp *x, uint32_t thread, uint32_t depth)
{
	struct otlp_thread *th = &x->th[thread];
	if (depth >= th->cap) {
		size_t n = th->cap ? th->cap * 2 : 64;
		while (n <= depth)
			n *= 2;
		struct otlp_frame *f = realloc(th->f, n * sizeof(*f));
		if (!f)
			return NULL;
		memset(f + th->cap, 0, (n - th->cap) * sizeof(*f));
		th->f = f;
		th->cap = n;
	}
	return &th->f[depth];
}

/* ---- JSON ---- */

/* A literal, its length counted by the compiler. */
#define JPUT(b, lit) view_buf_put(b, lit, sizeof(lit) - 1)

static void json_str(struct view_buf *b, const char *s)
{
	JPUT(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char e[8];
		if (c == '"' || c == '\\') {
			e[0] = '\\';
			e[1] = (char)c;
			view_buf_put(b, e, 2);
		} else if (c < 0x20) {
			snprintf(e, sizeof(e), "\\u%04x", c);
			view_buf_put(b, e, 6);
		} else {
			view_buf_put(b, (const char *)&c, 1);
		}
	}
	JPUT(b, "\"");
}

static void json_kv_string(struct view_buf *b, int first, const char *key, const char *val)
{
	if (!first)
		JPUT(b, ",");
	JPUT(b, "{\"key\":");
	json_str(b, key);
	JPUT(b, ",\"value\":{\"stringValue\":");
	json_str(b, val);
	JPUT(b, "}}");
}

static void json_kv_int(struct view_buf *b, int first, const char *key, int64_t val)
{
	char num[32];
	if (!first)
		JPUT(b, ",");
	JPUT(b, "{\"key\":");
	json_str(b, key);
	/* OTLP/JSON: 64-bit integers as strings. */
	snprintf(num, sizeof(num), "%lld", (long long)val);
	JPUT(b, ",\"value\":{\"intValue\":\"");
	view_buf_put(b, num, strlen(num));
	JPUT(b, "\"}}");
}

static void hex(char *out, const uint8_t *id, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * n] = 0;
}

/* ---- spans ---- */

static void trace_id_of(struct otlp *x, uint32_t thread, uint64_t root_span, uint8_t id[16])
{
	uint64_t a = otlp_id_mix(x->id_seed ^ root_span), b = otlp_id_mix(a ^ thread ^ 0x6e65656465ull);
	memcpy(id, &a, 8);
	memcpy(id + 8, &b, 8);
}

static void span_id_of(struct otlp *x, uint64_t span, uint8_t id[8])
{
	uint64_t a = otlp_id_mix(x->id_seed + span) | 1; /* never all zero */
	memcpy(id, &a, 8);
}

static void emit_span(struct otlp *x, const struct trace_event *ev, const struct otlp_frame *f,
		      const struct otlp_frame *parent)
{
	struct trace_thread *th = &x->t->threads[ev->thread];
	uint8_t tid[16], sid[8], pid[8];
	trace_id_of(x, ev->thread, f->root_span, tid);
	span_id_of(x, f->span, sid);
	if (parent)
		span_id_of(x, parent->span, pid);
	uint64_t start = (uint64_t)((int64_t)(x->mono0 + f->start_ns) + x->unix_offset);
	uint64_t end = (uint64_t)((int64_t)(x->mono0 + ev->ns) + x->unix_offset);
	const char *name = trace_site_name(x->t, ev->site);
	char rv[64], rval[512];
	size_t at = 0;
	int have_ret = ev->data_len && view_value_next(x->t, ev, &at, rv, sizeof(rv), rval, sizeof(rval));
	struct view_buf *b = &x->b;
	b->len = 0;
	if (!x->json) {
		struct view_buf s = { 0 };
		otlp_pb_span_begin(&s, tid, sid, parent ? pid : NULL, name, start, end, th->tid, th->name);
		for (size_t k = 0; k < f->values_len;) {
			const char *vn = f->values + k, *vv = vn + strlen(vn) + 1;
			otlp_pb_kv_string(&s, 9, vn, vv);
			k = (size_t)(vv - f->values) + strlen(vv) + 1;
		}
		if (have_ret)
			otlp_pb_kv_string(&s, 9, rv, rval);
		otlp_pb_span_end(b, &s);
		free(s.p);
		if (!b->oom)
			fwrite_unlocked(b->p, 1, b->len, x->spans_out);
	} else {
		char th_hex[33], s_hex[17], p_hex[17], num[32];
		hex(th_hex, tid, 16);
		hex(s_hex, sid, 8);
		if (x->spans)
			JPUT(b, ",");
		JPUT(b, "\n{\"traceId\":\"");
		view_buf_put(b, th_hex, 32);
		JPUT(b, "\",\"spanId\":\"");
		view_buf_put(b, s_hex, 16);
		JPUT(b, "\"");
		if (parent) {
			hex(p_hex, pid, 8);
			JPUT(b, ",\"parentSpanId\":\"");
			view_buf_put(b, p_hex, 16);
			JPUT(b, "\"");
		}
		JPUT(b, ",\"name\":");
		json_str(b, name);
		snprintf(num, sizeof(num), "%llu", (unsigned long long)start);
		JPUT(b, ",\"kind\":1,\"startTimeUnixNano\":\"");
		view_buf_put(b, num, strlen(num));
		snprintf(num, sizeof(num), "%llu", (unsigned long long)end);
		JPUT(b, "\",\"endTimeUnixNano\":\"");
		view_buf_put(b, num, strlen(num));
		JPUT(b, "\",\"attributes\":[");
		json_kv_string(b, 1, "code.function", name);
		json_kv_int(b, 0, "thread.id", th->tid);
		json_kv_string(b, 0, "thread.name", th->name);
		for (size_t k = 0; k < f->values_len;) {
			const char *vn = f->values + k, *vv = vn + strlen(vn) + 1;
			json_kv_string(b, 0, vn, vv);
			k = (size_t)(vv - f->values) + strlen(vv) + 1;
		}
		if (have_ret)
			json_kv_string(b, 0, rv, rval);
		JPUT(b, "]}");
		if (!b->oom)
			fwrite_unlocked(b->p, 1, b->len, x->out);
	}
	x->oom |= b->oom;
	x->spans++;
}

static int otlp_event(const struct trace_event *ev, void *arg)
{
	struct otlp *x = arg;
	uint32_t d = ev->depth;

	if (ev->kind == TEV_ENTRY) {
		struct otlp_frame *f = frame_at(x, ev->thread, d);
		struct otlp_frame *up = d ? frame_at(x, ev->thread, d - 1) : NULL;
		if (!f || (d && !up)) {
			x->oom = 1;
			return 1;
		}
		/* frame_at may move the array: take the caller again. */
		up = d ? &x->th[ev->thread].f[d - 1] : NULL;
		f->span = ++x->next_span;
		f->start_ns = ev->ns;
		/* A forked child's inherited calls are its parent's spans,
		 * not its own: its calls begin traces of their own. */
		f->chosen_name = site_chosen(x, ev->site) && !(ev->flags & (TEV_FLAT | TEV_INHERITED));
		f->parent = up ? (up->chosen_name ? d : up->parent) : 0;
		f->root = up && up->root ? up->root : f->chosen_name ? d + 1 : 0;
		f->root_span = up && up->root ? up->root_span : f->span;
		f->values_len = 0;
		char vn[64], vv[512];
		size_t at = 0;
		while (ev->data_len && view_value_next(x->t, ev, &at, vn, sizeof(vn), vv, sizeof(vv))) {
			size_t a = strlen(vn) + 1, b = strlen(vv) + 1;
			if (f->values_len + a + b > f->values_cap) {
				size_t cap = (f->values_len + a + b) * 2;
				char *p = realloc(f->values, cap);
				if (!p) {
					x->oom = 1;
					return 1;
				}
				f->values = p;
				f->values_cap = cap;
			}
			memcpy(f->values + f->values_len, vn, a);
			memcpy(f->values + f->values_len + a, vv, b);
			f->values_len += a + b;
		}
		return 0;
	}
	/* A span needs both ends: an exit with its entry, returned (or
	 * unwound: it ended then). */
	if (ev->kind != TEV_EXIT || (ev->flags & TEV_UNTIMED))
		return 0;
	struct otlp_thread *th = &x->th[ev->thread];
	if (d >= th->cap)
		return 0;
	struct otlp_frame *f = &th->f[d];
	if (!f->chosen_name || ev->ns - ev->entry_ns < x->o->min_ns)
		return 0;
	emit_span(x, ev, f, f->parent ? &th->f[f->parent - 1] : NULL);
	return x->oom;
}

/* The Resource's attributes. */
static void resource(struct otlp *x, struct view_buf *r)
{
	struct trace *t = x->t;
	const char *prog = t->argv && t->argv[0] ? t->argv[0] : "program";
	const char *base = strrchr(prog, '/');
	char cmd[4096];
	size_t n = 0;
	cmd[0] = 0;
	for (uint32_t i = 0; t->argv && i < t->process.argc && n + 2 < sizeof(cmd); i++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", i ? " " : "", t->argv[i]);
	if (!x->json) {
		otlp_pb_resource(r, base ? base + 1 : prog, t->have_process ? t->process.pid : 0, cmd, prog);
	} else {
		json_kv_string(r, 1, "service.name", base ? base + 1 : prog);
		json_kv_int(r, 0, "process.pid", t->have_process ? t->process.pid : 0);
		json_kv_string(r, 0, "process.command_line", cmd);
		json_kv_string(r, 0, "process.executable.path", prog);
	}
}

int export_otlp(struct trace *t, FILE *out, const struct otlp_opts *o)
{
	struct otlp x = { .t = t, .o = o, .json = o->json, .out = out };
	struct view_buf r = { 0 }, h = { 0 };
	int err = 1;
	struct stat st;

	x.mono0 = trace_monotonic_base(t);
	/* Unix time: the file was last written when the recording ended,
	 * at CLOCK_MONOTONIC ns1 (the CLOCK section's last sample). */
	if (!stat(t->path, &st) && t->have_clock && t->clock.ns1)
		x.unix_offset = (int64_t)((uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec) -
				(int64_t)t->clock.ns1;
	x.id_seed = otlp_id_mix((uint64_t)st.st_ino ^ otlp_id_mix((uint64_t)st.st_size) ^ otlp_id_mix((uint64_t)st.st_mtim.tv_nsec));
	for (size_t i = 0; i < o->span_cnt; i++)
		if (view_filter_add(&x.sel, "export", o->spans[i], 0))
			goto out;
	if (!(x.th = calloc(t->thread_cnt ? t->thread_cnt : 1, sizeof(*x.th))) || view_filter_start(&x.sel, t))
		goto oom;
	resource(&x, &r);
	if (!x.json) {
		if (!(x.spans_out = tmpfile())) {
			cli_error("export: a temporary file for the spans: %s", strerror(errno));
			goto out;
		}
	} else {
		fputs("{\"resourceSpans\":[{\"resource\":{\"attributes\":[", out);
		fwrite_unlocked(r.p, 1, r.len, out);
		fputs("]},\"scopeSpans\":[{\"scope\":{\"name\":\"needle\"},\"spans\":[", out);
	}
	if (view_each_event(t, 0, otlp_event, &x))
		goto out;
	if (x.oom || r.oom)
		goto oom;
	if (x.json) {
		fputs("\n]}]}]}\n", out);
	} else {
		/* ExportTraceServiceRequest { resource_spans = 1: ResourceSpans
		 * { resource = 1, scope_spans = 2: ScopeSpans { scope = 1,
		 * spans = 2 (in the temporary file) } } }. */
		long spans_len = ftell(x.spans_out);
		if (spans_len < 0 || fflush(x.spans_out) || fseek(x.spans_out, 0, SEEK_SET)) {
			cli_error("export: the temporary file of the spans: %s", strerror(errno));
			goto out;
		}
		otlp_pb_request_head(&h, &r, (uint64_t)spans_len);
		if (h.oom)
			goto oom;
		fwrite_unlocked(h.p, 1, h.len, out);
		char buf[65536];
		size_t n;
		while ((n = fread(buf, 1, sizeof(buf), x.spans_out)) > 0)
			fwrite_unlocked(buf, 1, n, out);
		if (ferror(x.spans_out)) {
			cli_error("export: reading back the spans: %s", strerror(errno));
			goto out;
		}
	}
	if (!x.spans)
		cli_error("warning: no call chosen as a span (--spans names no function that ran, or -t is longer than "
			  "every call)");
	err = 0;
	goto out;
oom:
	cli_error("out of memory");
out:
	if (x.spans_out)
		fclose(x.spans_out);
	for (size_t i = 0; x.th && i < t->thread_cnt; i++) {
		for (size_t k = 0; k < x.th[i].cap; k++)
			free(x.th[i].f[k].values);
		free(x.th[i].f);
	}
	free(x.th);
	view_filter_free(&x.sel);
	free(x.b.p);
	free(r.p);
	free(h.p);
	return err;
}
