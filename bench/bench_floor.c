/* bench_floor - what a compiler-hook tracer's per-call cost is on this
 * machine, as a floor for needle's: the loop of bench_loop.c, built with
 * gcc's -pg -mfentry -minstrument-return=call, whose two hooks each store
 * {return address, rdtsc} with plain stores into a cyclic 1 MiB ring
 * that is never drained (the design of funtrace, the fastest tracer of
 * that kind; floor_hooks.c).  Also the throughput of back-to-back rdtsc, the clock
 * every tracer here reads twice per call; and the floor of any entry
 * handler in C that a patched site reaches (count_handler_ns's): the
 * function's first instruction a call of a stub, the stub a jump to a
 * trampoline that saves the registers a call may clobber (the arguments
 * are live), calls an empty handler built -mgeneral-regs-only, restores
 * them and returns, with nothing else (no thread state, no read section,
 * no consumer).  Prints:
 *   ring_ns_per_call X   (the loop's time per call, hooks recording)
 *   rdtsc_ns X
 *   handler_call_floor_ns X  (the hooked call over the same call plain) */
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

/* The handler-call floor: floor_hooked is floor_plain with the site's
 * call in front. */
long floor_hooked(long x);
long floor_plain(long x);
static long handler_hits;
__attribute__((used, noinline, target("general-regs-only"))) void floor_handler(void)
{
	handler_hits++;
}
__asm__(".text\n"
	".p2align 4\n"
	"floor_stub:\n"
	"	movabsq $0x1234, %r11\n" /* a site's stub loads its site */
	"	jmp floor_trampoline\n"
	".p2align 4\n"
	"floor_trampoline:\n"
	"	pushq %rax\n pushq %rdi\n pushq %rsi\n pushq %rdx\n pushq %rcx\n"
	"	pushq %r8\n pushq %r9\n pushq %r10\n pushq %r11\n"
	"	subq $8, %rsp\n" /* the handler's call 16-byte aligned */
	"	call floor_handler\n"
	"	addq $8, %rsp\n"
	"	popq %r11\n popq %r10\n popq %r9\n popq %r8\n popq %rcx\n"
	"	popq %rdx\n popq %rsi\n popq %rdi\n popq %rax\n"
	"	ret\n"
	".p2align 4\n"
	".globl floor_hooked\n"
	"floor_hooked:\n"
	"	call floor_stub\n"
	"	leaq 1(%rdi), %rax\n"
	"	ret\n"
	".p2align 4\n"
	".globl floor_plain\n"
	"floor_plain:\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* the unpatched site's nop5 */
	"	leaq 1(%rdi), %rax\n"
	"	ret\n");

static double loop_best(long (*fn)(long), long n, long *s)
{
	double best = 1e18;
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			*s += fn(i);
		double t1 = now_ns();
		best = (t1 - t0) / (double)n < best ? (t1 - t0) / (double)n : best;
	}
	return best;
}

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
	/* Called through a pointer, as bench_patch calls its target. */
	long (*volatile hooked)(long) = floor_hooked, (*volatile plain)(long) = floor_plain;
	double h = loop_best(hooked, n, &s), p = loop_best(plain, n, &s);
	printf("handler_call_floor_ns %.3f\n", h - p);
	return (s ^ (long)acc ^ handler_hits) == 42;
}
