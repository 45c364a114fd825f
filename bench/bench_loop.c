/* bench_loop [N] - N calls of a small function; prints on stderr the time
 * per call measured inside the program ("ns_per_call X"), so that the
 * tracer's start-up and shutdown are not counted. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) long bench_small(long x)
{
	__asm__ volatile("");
	return x + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	struct timespec a, b;
	long s = 0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		s += bench_small(i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "ns_per_call %.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n);
	printf("%ld\n", s);
	return 0;
}
