/* bench_patch - costs of the patch engine, printed as "key value" lines:
 *
 *   bench_patch attach        attach_1k_ms attach_10k_ms detach_10k_ms syncs_per_batch
 *   bench_patch loop N        untraced_ns: N calls of a small function
 *   bench_patch hook N        entry_exit_hook_ns: the same with an exit handler
 *                             too (the return hooked), recording nothing
 *   bench_patch count N       count_handler_ns: the same calls with a counting
 *                             entry-only handler attached (NEEDLE_ATTACH_ENTRY_ONLY:
 *                             the probe path), minus the untraced call
 *   bench_patch count_ctx N   count_ctx_handler_ns: the same with an ordinary
 *                             entry handler (a needle_ctx, the full path)
 *   bench_patch count_direct N, hook_direct N
 *                             count_direct_handler_ns, entry_exit_hook_direct_ns:
 *                             the same through direct handlers
 *
 * A background thread keeps calling traced functions during attach and
 * detach, so batches are measured on a live process.  Each figure is the
 * median of several runs. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "needle.h"

#define FUNCS 10000
#define REPEAT 11

extern long (*const bench_table[FUNCS])(long);

__attribute__((noinline)) long bench_count_target(long x)
{
	__asm__ volatile("");
	return x * 3 + 7; /* one 5-byte lea: a relocated site can cover it too */
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static double minimum(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static _Atomic int stop;
static void *caller(void *arg)
{
	long s = 0;
	(void)arg;
	while (!atomic_load(&stop))
		for (int i = 0; i < FUNCS; i += 7)
			s += bench_table[i](i);
	return (void *)s;
}

static long counter;
static int count_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	counter++;
	return 0;
}

static long exits;
static void count_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	exits++;
}

static needle_exit_fn exit_handler; /* NULL, or count_exit for "hook" */
static int use_probe;               /* "count": entry only */
/* count_direct, hook_direct: the same handlers' direct twins
 * (bench_direct_handlers.c). */
int bench_direct_count(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		       void *thread_data, uint64_t *cookie, void *user_data);
int bench_direct_exit(const struct needle_func *func, uint64_t cookie, void *thread_data, void *user_data);
extern long direct_counter, direct_exits;
static int use_direct;

static struct needle_link *attach_n(const uint64_t *addrs, size_t n)
{
	struct needle_link *link = NULL;
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .addrs = addrs, .addr_cnt = n, .entry = count_entry, .exit = exit_handler,
	};
	if (use_direct) {
		opts.direct_entry = bench_direct_count;
		opts.direct_exit = exit_handler ? bench_direct_exit : NULL;
	}
	if (use_probe) {
		opts.entry = NULL;
		opts.direct_entry = bench_direct_count;
		opts.flags = NEEDLE_ATTACH_ENTRY_ONLY;
	}
	if (needle_attach(&opts, &link) != (int)n) {
		fprintf(stderr, "bench_patch: attach of %zu functions failed\n", n);
		exit(1);
	}
	return link;
}

static void bench_attach(void)
{
	static uint64_t addrs[FUNCS];
	double a1[REPEAT], a10[REPEAT], d10[REPEAT];
	struct needle_stats st = { .sz = sizeof(st) };
	uint64_t syncs_1k = 0, syncs_10k = 0;
	pthread_t t;

	for (int i = 0; i < FUNCS; i++)
		addrs[i] = (uint64_t)(uintptr_t)bench_table[i];
	pthread_create(&t, NULL, caller, NULL);
	for (int r = 0; r < REPEAT; r++) {
		double t0 = now_ns();
		struct needle_link *link = attach_n(addrs, 1000);
		a1[r] = (now_ns() - t0) / 1e6;
		needle_get_stats(&st);
		syncs_1k = st.last_batch_syncs;
		needle_link_destroy(link);

		t0 = now_ns();
		link = attach_n(addrs, FUNCS);
		a10[r] = (now_ns() - t0) / 1e6;
		needle_get_stats(&st);
		syncs_10k = st.last_batch_syncs;
		t0 = now_ns();
		needle_link_detach(link);
		d10[r] = (now_ns() - t0) / 1e6;
		needle_link_destroy(link);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("attach_1k_ms %.3f\n", median(a1, REPEAT));
	printf("attach_10k_ms %.3f\n", median(a10, REPEAT));
	printf("detach_10k_ms %.3f\n", median(d10, REPEAT));
	printf("syncs_per_batch_1k %llu\n", (unsigned long long)syncs_1k);
	printf("syncs_per_batch %llu\n", (unsigned long long)syncs_10k);
}

static double loop_ns(long n)
{
	long s = 0;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		s += bench_count_target(i);
	double t = now_ns() - t0;
	if (s == 42)
		puts("");
	return t / (double)n;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "attach")) {
		bench_attach();
		return 0;
	}
	long n = argc >= 3 ? atol(argv[2]) : 20000000;
	if (argc >= 2 && !strcmp(argv[1], "loop")) {
		double v[REPEAT];
		for (int r = 0; r < REPEAT; r++)
			v[r] = loop_ns(n);
		printf("loop_ns %.3f\n", minimum(v, REPEAT));
		return 0;
	}
	if (argc >= 2 && (!strncmp(argv[1], "count", 5) || !strncmp(argv[1], "hook", 4))) {
		/* hook: an exit handler too, so the return is hooked: the
		 * entry path, the shadow frame and the hijacked return, and no
		 * recording (the ablation between count and function_graph).
		 * _direct: through direct handlers. */
		int hook = !strncmp(argv[1], "hook", 4);
		use_direct = strstr(argv[1], "_direct") != NULL;
		use_probe = !strcmp(argv[1], "count");
		exit_handler = hook ? count_exit : NULL;
		double base[REPEAT], traced[REPEAT];
		uint64_t addr = (uint64_t)(uintptr_t)bench_count_target;
		for (int r = 0; r < REPEAT; r++) {
			base[r] = loop_ns(n);
			struct needle_link *link = attach_n(&addr, 1);
			traced[r] = loop_ns(n);
			needle_link_destroy(link);
		}
		/* The floor of each: noise on a shared VM only ever adds time. */
		double b = minimum(base, REPEAT), t = minimum(traced, REPEAT);
		long entries = counter + direct_counter, returns = exits + direct_exits;
		if (hook) {
			printf("entry_exit_hook%s_ns %.3f\n", use_direct ? "_direct" : "", t - b);
			return entries == (long)REPEAT * n && returns == entries ? 0 : 2;
		}
		if (use_probe)
			printf("untraced_call_ns %.3f\n", b);
		printf("count%s_handler_ns %.3f\n", use_direct ? "_direct" : use_probe ? "" : "_ctx", t - b);
		return entries == (long)REPEAT * n ? 0 : 2;
	}
	fprintf(stderr, "usage: bench_patch attach | loop [N] | count[_ctx|_direct] [N] | hook[_direct] [N]\n");
	return 1;
}
