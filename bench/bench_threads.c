/* bench_threads - per-thread costs of exit hooks:
 *
 *   bench_threads enable N   graph_enable_ms_N: time for the attach of an
 *                            entry+exit link to return with N idle threads
 *   bench_threads first      first_call_ns: a thread's first traced call
 *                            (taking its state included) minus its second
 *   bench_threads memory     shadow_bytes_per_thread: resident bytes per
 *                            thread that made a traced call (10,000 idle
 *                            threads with and without one)
 *   bench_threads sync       synchronize_ns: one grace period (needle_sync)
 *                            with 1,000 idle threads that have traced */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "needle.h"

static _Atomic uint32_t gate, ready;

__attribute__((noinline)) long bench_work(long x)
{
	__asm__ volatile("");
	return x + 1;
}

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

static struct needle_link *attach(void)
{
	struct needle_link *link = NULL;
	const char *pat[] = { "bench_work" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pat, .pattern_cnt = 1,
					.entry = on_entry, .exit = on_exit_ };
	if (needle_attach(&o, &link) != 1) {
		fprintf(stderr, "bench_threads: attach failed\n");
		exit(1);
	}
	return link;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *idle(void *arg)
{
	if (arg)
		bench_work(1);
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&gate))
		syscall(SYS_futex, &gate, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

static pthread_t *spawn(long n, void *arg)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	atomic_store(&ready, 0);
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], &attr, idle, arg)) {
			fprintf(stderr, "bench_threads: cannot create thread %ld\n", i);
			exit(1);
		}
	while (atomic_load(&ready) < n)
		usleep(1000);
	return t;
}

static void release(pthread_t *t, long n)
{
	atomic_store(&gate, 1);
	syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	atomic_store(&gate, 0);
}

static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * sysconf(_SC_PAGESIZE);
}

static void *first_call(void *arg)
{
	double *out = arg;
	double t0 = now_ns();
	bench_work(1);
	double t1 = now_ns();
	bench_work(2);
	double t2 = now_ns();
	out[0] = t1 - t0; /* first call: takes the thread's state */
	out[1] = t2 - t1; /* second call */
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "enable")) {
		long n = atol(argv[2]);
		pthread_t *t = spawn(n, NULL);
		double best = 1e18;
		for (int r = 0; r < 5; r++) {
			double t0 = now_ns();
			struct needle_link *link = attach();
			double d = now_ns() - t0;
			best = d < best ? d : best;
			needle_link_destroy(link);
		}
		release(t, n);
		printf("graph_enable_ms_%s_threads %.4f\n", n >= 1000 ? (n >= 100000 ? "100k" : n >= 10000 ? "10k" : "1k") : argv[2],
		       best / 1e6);
	} else if (argc >= 2 && !strcmp(argv[1], "first")) {
		struct needle_link *link = attach();
		double first = 1e18, second = 1e18;
		for (int i = 0; i < 2000; i++) {
			double v[2];
			pthread_t t;
			pthread_create(&t, NULL, first_call, v);
			pthread_join(t, NULL);
			first = v[0] < first ? v[0] : first;
			second = v[1] < second ? v[1] : second;
		}
		needle_link_destroy(link);
		/* Floors of each, so that a preempted run does not count. */
		printf("first_call_ns %.1f\nfirst_call_extra_ns %.1f\n", first, first - second);
	} else if (argc >= 2 && !strcmp(argv[1], "memory")) {
		long n = 10000;
		struct needle_link *link = attach();
		long base = rss_bytes();
		pthread_t *t = spawn(n, NULL);
		long plain = rss_bytes() - base;
		release(t, n);
		base = rss_bytes();
		t = spawn(n, (void *)1);
		long traced = rss_bytes() - base;
		release(t, n);
		needle_link_destroy(link);
		printf("shadow_bytes_per_thread %.0f\n", (double)(traced - plain) / n);
	} else if (argc >= 2 && !strcmp(argv[1], "sync")) {
		long n = 1000;
		struct needle_link *link = attach();
		pthread_t *t = spawn(n, (void *)1);
		double best = 1e18;
		for (int r = 0; r < 200; r++) {
			double t0 = now_ns();
			needle_sync();
			double d = now_ns() - t0;
			best = d < best ? d : best;
		}
		release(t, n);
		needle_link_destroy(link);
		printf("synchronize_ns %.0f\n", best);
	} else {
		fprintf(stderr, "usage: bench_threads enable N | first | memory | sync\n");
		return 2;
	}
	return 0;
}
