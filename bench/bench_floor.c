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
 *   handler_call_floor_ns X  (the hooked call over the same call plain)
 *   probe_floor_ns X  (the same, with the probe path's own work: see below)
 *   return_hook_floor_ns X  (hooking a call's return, by itself: see below) */
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

/* The probe floor: what an entry-only probe (count_handler_ns) would cost
 * through a trampoline generated for its one consumer, with every address
 * an immediate: the site's first instruction a JMP to its stub, the stub a
 * direct jump to the trampoline (no thunk, no site byte to test), which
 * makes the tests the probe path may not leave out (probe_trampoline.S):
 * the thread's state from initial-exec TLS (a sentinel declines), the
 * fork word, the agent's busy flag, the stack window, no read section
 * open; the read section's store; the consumer still live (its
 * generation, by absolute address, no list walk); the handler's six
 * arguments; an indirect call; the section cleared; and the jump into the
 * function through the site.  What it leaves out against the real path is
 * what only a generated trampoline could drop, so the difference between
 * count_handler_ns and this figure is all such a trampoline could gain. */
struct probe_floor_ts {
	uint64_t stack_window;
	uint64_t rcu_word;
};
static struct probe_floor_ts probe_ts;
__thread struct probe_floor_ts *probe_thread;
__thread int probe_busy;
uint64_t probe_fork_word = 1, probe_gp_generation = 2;
uint32_t probe_generation = 1;
static long probe_hits;
__attribute__((used, noinline, target("general-regs-only"))) int probe_handler(const void *func, const void *regs,
										  uint64_t ret_addr, void *tdata,
										  uint64_t *cookie, void *user_data)
{
	(void)func, (void)regs, (void)ret_addr, (void)tdata, (void)cookie, (void)user_data;
	probe_hits++;
	return 0;
}
void *probe_handler_ptr = (void *)probe_handler;
long probe_hooked(long x);
struct probe_site {
	uint64_t addr;
};
struct probe_site probe_site = { (uint64_t)probe_hooked };
__asm__(".text\n"
	".p2align 4\n"
	"probe_stub:\n"
	"	movabsq $probe_site, %r11\n"
	"	jmp probe_trampoline\n"
	".p2align 4\n"
	"probe_trampoline:\n"
	"	pushq %r11\n pushq %r10\n pushq %rax\n pushq %r9\n pushq %r8\n"
	"	pushq %rcx\n pushq %rdx\n pushq %rsi\n pushq %rdi\n"
	"	leaq -16(%rsp), %rsp\n"
	"	movq %fs:probe_thread@tpoff, %rcx\n"
	"	cmpq $2, %rcx\n"
	"	jbe 9f\n"
	"	cmpq $0, probe_fork_word\n"
	"	je 9f\n"
	"	cmpl $0, %fs:probe_busy@tpoff\n"
	"	jne 9f\n"
	"	leaq 96(%rsp), %rax\n"
	"	shrq $18, %rax\n"
	"	subq (%rcx), %rax\n"
	"	cmpq $2, %rax\n"
	"	ja 9f\n"
	"	testw $0xffff, 8(%rcx)\n"
	"	jne 9f\n"
	"	movq probe_gp_generation, %rax\n"
	"	shlq $16, %rax\n"
	"	orq $1, %rax\n"
	"	movq %rax, 8(%rcx)\n"
	"	testl $1, probe_generation\n"
	"	jz 8f\n"
	"	movq %rcx, 8(%rsp)\n"
	"	movq %r11, %rdi\n"
	"	leaq 16(%rsp), %rsi\n"
	"	movq 88(%rsp), %rdx\n"
	"	xorl %ecx, %ecx\n"
	"	movq $0, (%rsp)\n"
	"	movq %rsp, %r8\n"
	"	movabsq $0x1234, %r9\n"
	"	movabsq $probe_handler, %rax\n"
	"	call *%rax\n"
	"	movq 8(%rsp), %rcx\n"
	"8:	movq $0, 8(%rcx)\n"
	"9:	leaq 16(%rsp), %rsp\n"
	"	popq %rdi\n popq %rsi\n popq %rdx\n popq %rcx\n popq %r8\n"
	"	popq %r9\n popq %rax\n popq %r10\n popq %r11\n"
	"	movq (%r11), %r11\n"
	"	leaq 5(%r11), %r11\n"
	"	jmp *%r11\n"
	".p2align 4\n"
	".globl probe_hooked\n"
	"probe_hooked:\n"
	"	.byte 0xe9\n	.long probe_stub - . - 4\n" /* the site: a JMP rel32, 5 bytes */
	"	leaq 1(%rdi), %rax\n"
	"	ret\n");

/* The return hook's floor: what hooking a call's return costs by itself,
 * as a NOP5 site must to see the exit (needle's return hook, the
 * kernel's function_graph and uftrace's alike), where a compiler's exit
 * hook (-minstrument-return=call, the ring floor's) is a call the
 * program makes.  Both functions below enter through a stub that keeps
 * the caller's return address on a shadow stack in initial-exec TLS;
 * return_hooked's stub also puts its own label in the return address's
 * place, so the function returns there and jumps back through the
 * shadow stack, while return_kept's leaves it and pops the shadow entry
 * at once.  The difference is the hook alone: the return the CPU's
 * return stack predicts and does not get, and the indirect jump back
 * (predicted here, with one caller; a real program has many). */
__thread uint64_t return_shadow[64];
__thread uint64_t *return_shadow_top;
long return_hooked(long x);
long return_kept(long x);
__asm__(".text\n"
	".p2align 4\n"
	"return_hook_stub:\n"
	"	movq %fs:return_shadow_top@tpoff, %r11\n"
	"	movq 8(%rsp), %r10\n"
	"	movq %r10, (%r11)\n"
	"	addq $8, %r11\n"
	"	movq %r11, %fs:return_shadow_top@tpoff\n"
	"	movq $return_hook_landing, 8(%rsp)\n"
	"	ret\n"
	".p2align 4\n"
	"return_hook_landing:\n"
	"	movq %fs:return_shadow_top@tpoff, %r11\n"
	"	subq $8, %r11\n"
	"	movq %r11, %fs:return_shadow_top@tpoff\n"
	"	jmp *(%r11)\n"
	".p2align 4\n"
	"return_keep_stub:\n"
	"	movq %fs:return_shadow_top@tpoff, %r11\n"
	"	movq 8(%rsp), %r10\n"
	"	movq %r10, (%r11)\n"
	"	addq $8, %r11\n"
	"	movq %r11, %fs:return_shadow_top@tpoff\n"
	"	subq $8, %r11\n"
	"	movq %r11, %fs:return_shadow_top@tpoff\n"
	"	cmpq (%r11), %r10\n" /* the landing's read of the entry */
	"	ret\n"
	".p2align 4\n"
	".globl return_hooked\n"
	"return_hooked:\n"
	"	call return_hook_stub\n"
	"	leaq 1(%rdi), %rax\n"
	"	ret\n"
	".p2align 4\n"
	".globl return_kept\n"
	"return_kept:\n"
	"	call return_keep_stub\n"
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
	/* The probe floor's thread, as needle's would be: a state whose stack
	 * window holds this stack. */
	probe_ts.stack_window = ((uintptr_t)&s >> 18) - 1;
	probe_thread = &probe_ts;
	long (*volatile probed)(long) = probe_hooked;
	double pr = loop_best(probed, n, &s);
	p = loop_best(plain, n, &s);
	printf("probe_floor_ns %.3f\n", pr - p);
	return_shadow_top = return_shadow;
	long (*volatile rh)(long) = return_hooked, (*volatile rk)(long) = return_kept;
	double rhk = loop_best(rh, n, &s), rkp = loop_best(rk, n, &s);
	printf("return_hook_floor_ns %.3f\n", rhk - rkp);
	if (return_shadow_top != return_shadow) {
		fprintf(stderr, "bench_floor: the return hook's shadow stack is off by %td\n",
			return_shadow_top - return_shadow);
		return 1;
	}
	if (probe_hits != 5 * n) {
		fprintf(stderr, "bench_floor: the probe floor's handler ran %ld times, not %ld\n", probe_hits, 5 * n);
		return 1;
	}
	return (s ^ (long)acc ^ handler_hits ^ probe_hits) == 42;
}
