/* ctf.c - `needle export --format=ctf -o DIR`: a CTF 1.8 trace, read by
 * babeltrace2 and Trace Compass:
 *
 *   metadata              TSDL text: the clock (CLOCK_MONOTONIC, ns), the
 *                         stream's packet context and event header, the
 *                         events' fields
 *   stream_TID_SERIAL     a thread's events, in packets
 *
 * Events: func_entry {tid, depth, addr, name, args[]}, func_exit {tid,
 * depth, addr, name, duration, retval[]} (duration -1: not known: its
 * entry is not in the trace, or its exit was lost), lost {tid, count}.
 * args and retval are sequences of {name, value}, the values recorded
 * with -A/-R as needle dump writes them (arg1 = 5, key = "user:42"),
 * empty when none (a sequence, not an empty string: babeltrace2 2.0.4
 * shows an empty string field with the text of an earlier event).  A call
 * still running at the end has no exit, as in the file.
 *
 * Invariants: one pass over the events, O(1) per event; a packet per
 * filled buffer of a thread (its own header and context: a packet is
 * whole whatever follows), at most one file open at a time, buffers of
 * 64 KiB each, less when there are many threads: memory grows with the
 * threads, not the events; the directory is whole or absent
 * (export_dir.h).  Timestamps are CLOCK_MONOTONIC nanoseconds, the clock
 * needle dump and the uftrace export print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/export/export.h"
#include "cli/export/export_dir.h"
#include "cli/util/cli_util.h"
#include "cli/view/view.h"
#include "cli/view/view_format.h"

#define CTF_MAGIC 0xC1FC1FC1u
enum { EV_ENTRY = 0, EV_EXIT = 1, EV_LOST = 2 };

/* packet.header (8 bytes) + packet.context (4 x u64 + u32) = 44 bytes. */
#define PACKET_HEADER_BYTES 44

struct ctf_thread {
	uint8_t *buf;
	size_t len;        /* event bytes after the packet's header */
	uint64_t first_ns, last_ns;
	int written;
};

struct ctf {
	struct trace *t;
	struct export_dir out;
	struct ctf_thread *th;
	size_t cap;        /* bytes of events a packet holds */
	uint64_t mono0;
	char values[8192]; /* an event's (name, value) pairs */
};

static void put(uint8_t *p, size_t *at, const void *v, size_t n)
{
	memcpy(p + *at, v, n);
	*at += n;
}

static void flush_packet(struct ctf *c, uint32_t i)
{
	struct ctf_thread *th = &c->th[i];
	if (!th->len)
		return;
	uint8_t head[PACKET_HEADER_BYTES];
	size_t at = 0;
	uint32_t magic = CTF_MAGIC, stream_id = 0, tid = c->t->threads[i].tid;
	uint64_t bits = (uint64_t)(PACKET_HEADER_BYTES + th->len) * 8;
	put(head, &at, &magic, 4);
	put(head, &at, &stream_id, 4);
	put(head, &at, &th->first_ns, 8); /* timestamp_begin */
	put(head, &at, &th->last_ns, 8);  /* timestamp_end */
	put(head, &at, &bits, 8);         /* content_size */
	put(head, &at, &bits, 8);         /* packet_size */
	put(head, &at, &tid, 4);
	char name[64];
	snprintf(name, sizeof(name), "stream_%u_%u", tid, c->t->threads[i].serial);
	/* The header and the events in one write of the buffer: the header
	 * has its room at the buffer's start. */
	memcpy(th->buf, head, PACKET_HEADER_BYTES);
	export_dir_put(&c->out, name, th->buf, PACKET_HEADER_BYTES + th->len, th->written);
	th->written = 1;
	th->len = 0;
}

/* Room for n more bytes in thread i's packet, a new packet if needed. */
static uint8_t *reserve(struct ctf *c, uint32_t i, size_t n, uint64_t ns)
{
	struct ctf_thread *th = &c->th[i];
	if (!th->buf) {
		/* A record bigger than a packet's room gets a buffer of its
		 * own size: never cut. */
		size_t size = PACKET_HEADER_BYTES + (n > c->cap ? n : c->cap);
		if (!(th->buf = malloc(size)))
			return NULL;
	} else if (th->len + n > c->cap) {
		flush_packet(c, i);
		if (n > c->cap) {
			uint8_t *b = realloc(th->buf, PACKET_HEADER_BYTES + n);
			if (!b)
				return NULL;
			th->buf = b;
		}
	}
	if (!th->len)
		th->first_ns = ns;
	th->last_ns = ns;
	return th->buf + PACKET_HEADER_BYTES + th->len;
}

static int ctf_event(const struct trace_event *ev, void *arg)
{
	struct ctf *c = arg;
	uint64_t ns = c->mono0 + ev->ns;
	uint32_t id, tid = ev->tid, depth = ev->depth;

	if (ev->kind == TEV_ENTRY && !(ev->flags & TEV_INHERITED))
		id = EV_ENTRY;
	else if (ev->kind == TEV_EXIT && !(ev->flags & TEV_OPEN))
		id = EV_EXIT;
	else if (ev->kind == TEV_LOST)
		id = EV_LOST;
	else
		return 0;
	const char *name = id == EV_LOST ? "" : trace_site_name(c->t, ev->site);
	uint64_t addr = id != EV_LOST && ev->site < c->t->site_cap ? c->t->sites[ev->site].func_ip : 0;
	/* The values as (name, value) pairs, NUL-terminated one after the
	 * other in c->values; their count. */
	size_t vlen = 0;
	uint32_t vcnt = 0;
	if (id != EV_LOST && ev->data_len) {
		char vn[64], vv[512];
		size_t at = 0;
		while (view_value_next(c->t, ev, &at, vn, sizeof(vn), vv, sizeof(vv))) {
			size_t a = strlen(vn) + 1, b = strlen(vv) + 1;
			if (vlen + a + b > sizeof(c->values))
				break;
			memcpy(c->values + vlen, vn, a);
			memcpy(c->values + vlen + a, vv, b);
			vlen += a + b;
			vcnt++;
		}
	}
	size_t nlen = strlen(name);
	/* header (id, timestamp) + tid + depth + addr + name + duration
	 * (exits) + the values' count and text. */
	size_t n = 4 + 8 + 4 + 4 + 8 + nlen + 1 + 8 + 4 + vlen;
	uint8_t *p = reserve(c, ev->thread, n, ns);
	if (!p) {
		cli_error("out of memory");
		c->out.err = 1;
		return 1;
	}
	size_t at = 0;
	put(p, &at, &id, 4);
	put(p, &at, &ns, 8);
	put(p, &at, &tid, 4);
	if (id == EV_LOST) {
		uint64_t lost = ev->lost;
		put(p, &at, &lost, 8);
	} else {
		put(p, &at, &depth, 4);
		put(p, &at, &addr, 8);
		put(p, &at, name, nlen + 1);
		if (id == EV_EXIT) {
			int64_t dur = ev->flags & (TEV_ORPHAN | TEV_EXIT_LOST | TEV_BEFORE) ? -1 : (int64_t)(ev->ns - ev->entry_ns);
			put(p, &at, &dur, 8);
		}
		put(p, &at, &vcnt, 4);
		put(p, &at, c->values, vlen);
	}
	c->th[ev->thread].len += at;
	return c->out.err;
}

static int write_metadata(struct ctf *c)
{
	struct trace *t = c->t;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -1;
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	const char *prog = t->argv && t->argv[0] ? t->argv[0] : "program";
	const char *base = strrchr(prog, '/');
	fputs("/* CTF 1.8 */\n\n"
	      "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	      "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	      "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	      "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
	      "typealias integer { size = 64; align = 8; signed = false; base = 16; } := uint64_hex_t;\n\n"
	      "trace {\n\tmajor = 1;\n\tminor = 8;\n\tbyte_order = le;\n"
	      "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint32_t stream_id;\n\t};\n};\n\n",
	      f);
	fprintf(f, "env {\n\tdomain = \"ust\";\n\ttracer_name = \"needle\";\n\thostname = \"%s\";\n", host);
	fprintf(f, "\tprocname = \"");
	for (const char *p = base ? base + 1 : prog; *p; p++)
		if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
			fputc(*p, f);
	fprintf(f, "\";\n\tvpid = %u;\n};\n\n", t->have_process ? t->process.pid : 0);
	fputs("clock {\n\tname = monotonic;\n\tdescription = \"CLOCK_MONOTONIC\";\n\tfreq = 1000000000;\n"
	      "\toffset = 0;\n};\n\n"
	      "typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } "
	      ":= uint64_clock_monotonic_t;\n\n"
	      "stream {\n\tid = 0;\n"
	      "\tpacket.context := struct {\n\t\tuint64_clock_monotonic_t timestamp_begin;\n"
	      "\t\tuint64_clock_monotonic_t timestamp_end;\n\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
	      "\t\tuint32_t tid;\n\t};\n"
	      "\tevent.header := struct {\n\t\tuint32_t id;\n\t\tuint64_clock_monotonic_t timestamp;\n\t};\n};\n\n"
	      "event {\n\tname = \"func_entry\";\n\tid = 0;\n\tstream_id = 0;\n"
	      "\tfields := struct {\n\t\tuint32_t tid;\n\t\tuint32_t depth;\n\t\tuint64_hex_t addr;\n"
	      "\t\tstring name;\n\t\tuint32_t args_count;\n"
	      "\t\tstruct { string name; string value; } args[args_count];\n\t};\n};\n\n"
	      "event {\n\tname = \"func_exit\";\n\tid = 1;\n\tstream_id = 0;\n"
	      "\tfields := struct {\n\t\tuint32_t tid;\n\t\tuint32_t depth;\n\t\tuint64_hex_t addr;\n"
	      "\t\tstring name;\n\t\tint64_t duration;\n\t\tuint32_t retval_count;\n"
	      "\t\tstruct { string name; string value; } retval[retval_count];\n\t};\n};\n\n"
	      "event {\n\tname = \"lost\";\n\tid = 2;\n\tstream_id = 0;\n"
	      "\tfields := struct {\n\t\tuint32_t tid;\n\t\tuint64_t count;\n\t};\n};\n",
	      f);
	if (fclose(f)) {
		free(text);
		return -1;
	}
	int r = export_dir_put(&c->out, "metadata", text, len, 0);
	free(text);
	return r;
}

int export_ctf(struct trace *t, const char *dir)
{
	struct ctf c = { .t = t };
	int ret = 1;
	size_t n = t->thread_cnt;

	if (export_dir_begin(&c.out, dir))
		return 1;
	c.mono0 = trace_monotonic_base(t);
	/* 64 KiB a thread's packet, less with many threads: 64 MiB in all. */
	c.cap = n ? (64u << 20) / n : 65536;
	if (c.cap > 65536)
		c.cap = 65536;
	if (c.cap < 4096)
		c.cap = 4096;
	if (!(c.th = calloc(n ? n : 1, sizeof(*c.th)))) {
		cli_error("out of memory");
		goto out;
	}
	if (view_each_event(t, 0, ctf_event, &c) || c.out.err)
		goto out;
	for (size_t i = 0; i < n; i++)
		flush_packet(&c, (uint32_t)i);
	if (c.out.err || write_metadata(&c))
		goto out;
	if (export_dir_commit(&c.out))
		goto free;
	ret = 0;
out:
	if (ret)
		export_dir_abort(&c.out);
free:
	for (size_t i = 0; c.th && i < n; i++)
		free(c.th[i].buf);
	free(c.th);
	return ret;
}
