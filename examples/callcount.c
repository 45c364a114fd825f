/* callcount - an example client of the libneedle API, loaded into any
 * program with LD_PRELOAD: it attaches one entry and one exit handler to
 * every function that matches NEEDLE_FUNCS (a glob, default "*") in a
 * single call, and when the program exits prints, per function, the call
 * count and the time spent (inclusive), the way ftrace's function profiler
 * does.
 *
 *   LD_PRELOAD="build/libneedle.so build/examples/libcallcount.so" ./program
 *
 * libneedle comes first: it must precede the C library in the symbol
 * search order to interpose its functions (docs/api.md), and a preloaded
 * library's own dependencies come after the program's.
 *
 * The entry handler stores the start time in the call's cookie; the exit
 * handler gets it back, so no per-thread state is needed.  Handlers may run
 * in signal handlers, forked children and exiting threads, so they only
 * read the clock and add to atomic counters; the report is printed after
 * the link is destroyed, when no handler can run any more.
 *
 * Counters are indexed by site id.  Ids are not bounded by what
 * needle_site_count() said before the attach: the attach itself discovers
 * objects loaded since (a library dlopen'ed by another constructor, or by
 * another thread), and later attaches more.  So the table is reserved for
 * MAX_SITES ids up front (pages are only committed when a handler first
 * touches them) and a handler checks the id before using it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "needle.h"

#define MAX_SITES (1u << 22)

struct func_stat {
	_Atomic uint64_t calls;
	_Atomic uint64_t total_ns;
};

static struct func_stat *stats;     /* MAX_SITES entries, indexed by site id */
static _Atomic uint64_t uncounted;  /* calls of sites with ids >= MAX_SITES */
static struct needle_link *link;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t); /* async-signal-safe */
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static struct func_stat *stat_of(const struct needle_ctx *ctx)
{
	uint32_t id = ctx->func->site_id;

	if (id < MAX_SITES)
		return &stats[id];
	atomic_fetch_add_explicit(&uncounted, 1, memory_order_relaxed);
	return NULL;
}

static int count_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	struct func_stat *st = stat_of(ctx);

	(void)data;
	if (!st)
		return NEEDLE_SKIP_EXIT;
	atomic_fetch_add_explicit(&st->calls, 1, memory_order_relaxed);
	*cookie = now_ns();
	return 0;
}

static void count_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	uint32_t id = ctx->func->site_id; /* below MAX_SITES: the entry checked it */

	(void)data;
	if (id < MAX_SITES)
		atomic_fetch_add_explicit(&stats[id].total_ns, now_ns() - cookie, memory_order_relaxed);
}

/* Is libneedle ahead of the C library, as its interposition needs?  Then
 * setcontext (interposed by libneedle, by no sanitizer) resolves to it. */
static int needle_interposes(void)
{
	Dl_info mine, seen;
	void *fn = dlsym(RTLD_DEFAULT, "setcontext");

	return fn && dladdr((void *)needle_attach, &mine) && dladdr(fn, &seen) &&
	       mine.dli_fbase == seen.dli_fbase;
}

__attribute__((constructor)) static void callcount_start(void)
{
	const char *glob = getenv("NEEDLE_FUNCS");
	const char *patterns[] = { glob && *glob ? glob : "*" };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = patterns, .pattern_cnt = 1,
		.entry = count_entry, .exit = count_exit,
	};

	if (!needle_interposes()) {
		fprintf(stderr, "callcount: libneedle.so is loaded after the C library; preload it first: "
				"LD_PRELOAD=\"libneedle.so libcallcount.so\"\n");
		return;
	}
	stats = mmap(NULL, MAX_SITES * sizeof(*stats), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (stats == MAP_FAILED) {
		stats = NULL;
		fprintf(stderr, "callcount: %s\n", strerror(errno));
		return;
	}
	int n = needle_attach(&opts, &link);
	if (n < 0)
		fprintf(stderr, "callcount: attach failed: %s\n", strerror(-n));
	else
		fprintf(stderr, "callcount: tracing %d functions\n", n);
}

struct row {
	uint64_t calls, total_ns;
	const char *name;
};

static int by_total(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : strcmp(x->name, y->name);
}

__attribute__((destructor)) static void callcount_report(void)
{
	if (!link)
		return;
	int err = needle_link_destroy(link);
	if (err) /* handlers may still run: the counters stay, the report is a snapshot */
		fprintf(stderr, "callcount: cannot detach: %s\n", strerror(-err));
	link = NULL;

	int site_cnt = needle_site_count();
	uint32_t ids = site_cnt < 0 ? 0 : (uint32_t)site_cnt < MAX_SITES ? (uint32_t)site_cnt : MAX_SITES;
	struct row *rows = calloc(ids ? ids : 1, sizeof(*rows));
	size_t n = 0;
	if (!rows)
		return;
	for (uint32_t id = 0; id < ids; id++) {
		uint64_t calls = atomic_load_explicit(&stats[id].calls, memory_order_relaxed);
		if (!calls)
			continue;
		struct needle_site_info info = { .sz = sizeof(info) };
		rows[n].calls = calls;
		rows[n].total_ns = atomic_load_explicit(&stats[id].total_ns, memory_order_relaxed);
		rows[n].name = needle_site_info(id, &info) == 0 && info.name ? info.name : "?";
		n++;
	}
	qsort(rows, n, sizeof(*rows), by_total);
	fprintf(stderr, "%12s %14s %12s  %s\n", "calls", "total_us", "avg_ns", "function");
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%12llu %14.1f %12.1f  %s\n", (unsigned long long)rows[i].calls,
			rows[i].total_ns / 1000.0, (double)rows[i].total_ns / (double)rows[i].calls, rows[i].name);
	if (atomic_load(&uncounted))
		fprintf(stderr, "callcount: %llu calls of functions with site ids past %u not counted\n",
			(unsigned long long)atomic_load(&uncounted), MAX_SITES);
	free(rows);
}
