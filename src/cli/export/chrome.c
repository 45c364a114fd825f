/* export_chrome.c - Chrome trace event JSON ({"traceEvents": [...]}), which
 * chrome://tracing, Perfetto and speedscope open: a B/E event pair per
 * call, the process and thread names as metadata events.
 *
 * Invariants: one pass, O(1) per event (a line is built in a buffer and
 * written with one call); every B has its E, calls still running or whose
 * exit was lost included (marked in args); exits without an entry are left
 * out.  Timestamps are microseconds with the nanoseconds as 3 decimals,
 * formatted from integers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/util/cli_util.h"
#include "cli/export/export.h"
#include "cli/view/view.h"
#include "cli/view/view_defer.h"
#include "cli/view/view_filter.h"
#include "cli/view/view_format.h"

struct chrome {
	struct trace *t;
	FILE *out;
	int first;
	struct view_buf b;
	struct view_filter *filter; /* dump --chrome's -F/-N/-D, or NULL */
	struct view_defer *defer;   /* ... and its -t, or NULL */
};

static void put(struct chrome *c, const char *s, size_t n)
{
	view_buf_put(&c->b, s, n);
}

#define PUT(c, lit) put(c, "" lit, sizeof(lit) - 1) /* a literal only: its sizeof is its length */

static void put_u64(struct chrome *c, uint64_t v)
{
	if (!view_buf_reserve(&c->b, 24))
		c->b.len += (size_t)cli_format_u64(c->b.p + c->b.len, v);
}

/* ns as microseconds: "12.345". */
static void put_us(struct chrome *c, uint64_t ns)
{
	if (view_buf_reserve(&c->b, 28))
		return;
	c->b.len += (size_t)cli_format_u64(c->b.p + c->b.len, ns / 1000);
	c->b.p[c->b.len++] = '.';
	c->b.p[c->b.len++] = (char)('0' + ns / 100 % 10);
	c->b.p[c->b.len++] = (char)('0' + ns / 10 % 10);
	c->b.p[c->b.len++] = (char)('0' + ns % 10);
}

static void json_string(struct chrome *c, const char *s)
{
	PUT(c, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			char e[2] = { '\\', (char)ch };
			put(c, e, 2);
		} else if (ch < 0x20) {
			char e[8];
			snprintf(e, sizeof(e), "\\u%04x", ch);
			put(c, e, 6);
		} else {
			put(c, (const char *)&ch, 1);
		}
	}
	PUT(c, "\"");
}

static void sep(struct chrome *c)
{
	if (c->first)
		PUT(c, "\n");
	else
		PUT(c, ",\n");
	c->first = 0;
}

static void flush_line(struct chrome *c)
{
	if (!c->b.oom)
		fwrite_unlocked(c->b.p, 1, c->b.len, c->out);
	c->b.len = 0;
}

/* ,"ts":T,"pid":P,"tid":T}: P the process of the event's thread (a
 * forked child is a process of its own). */
static void put_where(struct chrome *c, const struct trace_event *ev)
{
	PUT(c, ",\"ts\":");
	put_us(c, ev->ns);
	PUT(c, ",\"pid\":");
	put_u64(c, trace_thread_pid(c->t, ev->thread));
	PUT(c, ",\"tid\":");
	put_u64(c, ev->tid);
}

/* ,"args":{"arg1":"5",...} or {"retval":"0"}: the values an event
 * carries (needle record -A / -R), and "cpu" for a -W cpu note, shown in
 * the UI's details pane.  The
 * values are formatted as replay shows them, one per key. */
static void put_values(struct chrome *c, const struct trace_event *ev)
{
	char name[64], val[320];
	size_t at = 0;
	int first = 1;

	while (view_value_next(c->t, ev, &at, name, sizeof(name), val, sizeof(val))) {
		if (first)
			PUT(c, ",\"args\":{");
		else
			PUT(c, ",");
		first = 0;
		json_string(c, name);
		PUT(c, ":");
		json_string(c, val);
	}
	/* -W cpu's note: the CPU the thread moved to. */
	uint64_t cpu;
	if (view_watch_cpu(ev->data, ev->data_len, &cpu)) {
		if (first)
			PUT(c, ",\"args\":{\"cpu\":");
		else
			PUT(c, ",\"cpu\":");
		put_u64(c, cpu);
		first = 0;
	}
	if (!first)
		PUT(c, "}");
}

static int chrome_call(const struct trace_event *ev, void *arg);

static int chrome_event(const struct trace_event *ev, void *arg)
{
	struct chrome *c = arg;

	/* Every entry and exit goes through the filter, shown or not: they
	 * open and close its subtrees. */
	if (c->filter && (ev->kind == TEV_ENTRY || ev->kind == TEV_EXIT) && !view_filter_shows(c->filter, ev))
		return 0;
	/* -t: a call's B and E once it is known to have lasted long enough. */
	if (c->defer && (ev->kind == TEV_EXIT || (ev->kind == TEV_ENTRY && !(ev->flags & TEV_FLAT)))) {
		int err = view_defer_event(c->defer, ev, chrome_call, c);
		return err < 0 ? (c->b.oom = 1) : err;
	}
	return chrome_call(ev, arg);
}

static int chrome_call(const struct trace_event *ev, void *arg)
{
	struct chrome *c = arg;

	if (ev->kind == TEV_KERNEL && ev->kev.kind == KEV_COMM) {
		/* A rename: the thread's name from here on (the viewers keep
		 * the last), and the process's when it is its first thread,
		 * as uftrace writes it.  An exec's name is the program's. */
		if (ev->kev.flags & KEV_COMM_EXEC)
			return 0;
		char comm[16];
		uint32_t pid = trace_thread_pid(c->t, ev->thread);
		view_kernel_comm(&ev->kev, comm);
		for (int thread = ev->tid != pid; thread < 2; thread++) {
			sep(c);
			if (thread)
				PUT(c, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
			else
				PUT(c, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
			put_u64(c, pid);
			if (thread) {
				PUT(c, ",\"tid\":");
				put_u64(c, ev->tid);
			}
			PUT(c, ",\"args\":{\"name\":");
			json_string(c, comm);
			PUT(c, "}}");
		}
	} else if (ev->kind == TEV_KERNEL) {
		/* A complete slice ("X") on the thread: a system call or an
		 * interval off the CPU nests inside the call that made it;
		 * a fault is an instant. */
		char name[64], detail[64];
		view_kernel_slice(ev, name, sizeof(name), detail, sizeof(detail));
		sep(c);
		PUT(c, "{\"name\":");
		json_string(c, name);
		if (ev->kev.kind == KEV_SYSCALL)
			PUT(c, ",\"cat\":\"syscall\"");
		else if (ev->kev.kind == KEV_OFFCPU)
			PUT(c, ",\"cat\":\"sched\"");
		else if (ev->kev.kind == KEV_PROBE)
			PUT(c, ",\"cat\":\"usdt\"");
		else
			PUT(c, ",\"cat\":\"fault\"");
		if (ev->kev.kind == KEV_FAULT || ev->kev.kind == KEV_PROBE) {
			PUT(c, ",\"ph\":\"i\",\"s\":\"t\"");
		} else {
			PUT(c, ",\"ph\":\"X\",\"dur\":");
			put_us(c, ev->kev_ns);
		}
		put_where(c, ev);
		if (*detail) {
			if (ev->kev.kind == KEV_FAULT)
				PUT(c, ",\"args\":{\"address\":");
			else if (ev->kev.kind == KEV_OFFCPU)
				PUT(c, ",\"args\":{\"woken_by\":");
			else
				PUT(c, ",\"args\":{\"return\":");
			json_string(c, detail);
			PUT(c, "}");
		}
		PUT(c, "}");
	} else if (ev->kind == TEV_LOST) {
		sep(c);
		PUT(c, "{\"name\":\"LOST ");
		put_u64(c, ev->lost);
		PUT(c, " events\",\"ph\":\"i\",\"s\":\"t\"");
		put_where(c, ev);
		PUT(c, "}");
	} else if (ev->kind == TEV_ENTRY && (ev->flags & TEV_FLAT)) {
		sep(c);
		PUT(c, "{\"name\":");
		json_string(c, trace_site_name(c->t, ev->site));
		PUT(c, ",\"ph\":\"i\",\"s\":\"t\"");
		put_where(c, ev);
		PUT(c, "}");
	} else if (ev->kind == TEV_ENTRY || (ev->kind == TEV_EXIT && !(ev->flags & TEV_ORPHAN))) {
		sep(c);
		PUT(c, "{\"name\":");
		json_string(c, trace_site_name(c->t, ev->site));
		if (ev->kind == TEV_ENTRY)
			PUT(c, ",\"ph\":\"B\"");
		else
			PUT(c, ",\"ph\":\"E\"");
		put_where(c, ev);
		if (ev->kind == TEV_EXIT && (ev->flags & TEV_OPEN))
			PUT(c, ",\"args\":{\"still_running\":true}");
		else if (ev->kind == TEV_EXIT && (ev->flags & TEV_EXIT_LOST))
			PUT(c, ",\"args\":{\"exit_lost\":true}");
		else
			put_values(c, ev);
		PUT(c, "}");
	}
	flush_line(c);
	return c->b.oom || view_output_failed(c->out);
}

int export_chrome(struct trace *t, FILE *out)
{
	return export_chrome_filtered(t, out, NULL, NULL, 0);
}

int export_chrome_filtered(struct trace *t, FILE *out, struct view_filter *filter, struct view_defer *defer,
			   uint32_t tid)
{
	struct chrome c = { .t = t, .out = out, .first = 1, .filter = filter, .defer = defer };
	const char *prog = t->argv && t->argv[0] ? t->argv[0] : "", *slash = strrchr(prog, '/');

	PUT(&c, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	/* The process, named by its program, as the viewers list it; with
	 * its names recorded (--kernel=comm), as the kernel names its first
	 * thread at the end, its renames following (chrome_call). */
	const char *pname = slash ? slash + 1 : prog;
	if (t->kernel_events[KEV_COMM])
		for (size_t i = 0; i < t->thread_cnt; i++)
			if (t->threads[i].tid == t->process.pid && t->threads[i].name[0])
				pname = t->threads[i].name;
	sep(&c);
	PUT(&c, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
	put_u64(&c, t->process.pid);
	PUT(&c, ",\"args\":{\"name\":");
	json_string(&c, pname);
	PUT(&c, "}}");
	flush_line(&c);
	/* Each other process (a forked child, a program it exec'ed), named
	 * by its first thread: once for each of that tid's lives, and the
	 * viewers keep the last, the program it became. */
	for (size_t i = 0; i < t->thread_cnt; i++) {
		uint32_t pid = trace_thread_pid(t, i);
		if (pid == t->process.pid || t->threads[i].tid != pid || (tid && tid != pid))
			continue;
		sep(&c);
		PUT(&c, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
		put_u64(&c, pid);
		PUT(&c, ",\"args\":{\"name\":");
		json_string(&c, t->threads[i].name[0] ? t->threads[i].name : "process");
		PUT(&c, "}}");
		flush_line(&c);
	}
	for (size_t i = 0; i < t->thread_cnt; i++) {
		if (tid && t->threads[i].tid != tid)
			continue;
		sep(&c);
		PUT(&c, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
		put_u64(&c, trace_thread_pid(t, i));
		PUT(&c, ",\"tid\":");
		put_u64(&c, t->threads[i].tid);
		PUT(&c, ",\"args\":{\"name\":");
		json_string(&c, t->threads[i].name);
		PUT(&c, "}}");
		flush_line(&c);
	}
	int err = view_each_event(t, tid, chrome_event, &c);
	PUT(&c, "\n]}\n");
	flush_line(&c);
	if (c.b.oom) {
		fprintf(stderr, "needle: out of memory while writing the Chrome trace\n");
		err = 1;
	}
	free(c.b.p);
	return err;
}
