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
 * --ret-ne V / --ret-eq V show only the calls whose return value differs
 * from (equals) V, one line each at its exit, as a leaf is shown:
 *
 *      0.310 us [  4242] |     lookup(arg1=3) = -1;
 *
 * The return value is known only at the exit, so the entry's values wait
 * until then: the reader marks each call that has some with a slot that
 * holds a copy (trace_iter_init_mark), freed at its exit.  -t TIME shows
 * its one line per call the same way, with its values.
 *
 * Invariants: one pass over the events, O(1) work per event (a thread's
 * pending one-line leaf is a flag indexed by the thread), memory bounded
 * by the number of threads (and, with --ret-*, by the calls open at once);
 * the output stops at the first write error. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/view_common.h"

struct replay {
	struct trace *t;
	uint32_t max_depth;  /* 0: all */
	uint64_t threshold;  /* ns; 0: none */
	/* By thread index: the thread's next event is the exit of a leaf
	 * already printed with its entry. */
	uint8_t *skip;
	/* The line being built, written with one call when complete. */
	struct view_buf line;
	/* --ret-eq / --ret-ne: RET_EQ or RET_NE, and V. */
	int ret_filter;
	struct view_int ret_value;
	int seen_ret; /* some call had a return value */
	/* The entry values of the open calls, while their return value is
	 * not known (--ret-*): slots by mark - 1, and the free ones. */
	struct arg_slot {
		uint8_t *p;
		size_t len, cap;
	} *slots;
	uint32_t *free_slots;
	size_t slot_cnt, free_cnt;
};

enum { RET_EQ = 1, RET_NE = 2 };

static const char replay_usage[] =
	"usage: needle replay [-i FILE] [--tid TID] [-D DEPTH] [-t TIME] [--ret-ne V | --ret-eq V]\n"
	"  -i, --input FILE   trace file (default needle.data)\n"
	"      --tid TID      only this thread\n"
	"  -D, --depth N      only the N outermost levels\n"
	"  -t, --time TIME    only calls that took TIME or more (e.g. 10us), one line each\n"
	"      --ret-ne V     only calls whose return value (-R) is not V, one line each at its exit\n"
	"      --ret-eq V     only calls whose return value is V (V: 0, -1, 0x7f; one of the two)\n";

static void put(struct replay *r, const char *s)
{
	view_buf_put(&r->line, s, strlen(s));
}

/* Start a line: "%10s [%6u] | " and two spaces per level.  The output
 * grows with the depth (that is the format); the work to make it is a
 * memset. */
static void line(struct replay *r, const char *dur, uint32_t tid, uint32_t depth)
{
	char pre[48];
	int n = view_format_prefix(pre, dur, tid);

	r->line.len = 0;
	if (view_buf_reserve(&r->line, (size_t)n + 2 * (size_t)depth + 64))
		return;
	memcpy(r->line.p, pre, (size_t)n);
	memset(r->line.p + n, ' ', 2 * (size_t)depth);
	r->line.len = (size_t)n + 2 * (size_t)depth;
}

static void end_line(struct replay *r)
{
	put(r, "\n");
	if (!r->line.oom)
		fwrite_unlocked(r->line.p, 1, r->line.len, stdout);
}

/* "(arg1=5, ...)" for an entry of site with values, "()" without. */
static void put_values(struct replay *r, uint32_t site, const uint8_t *data, size_t n)
{
	char v[512];
	struct trace_event entry = { .kind = TEV_ENTRY, .site = site, .data = data, .data_len = (uint16_t)n };

	put(r, "(");
	if (n && view_format_values(v, sizeof(v), r->t, &entry))
		put(r, v);
	put(r, ")");
}

static void put_args(struct replay *r, const struct trace_event *ev)
{
	put_values(r, ev->site, ev->data, ev->data_len);
}

/* " = 5" for an exit with a return value. */
static void put_ret(struct replay *r, const struct trace_event *ev)
{
	char v[512];

	if (ev->data_len && view_format_values(v, sizeof(v), r->t, ev)) {
		put(r, " = ");
		put(r, v);
	}
}

/* The reader's mark of a call (--ret-*): a slot with a copy of its
 * entry's values, + 1, or 0 when it has none. */
static uint32_t keep_args(const struct trace_event *ev, void *arg)
{
	struct replay *r = arg;
	uint32_t i;

	/* An entry of the function tracer has no exit to free a slot. */
	if (!ev->data_len || (ev->flags & TEV_FLAT) || r->line.oom)
		return 0;
	if (r->free_cnt) {
		i = r->free_slots[--r->free_cnt];
	} else {
		/* Room for every slot in the free list too, so a free never fails. */
		struct arg_slot *s = realloc(r->slots, (r->slot_cnt + 1) * sizeof(*s));
		uint32_t *f = s ? realloc(r->free_slots, (r->slot_cnt + 1) * sizeof(*f)) : NULL;
		if (s)
			r->slots = s;
		if (f)
			r->free_slots = f;
		if (!s || !f || r->slot_cnt >= UINT32_MAX - 1) {
			r->line.oom = 1;
			return 0;
		}
		i = (uint32_t)r->slot_cnt++;
		r->slots[i] = (struct arg_slot){ 0 };
	}
	struct arg_slot *s = &r->slots[i];
	if (s->cap < ev->data_len) {
		uint8_t *p = realloc(s->p, ev->data_len);
		if (!p) {
			r->free_slots[r->free_cnt++] = i;
			r->line.oom = 1;
			return 0;
		}
		s->p = p;
		s->cap = ev->data_len;
	}
	memcpy(s->p, ev->data, ev->data_len);
	s->len = ev->data_len;
	return i + 1;
}

/* At an exit: the entry's values its mark kept, its slot freed now and
 * read by the caller (the reader decodes the next event, which may take
 * the slot, only when asked for it). */
static void take_args(struct replay *r, const struct trace_event *ev, const uint8_t **args, size_t *args_len)
{
	if (!ev->mark)
		return;
	*args = r->slots[ev->mark - 1].p;
	*args_len = r->slots[ev->mark - 1].len;
	r->free_slots[r->free_cnt++] = ev->mark - 1;
}

/* --ret-* and -t TIME: a call whose return value compares as asked, or
 * that took TIME or more, one line at its exit with its values. */
static int print_at_exit(struct replay *r, const struct trace_event *ev)
{
	const uint8_t *args = NULL;
	size_t args_len = 0;
	char dur[32];

	if (ev->kind != TEV_EXIT)
		return 0;
	take_args(r, ev, &args, &args_len);
	/* No return value: still running, exit lost, entry not recorded. */
	if (ev->flags & (TEV_OPEN | TEV_ORPHAN | TEV_EXIT_LOST))
		return 0;
	if (r->ret_filter) {
		int eq = view_ret_equals(ev->data, ev->data_len, &r->ret_value);
		if (eq < 0)
			return 0;
		r->seen_ret = 1;
		if (eq != (r->ret_filter == RET_EQ))
			return 0;
	}
	uint64_t ns = ev->ns - ev->entry_ns;
	if (ns < r->threshold || (r->max_depth && ev->depth >= r->max_depth))
		return 0;
	view_format_duration(dur, sizeof(dur), ns);
	line(r, dur, ev->tid, ev->depth);
	put(r, trace_site_name(r->t, ev->site));
	put_values(r, ev->site, args, args_len);
	put_ret(r, ev);
	put(r, ";");
	end_line(r);
	return 0;
}

static int print_event(const struct trace_event *ev, struct replay *r, struct trace_iter *it)
{
	char dur[32];
	const char *name = trace_site_name(r->t, ev->site);

	if (r->ret_filter)
		return print_at_exit(r, ev);
	if (ev->kind == TEV_EXIT && r->skip[ev->thread]) {
		r->skip[ev->thread] = 0;
		return 0;
	}
	if (r->threshold)
		return print_at_exit(r, ev);
	if (r->max_depth && ev->depth >= r->max_depth && ev->kind != TEV_LOST)
		return 0;
	switch (ev->kind) {
	case TEV_SWITCH:
		line(r, "", ev->tid, ev->depth);
		snprintf(dur, sizeof(dur), "%u", ev->site);
		put(r, "/* switch to coroutine context ");
		put(r, dur);
		put(r, " */");
		break;
	case TEV_LOST:
		line(r, "", ev->tid, ev->depth);
		snprintf(dur, sizeof(dur), "%llu", (unsigned long long)ev->lost);
		put(r, "/* LOST ");
		put(r, dur);
		put(r, " events */");
		break;
	case TEV_ENTRY:
		if (ev->flags & TEV_FLAT) {
			/* The function tracer: when, not how long. */
			snprintf(dur, sizeof(dur), "@%.6f", ev->ns / 1e9);
			line(r, dur, ev->tid, ev->depth);
			put(r, name);
			put_args(r, ev);
			put(r, ";");
			break;
		}
		struct trace_event next;
		if (trace_iter_peek_same_thread(it, &next) > 0 && next.kind == TEV_EXIT && next.site == ev->site &&
		    next.depth == ev->depth && !(next.flags & (TEV_OPEN | TEV_ORPHAN | TEV_UNWOUND | TEV_EXIT_LOST))) {
			view_format_duration(dur, sizeof(dur), next.ns - next.entry_ns);
			line(r, dur, ev->tid, ev->depth);
			put(r, name);
			put_args(r, ev);
			put_ret(r, &next);
			put(r, ";");
			r->skip[ev->thread] = 1;
		} else {
			line(r, "", ev->tid, ev->depth);
			put(r, name);
			put_args(r, ev);
			put(r, " {");
		}
		break;
	case TEV_EXIT:
		if (ev->flags & TEV_OPEN) {
			line(r, "", ev->tid, ev->depth);
			put(r, "} /* ");
			put(r, name);
			put(r, " (still running) */");
		} else if (ev->flags & TEV_EXIT_LOST) {
			line(r, "", ev->tid, ev->depth);
			put(r, "} /* ");
			put(r, name);
			put(r, ": exit lost */");
		} else if (ev->flags & TEV_ORPHAN) {
			line(r, "", ev->tid, ev->depth);
			put(r, "/* return from ");
			put(r, name);
			/* In a snapshot: entered before the thread's window. */
			put(r, r->t->have_snapshot ? " (entered before the snapshot) */" : " (its entry was not recorded) */");
		} else {
			view_format_duration(dur, sizeof(dur), ev->ns - ev->entry_ns);
			line(r, dur, ev->tid, ev->depth);
			put(r, "}");
			put_ret(r, ev);
			put(r, " /* ");
			put(r, name);
			put(r, ev->flags & TEV_UNWOUND     ? " (unwound) */"
			       : ev->flags & TEV_UNMATCHED ? " (return not recorded) */"
							   : " */");
		}
		break;
	default:
		return 0;
	}
	end_line(r);
	return 0;
}

int cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' }, { "tid", required_argument, NULL, 'T' },
		{ "depth", required_argument, NULL, 'D' }, { "time", required_argument, NULL, 't' },
		{ "ret-eq", required_argument, NULL, 'E' }, { "ret-ne", required_argument, NULL, 'N' },
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
		case 'E':
		case 'N':
			if (r.ret_filter) {
				cli_error("--ret-eq and --ret-ne compare with one value: give one of them, once");
				return 1;
			}
			if (view_parse_int(optarg, &r.ret_value)) {
				cli_error("--ret-%s needs an integer (decimal or 0x hex, may be negative), not '%s'",
					  c == 'E' ? "eq" : "ne", optarg);
				return 1;
			}
			r.ret_filter = c == 'E' ? RET_EQ : RET_NE;
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
	if (r.ret_filter && r.t->tracer == TRACER_FUNCTION) {
		cli_error("--ret-%s needs return values: %s was recorded with the function tracer (entries only)",
			  r.ret_filter == RET_EQ ? "eq" : "ne", r.t->path);
		view_close(r.t);
		return 1;
	}
	view_buffer_output(stdout);
	if (!(r.skip = calloc(r.t->thread_cnt ? r.t->thread_cnt : 1, 1))) {
		cli_error("out of memory");
		trace_close(r.t);
		return 1;
	}

	struct trace_iter it;
	struct trace_event ev;
	int ret = 0, n;
	if (trace_iter_init_mark(&it, r.t, tid, NULL, r.ret_filter || r.threshold ? keep_args : NULL, &r)) {
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
		} else if (r.ret_filter && !r.seen_ret && !view_output_failed(stdout)) {
			fflush(stdout);
			cli_error("warning: no call in %s has a return value (recorded with -R 'GLOB@retval')", r.t->path);
		}
	}
	trace_iter_free(&it);
	view_close(r.t);
	free(r.skip);
	free(r.line.p);
	for (size_t i = 0; i < r.slot_cnt; i++)
		free(r.slots[i].p);
	free(r.slots);
	free(r.free_slots);
	if (r.line.oom) {
		cli_error("out of memory");
		ret = 1;
	}
	return view_close_output(stdout, "standard output") | ret;
}
