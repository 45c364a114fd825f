/* bench_args [N] - N calls of a function with two integer arguments;
 * prints on stderr the time per call measured inside the program
 * ("ns_per_call X"), for argument capture against plain recording. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) long bench_args2(long a, long b)
{
	__asm__ volatile("");
	return a + b;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	struct timespec t0, t1;
	long s = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		s += bench_args2(i, s & 0xff);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "ns_per_call %.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n);
	printf("%ld\n", s);
	return 0;
}
