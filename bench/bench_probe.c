/* bench_probe - the seed's probe throughput table, for needle's dispatch:
 *
 *   bench_probe nop|nopctx|ret|plain THREADS SECONDS
 *
 * THREADS threads call a small traced function in a loop for SECONDS; one
 * consumer that does nothing is attached: entry only (nop: an entry-only
 * link, NEEDLE_ATTACH_ENTRY_ONLY, the probe path; nopctx: an ordinary
 * entry handler with its needle_ctx), or entry and exit (ret).
 * Prints "probe_<mode>_mps_<T>t TOTAL" and "..._per_thread PER" in millions
 * of calls per second.  Run against libneedle.so (RCU) and against the
 * reader-writer-lock ablation (build/ablation/libneedle.so) to compare.
 * "plain" attaches nothing: run under bpftrace, it measures a kernel
 * uprobe on the same function of the same binary. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "needle.h"

__attribute__((noinline)) long probe_target(long x)
{
	__asm__ volatile("");
	return x + 1;
}

static _Atomic int go, stop;
static double seconds;

struct worker {
	pthread_t t;
	long calls;
	char pad[64];
};

static int on_entry(const struct needle_ctx *c, uint64_t *k, void *d)
{
	(void)c;
	(void)k;
	(void)d;
	return 0;
}

static void on_exit_(const struct needle_ctx *c, uint64_t k, void *d)
{
	(void)c;
	(void)k;
	(void)d;
}

/* bench_direct_handlers.c, built with -mgeneral-regs-only. */
int bench_direct_nop(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		     void *thread_data, uint64_t *cookie, void *user_data);

static void *loop(void *arg)
{
	struct worker *w = arg;
	long n = 0, s = 0;
	while (!atomic_load(&go))
		;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 1000; i++)
			s += probe_target(i);
		n += 1000;
	}
	w->calls = n + (s == 42);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: bench_probe nop|nopctx|ret|plain THREADS SECONDS\n");
		return 2;
	}
	int ret = !strcmp(argv[1], "ret"), plain = !strcmp(argv[1], "plain");
	int threads = atoi(argv[2]);
	seconds = atof(argv[3]);
	struct worker *w = calloc((size_t)threads, sizeof(*w));
	struct needle_link *link = NULL;
	uint64_t addr = (uint64_t)(uintptr_t)probe_target;
	struct needle_attach_opts o = { .sz = sizeof(o), .addrs = &addr, .addr_cnt = 1, .entry = on_entry,
					.exit = ret ? on_exit_ : NULL };
	if (!strcmp(argv[1], "nop")) {
		o.entry = NULL;
		o.direct_entry = bench_direct_nop;
		o.flags = NEEDLE_ATTACH_ENTRY_ONLY;
	}
	if (!plain && needle_attach(&o, &link) != 1)
		return 1;
	for (int i = 0; i < threads; i++)
		pthread_create(&w[i].t, NULL, loop, &w[i]);
	struct timespec a, b, d = { (time_t)seconds, (long)((seconds - (long)seconds) * 1e9) };
	clock_gettime(CLOCK_MONOTONIC, &a);
	atomic_store(&go, 1);
	nanosleep(&d, NULL);
	atomic_store(&stop, 1);
	long total = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].calls;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double el = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	const char *variant = getenv("PROBE_VARIANT") ? getenv("PROBE_VARIANT") : "rcu";
	printf("probe_%s_%s_mps_%dt %.2f\n", argv[1], variant, threads, total / el / 1e6);
	printf("probe_%s_%s_mps_%dt_per_thread %.2f\n", argv[1], variant, threads, total / el / 1e6 / threads);
	if (link)
		needle_link_destroy(link);
	return 0;
}
