/* bench_floor - what a compiler-hook tracer's per-call cost is on this
 * machine, as a floor for needle's: the loop of bench_loop.c, built with
 * gcc's -pg -mfentry -minstrument-return=call, whose two hooks each store
 * {return address, rdtsc} with plain stores into a cyclic 1 MiB ring
 * that is never drained (the design of funtrace, the fastest tracer of
 * that kind; floor_hooks.c).  Also the throughput of back-to-back rdtsc, the clock
 * every tracer here reads twice per call.  Prints:
 *   ring_ns_per_call X   (the loop's time per call, hooks recording)
 *   rdtsc_ns X */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The hooks and their ring: floor_hooks.c. */

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The only function built with the hooks (see bench.mk). */
long floor_small(long x);

__attribute__((no_instrument_function)) int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000, s = 0;
	double best = 1e18, t0, t1;

	for (int r = 0; r < 5; r++) {
		t0 = now_ns();
		for (long i = 0; i < n; i++)
			s += floor_small(i);
		t1 = now_ns();
		best = (t1 - t0) / (double)n < best ? (t1 - t0) / (double)n : best;
	}
	printf("ring_ns_per_call %.3f\n", best);
	uint64_t acc = 0;
	best = 1e18;
	for (int r = 0; r < 5; r++) {
		t0 = now_ns();
		for (long i = 0; i < n; i++) {
			uint32_t lo, hi;
			__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
			acc += lo;
		}
		t1 = now_ns();
		best = (t1 - t0) / (double)n < best ? (t1 - t0) / (double)n : best;
	}
	printf("rdtsc_ns %.3f\n", best);
	return (s ^ (long)acc) == 42;
}
