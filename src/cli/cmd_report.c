/* cmd_report.c - `needle report`: per function, the number of calls and
 * the total (inclusive), self (exclusive), average, minimum and maximum
 * time, like uftrace report and ftrace's function profiler.
 *
 * Invariants: one pass, O(1) per event; memory grows with the number of
 * functions, not of events.  A time is only ever computed from a
 * recorded entry and a recorded exit: calls still running at the end,
 * calls whose exit was lost and exits without an entry count as calls
 * but add no time.  A trace with no durations at all (the function
 * tracer) shows counts only, and a trace with losses says so first. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/view_common.h"

struct func_stats {
	uint32_t site;
	uint64_t calls, timed, total, self, min, max;
};

struct report {
	struct trace *t;
	struct func_stats *v; /* by site id */
	size_t cap;
};

static struct func_stats *stats_for(struct report *r, uint32_t site)
{
	if (site >= r->cap) {
		size_t cap = r->cap ? r->cap : 1024;
		while (cap <= site)
			cap *= 2;
		struct func_stats *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + r->cap, 0, (cap - r->cap) * sizeof(*v));
		r->v = v;
		r->cap = cap;
	}
	r->v[site].site = site;
	return &r->v[site];
}

static int account(const struct trace_event *ev, void *arg)
{
	struct report *r = arg;
	struct func_stats *f;

	if (ev->kind == TEV_ENTRY) {
		if ((f = stats_for(r, ev->site)))
			f->calls++;
		return 0;
	}
	/* Durations come from exits; a call still running at the end, whose
	 * exit was lost or whose entry is missing counts as a call but has
	 * no time. */
	if (ev->kind != TEV_EXIT || (ev->flags & (TEV_OPEN | TEV_ORPHAN | TEV_EXIT_LOST)) ||
	    !(f = stats_for(r, ev->site)))
		return 0;
	uint64_t d = ev->ns - ev->entry_ns;
	uint64_t self = d > ev->child_ns ? d - ev->child_ns : 0;
	if (!f->timed || d < f->min)
		f->min = d;
	if (d > f->max)
		f->max = d;
	f->timed++;
	f->total += d;
	f->self += self;
	return 0;
}

static const char *sort_key = "total";
static struct trace *sort_trace;

static int cmp_stats(const void *a, const void *b)
{
	const struct func_stats *x = a, *y = b;
	uint64_t vx, vy;

	if (!strcmp(sort_key, "name"))
		return strcmp(trace_site_name(sort_trace, x->site), trace_site_name(sort_trace, y->site));
	if (!strcmp(sort_key, "calls")) {
		vx = x->calls;
		vy = y->calls;
	} else if (!strcmp(sort_key, "self")) {
		vx = x->self;
		vy = y->self;
	} else if (!strcmp(sort_key, "avg")) {
		vx = x->timed ? x->total / x->timed : 0;
		vy = y->timed ? y->total / y->timed : 0;
	} else if (!strcmp(sort_key, "min")) {
		vx = x->min;
		vy = y->min;
	} else if (!strcmp(sort_key, "max")) {
		vx = x->max;
		vy = y->max;
	} else {
		vx = x->total;
		vy = y->total;
	}
	if (vx != vy)
		return vx < vy ? 1 : -1;
	return strcmp(trace_site_name(sort_trace, x->site), trace_site_name(sort_trace, y->site));
}

static const char report_usage[] =
	"usage: needle report [-i FILE] [--tid TID] [-s KEY] [--csv]\n"
	"  -i, --input FILE   trace file (default needle.data)\n"
	"      --tid TID      only this thread\n"
	"  -s, --sort KEY     total (default), self, calls, avg, min, max or name\n"
	"      --csv          function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns\n";

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' }, { "sort", required_argument, NULL, 's' },
		{ "tid", required_argument, NULL, 'T' },   { "help", no_argument, NULL, 'h' },
		{ "csv", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const keys[] = { "total", "self", "calls", "avg", "min", "max", "name" };
	const char *input = NULL;
	struct report r = { 0 };
	uint32_t tid = 0;
	int c, ok, csv = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 's':
			ok = 0;
			for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
				ok |= !strcmp(optarg, keys[i]);
			if (!ok) {
				cli_error("unknown sort key '%s' (total, self, calls, avg, min, max, name)", optarg);
				return 2;
			}
			sort_key = optarg;
			break;
		case 'T':
			if (view_parse_tid(optarg, &tid))
				return 2;
			break;
		case 'C':
			csv = 1;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		default:
			fputs(report_usage, stderr);
			return 2;
		}
	}
	int status;
	if (!(r.t = view_start("report", argc, argv, optind, input, tid, &status)))
		return status;
	if (view_each_event(r.t, tid, account, &r)) {
		view_close(r.t);
		free(r.v);
		return 1;
	}
	size_t n = 0;
	int timed = 0;
	for (size_t i = 0; i < r.cap; i++) {
		if (r.v[i].calls)
			r.v[n++] = r.v[i];
		timed |= r.v[i].timed != 0;
	}
	/* Entries only (the function tracer): no time to sort by. */
	if (!timed && strcmp(sort_key, "name"))
		sort_key = "calls";
	sort_trace = r.t;
	qsort(r.v, n, sizeof(*r.v), cmp_stats);
	/* The times of calls that overlap a loss are missing or bounds; CSV
	 * keeps its lines all data, so the note goes to stderr there. */
	if (r.t->end.lost_events && csv)
		cli_error("warning: %llu events lost: times of calls around the loss are incomplete",
			  (unsigned long long)r.t->end.lost_events);
	else if (r.t->end.lost_events)
		printf("# %llu events lost: times of calls around the loss are incomplete\n",
		       (unsigned long long)r.t->end.lost_events);
	if (!timed) {
		if (csv)
			printf("function,calls\n");
		else
			printf("  %10s  %s\n  %10s  %s\n", "Calls", "Function", "=====", "========");
		for (size_t i = 0; i < n; i++) {
			const char *name = trace_site_name(r.t, r.v[i].site);
			if (csv)
				printf("%s,%llu\n", name, (unsigned long long)r.v[i].calls);
			else
				printf("  %10llu  %s\n", (unsigned long long)r.v[i].calls, name);
		}
		free(r.v);
		view_close(r.t);
		return view_close_output(stdout, "standard output");
	}
	if (csv) {
		printf("function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns\n");
		for (size_t i = 0; i < n; i++) {
			struct func_stats *f = &r.v[i];
			printf("%s,%llu,%llu,%llu,%llu,%llu,%llu\n", trace_site_name(r.t, f->site),
			       (unsigned long long)f->calls, (unsigned long long)f->total, (unsigned long long)f->self,
			       (unsigned long long)(f->timed ? f->total / f->timed : 0), (unsigned long long)f->min,
			       (unsigned long long)f->max);
		}
		free(r.v);
		view_close(r.t);
		return view_close_output(stdout, "standard output");
	}
	printf("  %12s  %12s  %10s  %12s  %12s  %12s  %s\n", "Total time", "Self time", "Calls", "Average", "Min",
	       "Max", "Function");
	printf("  %12s  %12s  %10s  %12s  %12s  %12s  %s\n", "==========", "=========", "=====", "=======", "===",
	       "===", "========");
	for (size_t i = 0; i < n; i++) {
		struct func_stats *f = &r.v[i];
		char tot[32], self[32], avg[32], mn[32], mx[32];
		if (f->timed) {
			cli_format_duration(tot, sizeof(tot), f->total);
			cli_format_duration(self, sizeof(self), f->self);
			cli_format_duration(avg, sizeof(avg), f->total / f->timed);
			cli_format_duration(mn, sizeof(mn), f->min);
			cli_format_duration(mx, sizeof(mx), f->max);
		} else {
			/* Called, but no call of it has a duration. */
			strcpy(tot, "-");
			strcpy(self, "-");
			strcpy(avg, "-");
			strcpy(mn, "-");
			strcpy(mx, "-");
		}
		printf("  %12s  %12s  %10llu  %12s  %12s  %12s  %s\n", tot, self, (unsigned long long)f->calls, avg, mn,
		       mx, trace_site_name(r.t, f->site));
	}
	free(r.v);
	view_close(r.t);
	return view_close_output(stdout, "standard output");
}
