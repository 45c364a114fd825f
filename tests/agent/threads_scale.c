/* threads_scale - per-thread state at scale (run by tests/record/test_threads.sh).
 *
 *   threads_scale idle N    N idle threads exist when an entry+exit
 *                                link is attached; then each calls work()
 *                                once: every call's entry and exit is seen.
 *                                Prints the attach time (not asserted).
 *   threads_scale churn N   N short-lived threads each make traced
 *                                calls; resident memory after N lifetimes
 *                                stays within a small bound of memory after
 *                                10,000 (the states are reused).
 *   threads_scale deep N         recursion N deep with a shadow stack far
 *                                smaller (NEEDLE_SHADOW_BYTES): the result
 *                                is right, frames past the reserve are
 *                                counted as not hooked, the rest are exact
 *   threads_scale detach         a link is detached while a thread is
 *                                inside one of its calls: the call still
 *                                returns home, and its exit handler does
 *                                not run after the detach returned
 * With no arguments: idle 10000 and churn 1000000. */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "needle.h"

static _Atomic long entries, exits;
static _Atomic uint32_t gate;

__attribute__((noinline)) long work(long x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long deeper(long x)
{
	return work(x) + work(x + 1);
}

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)data;
	*cookie = 1;
	atomic_fetch_add_explicit(&entries, 1, memory_order_relaxed);
	return 0;
}

static void on_exit_(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)ctx;
	(void)data;
	atomic_fetch_add_explicit(&exits, (long)cookie, memory_order_relaxed);
}

static void *idle_thread(void *arg)
{
	while (!atomic_load(&gate))
		syscall(SYS_futex, &gate, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return (void *)work((long)arg);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static struct needle_link *attach(const char *pattern)
{
	struct needle_link *link = NULL;
	const char *pat[] = { pattern };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = pat, .pattern_cnt = 1, .entry = on_entry, .exit = on_exit_,
	};
	needle_attach(&opts, &link);
	return link;
}

static void run_idle(long n)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	long created = 0;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (long i = 0; i < n; i++)
		if (!pthread_create(&t[i], &attr, idle_thread, (void *)i))
			created++;
	CHECK_EQ(created, n, "%ld idle threads created", n);
	entries = exits = 0;
	double t0 = now_ms();
	struct needle_link *link = attach("work");
	double ms = now_ms() - t0;
	CHECK(link != NULL, "entry+exit link attached with %ld idle threads", n);
	printf("INFO: graph_enable_ms_%ld_threads %.3f\n", n, ms);
	atomic_store(&gate, 1);
	syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	long ok = 0;
	for (long i = 0; i < created; i++) {
		void *r;
		pthread_join(t[i], &r);
		ok += (long)r == i + 1;
	}
	CHECK_EQ(ok, created, "every thread's work() returned its result");
	struct needle_stats st = { .sz = sizeof(st) };
	needle_get_stats(&st);
	CHECK_EQ(st.threads_refused, 0, "no thread found the state pool full");
	CHECK_EQ(entries, created, "every thread's first traced call was seen at entry");
	CHECK_EQ(exits, created, "... and at exit");
	needle_link_destroy(link);
	free(t);
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, resident = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void *churn_thread(void *arg)
{
	return (void *)deeper((long)arg);
}

static void run_churn(long n)
{
	struct needle_link *link = attach("work");
	struct needle_link *link2 = attach("deeper");
	long rss_10k = 0, bad = 0;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	entries = exits = 0;
	for (long i = 0; i < n; i += 2) {
		/* Two at a time, so that states are taken and given back
		 * concurrently. */
		pthread_t a, b;
		void *ra, *rb;
		pthread_create(&a, &attr, churn_thread, (void *)i);
		pthread_create(&b, &attr, churn_thread, (void *)(i + 1));
		pthread_join(a, &ra);
		pthread_join(b, &rb);
		bad += (long)ra != 2 * i + 3 || (long)rb != 2 * (i + 1) + 3;
		if (i + 2 == 10000)
			rss_10k = rss_kb();
	}
	long rss_end = rss_kb();
	CHECK_EQ(bad, 0, "%ld thread lifetimes, all results right", n);
	CHECK_EQ(entries, 3 * n, "every traced call of every thread seen");
	CHECK_EQ(exits, 3 * n, "every exit seen");
	CHECK(rss_end - rss_10k < 8 * 1024, "resident memory after %ld lifetimes within 8 MiB of after 10,000 "
					      "(%ld KiB -> %ld KiB)", n, rss_10k, rss_end);
	needle_link_destroy(link);
	needle_link_destroy(link2);
}

/* Kept recursive: no tail-call or accumulator transformation. */
__attribute__((noinline, optimize("no-optimize-sibling-calls"))) long recurse(long n)
{
	return n ? recurse(n - 1) + 1 : 0;
}

static void run_deep(long n)
{
	struct needle_stats before = { .sz = sizeof(before) }, after = { .sz = sizeof(after) };
	struct needle_link *link = attach("recurse");
	entries = exits = 0;
	needle_get_stats(&before);
	long r = recurse(n);
	needle_get_stats(&after);
	long overflow = (long)(after.shadow_overflows - before.shadow_overflows);
	CHECK_EQ(r, n, "recursion %ld deep returns the right result", n);
	CHECK_EQ(entries, n + 1, "every call's entry seen");
	CHECK(overflow > 0, "frames past the shadow reserve counted (%ld)", overflow);
	CHECK_EQ(exits + overflow, n + 1, "every exit seen or counted as not hooked");
	needle_link_destroy(link);
}

static _Atomic int inside;
__attribute__((noinline)) long blocker(long x)
{
	atomic_store(&inside, 1);
	while (!atomic_load(&gate))
		syscall(SYS_futex, &gate, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return x * 2;
}

static void *blocker_thread(void *arg)
{
	return (void *)blocker((long)arg);
}

static void run_detach(void)
{
	struct needle_link *link = attach("blocker");
	pthread_t t;
	void *r;
	entries = exits = 0;
	pthread_create(&t, NULL, blocker_thread, (void *)21);
	while (!atomic_load(&inside))
		;
	CHECK_EQ(needle_link_detach(link), 0, "detach while a thread is inside a traced call");
	long exits_at_detach = exits;
	atomic_store(&gate, 1);
	syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	pthread_join(t, &r);
	CHECK_EQ((long)r, 42, "the hijacked return still goes home");
	CHECK_EQ(entries, 1, "its entry was seen");
	CHECK_EQ(exits - exits_at_detach, 0, "no exit handler ran after the detach returned");
	needle_link_destroy(link);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "idle")) {
		run_idle(atol(argv[2]));
	} else if (argc >= 3 && !strcmp(argv[1], "churn")) {
		run_churn(atol(argv[2]));
	} else if (argc >= 3 && !strcmp(argv[1], "deep")) {
		run_deep(atol(argv[2]));
	} else if (argc >= 2 && !strcmp(argv[1], "detach")) {
		run_detach();
	} else {
		run_idle(10000);
		run_churn(1000000);
	}
	return harness_exit();
}
