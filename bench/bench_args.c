/* bench_args [N] [str] - N calls of a function with two integer
 * arguments (or, with "str", one pointing to a 16-byte string);
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

__attribute__((noinline)) long bench_str16(const char *p)
{
	__asm__ volatile("" : : "r"(p));
	return p[0];
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	int str = argc > 2 && argv[2][0] == 's';
	static const char key[] = "user:0123456789a"; /* 16 bytes */
	struct timespec t0, t1;
	long s = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		s += str ? bench_str16(key) : bench_args2(i, s & 0xff);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "ns_per_call %.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n);
	printf("%ld\n", s);
	return 0;
}
