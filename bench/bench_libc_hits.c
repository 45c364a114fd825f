/* bench_libc_hits [N] [ROUNDS] - ROUNDS timed loops of N calls of the C
 * library's labs, for bench_libc_uprobes.sh.
 *
 * Prints "main_realtime_ns T" first thing in main: both tracers compared
 * are in place before main runs (needle record's agent patches from its
 * constructor, bpftrace -c execs the program only once every probe is
 * attached), so launch-to-main, minus the same untraced, is the time to
 * attach.  Then one "ns_per_call X" line per round, measured inside the
 * program so that neither tracer's start-up nor shutdown counts; several
 * rounds in one process let a tracer that takes minutes to attach be
 * measured more than once for one attach.  "end_realtime_ns T" last: how
 * long the tracer takes to exit after the program. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	struct timespec now, a, b;

	clock_gettime(CLOCK_REALTIME, &now);
	printf("main_realtime_ns %lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
	fflush(stdout);

	long n = argc > 1 ? atol(argv[1]) : 10000000;
	int rounds = argc > 2 ? atoi(argv[2]) : 1;
	/* Through a pointer: gcc would otherwise inline labs as a builtin. */
	long (*volatile hot)(long) = labs;
	long s = 0;

	for (int r = 0; r < rounds && n > 0; r++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (long i = 0; i < n; i++)
			s += hot(i - n / 2);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("ns_per_call %.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n);
		fflush(stdout);
	}
	fprintf(stderr, "%ld\n", s);
	clock_gettime(CLOCK_REALTIME, &now);
	printf("end_realtime_ns %lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
	return 0;
}
