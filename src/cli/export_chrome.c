/* export_chrome.c - Chrome trace event JSON ({"traceEvents": [...]}), which
 * chrome://tracing, Perfetto and speedscope open: a B/E event pair per
 * call, thread names as metadata events. */
#include <stdio.h>

#include "export.h"
#include "view_common.h"

struct chrome {
	struct trace *t;
	FILE *out;
	int first;
};

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static void sep(struct chrome *c)
{
	fputs(c->first ? "\n" : ",\n", c->out);
	c->first = 0;
}

static int chrome_event(const struct trace_event *ev, void *arg)
{
	struct chrome *c = arg;
	uint32_t pid = c->t->process.pid;

	if (ev->kind == TEV_LOST) {
		sep(c);
		fprintf(c->out, "{\"name\":\"LOST %llu events\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%u,\"tid\":%u}",
			(unsigned long long)ev->lost, ev->ns / 1e3, pid, ev->tid);
		return 0;
	}
	if (ev->kind == TEV_EXIT && (ev->flags & TEV_ORPHAN))
		return 0;
	int entry = ev->kind == TEV_ENTRY;
	if (entry && (ev->flags & TEV_FLAT)) {
		sep(c);
		fputs("{\"name\":", c->out);
		json_string(c->out, trace_site_name(c->t, ev->site));
		fprintf(c->out, ",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%u,\"tid\":%u}", ev->ns / 1e3, pid, ev->tid);
		return 0;
	}
	sep(c);
	fputs("{\"name\":", c->out);
	json_string(c->out, trace_site_name(c->t, ev->site));
	fprintf(c->out, ",\"ph\":\"%s\",\"ts\":%.3f,\"pid\":%u,\"tid\":%u", entry ? "B" : "E", ev->ns / 1e3, pid,
		ev->tid);
	if (ev->kind == TEV_EXIT && (ev->flags & TEV_OPEN))
		fputs(",\"args\":{\"still_running\":true}", c->out);
	else if (ev->kind == TEV_EXIT && (ev->flags & TEV_EXIT_LOST))
		fputs(",\"args\":{\"exit_lost\":true}", c->out);
	fputc('}', c->out);
	return view_output_failed(c->out);
}

int export_chrome(struct trace *t, FILE *out)
{
	struct chrome c = { t, out, 1 };

	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out);
	for (size_t i = 0; i < t->thread_cnt; i++) {
		sep(&c);
		fprintf(out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":",
			t->process.pid, t->threads[i].tid);
		json_string(out, t->threads[i].name);
		fputs("}}", out);
	}
	int err = view_each_event(t, 0, chrome_event, &c);
	fputs("\n]}\n", out);
	return err;
}
