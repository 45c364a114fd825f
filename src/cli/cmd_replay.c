/* cmd_replay.c - `needle replay`: the function graph, like ftrace's
 * function_graph tracer and uftrace replay:
 *
 *   # DURATION     TID     FUNCTION
 *               [  4242] | main() {
 *      0.250 us [  4242] |   kv_hash();
 *      1.875 us [  4242] | } // main
 *
 * A call with no traced children takes one line with its duration; others
 * open with "{" and close with their duration.  Calls still running when
 * the trace ended close with "(still running)"; calls that returned while
 * events were being lost close with "exit lost", where the loss begins.
 *
 * Invariants: one pass over the events, O(1) work per event (a thread's
 * pending one-line leaf is a flag indexed by the thread), memory bounded
 * by the number of threads; the output stops at the first write error. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "view_common.h"

struct replay {
	struct trace *t;
	uint32_t max_depth;  /* 0: all */
	uint64_t threshold;  /* ns; 0: none */
	/* By thread index: the thread's next event is the exit of a leaf
	 * already printed with its entry. */
	uint8_t *skip;
};

static const char replay_usage[] =
	"usage: needle replay [-i FILE] [--tid TID] [-D DEPTH] [-t TIME]\n"
	"  -i, --input FILE   trace file (default needle.data)\n"
	"      --tid TID      only this thread\n"
	"  -D, --depth N      only the N outermost levels\n"
	"  -t, --time TIME    only calls that took TIME or more (e.g. 10us), one line each\n";

static void indent(int depth)
{
	static const char spaces[] = "                                                                ";
	size_t n = (size_t)depth * 2;

	/* One call per 64 columns: the output grows with the depth (that is
	 * the format), the calls made to write it need not. */
	while (n) {
		size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
		fwrite_unlocked(spaces, 1, k, stdout);
		n -= k;
	}
}

static void line(const char *dur, uint32_t tid, int depth)
{
	printf("%10s [%6u] | ", dur, tid);
	indent(depth);
}

static int print_threshold(struct replay *r, const struct trace_event *ev)
{
	char dur[32];
	if (ev->kind != TEV_EXIT || (ev->flags & (TEV_OPEN | TEV_ORPHAN | TEV_EXIT_LOST)))
		return 0;
	uint64_t ns = ev->ns - ev->entry_ns;
	if (ns < r->threshold || (r->max_depth && ev->depth >= r->max_depth))
		return 0;
	cli_format_duration(dur, sizeof(dur), ns);
	line(dur, ev->tid, (int)ev->depth);
	printf("%s();\n", trace_site_name(r->t, ev->site));
	return 0;
}

static int print_event(const struct trace_event *ev, struct replay *r, struct trace_iter *it)
{
	char dur[32];
	const char *name = trace_site_name(r->t, ev->site);

	if (ev->kind == TEV_EXIT && r->skip[ev->thread]) {
		r->skip[ev->thread] = 0;
		return 0;
	}
	if (r->threshold)
		return print_threshold(r, ev);
	if (r->max_depth && ev->depth >= r->max_depth && ev->kind != TEV_LOST)
		return 0;
	switch (ev->kind) {
	case TEV_SWITCH:
		line("", ev->tid, (int)ev->depth);
		printf("/* switch to coroutine context %u */\n", ev->site);
		break;
	case TEV_LOST:
		line("", ev->tid, (int)ev->depth);
		printf("/* LOST %llu events */\n", (unsigned long long)ev->lost);
		break;
	case TEV_ENTRY:
		if (ev->flags & TEV_FLAT) {
			/* The function tracer: when, not how long. */
			snprintf(dur, sizeof(dur), "@%.6f", ev->ns / 1e9);
			line(dur, ev->tid, (int)ev->depth);
			printf("%s();\n", name);
			break;
		}
		struct trace_event next;
		if (trace_iter_peek_same_thread(it, &next) > 0 && next.kind == TEV_EXIT && next.site == ev->site &&
		    next.depth == ev->depth && !(next.flags & (TEV_OPEN | TEV_ORPHAN | TEV_UNWOUND | TEV_EXIT_LOST))) {
			cli_format_duration(dur, sizeof(dur), next.ns - next.entry_ns);
			line(dur, ev->tid, (int)ev->depth);
			printf("%s();\n", name);
			r->skip[ev->thread] = 1;
		} else {
			line("", ev->tid, (int)ev->depth);
			printf("%s() {\n", name);
		}
		break;
	case TEV_EXIT:
		if (ev->flags & TEV_OPEN) {
			line("", ev->tid, (int)ev->depth);
			printf("} /* %s (still running) */\n", name);
		} else if (ev->flags & TEV_EXIT_LOST) {
			line("", ev->tid, (int)ev->depth);
			printf("} /* %s: exit lost */\n", name);
		} else if (ev->flags & TEV_ORPHAN) {
			line("", ev->tid, (int)ev->depth);
			printf("/* return from %s (its entry was not recorded) */\n", name);
		} else {
			cli_format_duration(dur, sizeof(dur), ev->ns - ev->entry_ns);
			line(dur, ev->tid, (int)ev->depth);
			printf("} /* %s%s */\n", name,
			       ev->flags & TEV_UNWOUND     ? " (unwound)"
			       : ev->flags & TEV_UNMATCHED ? " (return not recorded)"
							   : "");
		}
		break;
	}
	return 0;
}

int cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' }, { "tid", required_argument, NULL, 'T' },
		{ "depth", required_argument, NULL, 'D' }, { "time", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },        { NULL, 0, NULL, 0 },
	};
	const char *input = NULL;
	struct replay r = { 0 };
	uint32_t tid = 0;
	int c;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:D:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 'T':
			if (view_parse_tid(optarg, &tid))
				return 2;
			break;
		case 'D':
			r.max_depth = (uint32_t)strtoul(optarg, &end, 10);
			if (*end || !r.max_depth) {
				cli_error("--depth needs a positive number, not '%s'", optarg);
				return 2;
			}
			break;
		case 't':
			if (cli_parse_duration(optarg, &r.threshold)) {
				cli_error("--time needs a duration such as 10us or 2ms, not '%s'", optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(replay_usage, stdout);
			return 0;
		default:
			fputs(replay_usage, stderr);
			return 2;
		}
	}
	int status;
	if (!(r.t = view_start("replay", argc, argv, optind, input, tid, &status)))
		return status;
	if (!(r.skip = calloc(r.t->thread_cnt ? r.t->thread_cnt : 1, 1))) {
		cli_error("out of memory");
		trace_close(r.t);
		return 1;
	}

	struct trace_iter it;
	struct trace_event ev;
	int ret = 0, n;
	if (trace_iter_init(&it, r.t, tid)) {
		cli_error("%s: %s", r.t->path, it.err);
		ret = 1;
	} else {
		if (r.t->end.lost_events)
			printf("# %llu events were lost (the buffer was full: record with a larger --buffer-size);"
			       " calls around the losses may be missing\n",
			       (unsigned long long)r.t->end.lost_events);
		printf("# %8s %8s   FUNCTION\n", r.t->tracer == TRACER_FUNCTION ? "TIME(s)" : "DURATION", "TID");
		while ((n = trace_iter_next(&it, &ev)) > 0) {
			r.t->work++;
			print_event(&ev, &r, &it);
			if (view_output_failed(stdout))
				break;
		}
		if (n < 0) {
			fflush(stdout);
			cli_error("%s: %s", r.t->path, it.err);
			ret = 1;
		}
	}
	trace_iter_free(&it);
	view_close(r.t);
	free(r.skip);
	return view_close_output(stdout, "standard output") | ret;
}
