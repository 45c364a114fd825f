/* bench_iter [N] - the traced program's view of a tracer's wake-ups (the
 * seed on buffer readers): N iterations of a function making 50 traced
 * calls, each iteration timed inside the program; prints the 99th and
 * 99.9th percentile and the worst time per iteration, in microseconds:
 *   iter_p99_us X
 *   iter_p999_us X
 *   iter_max_us X */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) long iter_leaf(long x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long iter_body(long x)
{
	for (int i = 0; i < 50; i++)
		x = iter_leaf(x);
	return x;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000, s = 0;
	uint64_t *d = malloc((size_t)n * sizeof(*d));

	if (!d)
		return 1;
	for (long i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		s += iter_body(i);
		d[i] = now_ns() - t0;
	}
	qsort(d, (size_t)n, sizeof(*d), cmp);
	fprintf(stderr, "iter_p99_us %.3f\niter_p999_us %.3f\niter_max_us %.3f\n", d[n * 99 / 100] / 1e3,
		d[n * 999 / 1000] / 1e3, d[n - 1] / 1e3);
	printf("%ld\n", s);
	return 0;
}
