/* callcount - an example client of the libneedle API, loaded into any
 * program with LD_PRELOAD: it attaches one entry and one exit handler to
 * every function that matches NEEDLE_FUNCS (a glob, default "*") in a
 * single call, and when the program exits prints, per function, the call
 * count and the time spent (inclusive), the way ftrace's function profiler
 * does.
 *
 *   LD_PRELOAD=build/examples/libcallcount.so ./program
 *
 * The entry handler stores the start time in the call's cookie; the exit
 * handler gets it back, so no per-thread state is needed. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "needle.h"

struct func_stat {
	_Atomic uint64_t calls;
	_Atomic uint64_t total_ns;
	const char *name;
};

static struct func_stat *stats;
static int site_cnt;
static struct needle_link *link;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)data;
	atomic_fetch_add_explicit(&stats[ctx->func->site_id].calls, 1, memory_order_relaxed);
	*cookie = now_ns();
	return 0;
}

static void on_exit_(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)data;
	atomic_fetch_add_explicit(&stats[ctx->func->site_id].total_ns, now_ns() - cookie,
				  memory_order_relaxed);
}

__attribute__((constructor)) static void callcount_start(void)
{
	const char *glob = getenv("NEEDLE_FUNCS");
	const char *patterns[] = { glob && *glob ? glob : "*" };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = patterns, .pattern_cnt = 1,
		.entry = on_entry, .exit = on_exit_,
	};

	site_cnt = needle_site_count();
	if (site_cnt <= 0) {
		fprintf(stderr, "callcount: no traceable functions (%d)\n", site_cnt);
		return;
	}
	stats = calloc((size_t)site_cnt, sizeof(*stats));
	if (!stats)
		return;
	int n = needle_attach(&opts, &link);
	if (n < 0)
		fprintf(stderr, "callcount: attach failed: %s\n", strerror(-n));
	else
		fprintf(stderr, "callcount: tracing %d functions\n", n);
}

static int by_total(const void *a, const void *b)
{
	const struct func_stat *x = a, *y = b;
	return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : strcmp(x->name, y->name);
}

__attribute__((destructor)) static void callcount_report(void)
{
	if (!link)
		return;
	needle_link_destroy(link);
	link = NULL;
	for (int i = 0; i < site_cnt; i++) {
		struct needle_site_info info = { .sz = sizeof(info) };
		needle_site_info((uint32_t)i, &info);
		stats[i].name = info.name;
	}
	qsort(stats, (size_t)site_cnt, sizeof(*stats), by_total);
	fprintf(stderr, "%12s %14s %12s  %s\n", "calls", "total_us", "avg_ns", "function");
	for (int i = 0; i < site_cnt; i++) {
		uint64_t calls = stats[i].calls;
		if (!calls)
			continue;
		fprintf(stderr, "%12llu %14.1f %12.1f  %s\n", (unsigned long long)calls,
			stats[i].total_ns / 1000.0, (double)stats[i].total_ns / (double)calls, stats[i].name);
	}
}
