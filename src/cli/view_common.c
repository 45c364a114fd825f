/* view_common.c - see view_common.h. */
#include <stdio.h>

#include "cli.h"
#include "view_common.h"

struct trace *view_open(const char *path)
{
	char err[512];
	struct trace *t = trace_open(path ? path : "needle.data", err, sizeof(err));
	if (!t)
		cli_error("%s", err);
	return t;
}

int view_each_event(struct trace *t, uint32_t tid, int (*fn)(const struct trace_event *ev, void *arg), void *arg)
{
	struct trace_iter it;
	struct trace_event ev;
	int r;

	if (trace_iter_init(&it, t, tid)) {
		cli_error("%s: %s", t->path, it.err);
		trace_iter_free(&it);
		return 1;
	}
	while ((r = trace_iter_next(&it, &ev)) > 0)
		if (fn(&ev, arg))
			break;
	if (r < 0)
		cli_error("%s: %s", t->path, it.err);
	trace_iter_free(&it);
	return r < 0;
}
