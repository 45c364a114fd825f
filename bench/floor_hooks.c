/* floor_hooks.c - the floor's two compiler hooks, for code built with
 * gcc's -pg -mfentry -minstrument-return=call: __fentry__ at each
 * function's entry and __return__ before each return store {return
 * address, rdtsc} with plain stores into a cyclic 1 MiB ring that is never
 * drained (funtrace's design reduced to its core).  Linked into
 * bench_floor and into SQLite's speedtest1 built for the floor
 * (bench/build_sqlite.sh); non-PIE only (the ring's absolute address). */
#include <stdint.h>

#define RING_BYTES (1 << 20)
uint8_t floor_ring[RING_BYTES] __attribute__((aligned(64)));
uint64_t floor_pos;

/* Both hooks: rax, rdx, rcx saved (the compiler expects every register
 * kept); the entry event holds the return address into the function,
 * the exit event the same with bit 63 set. */
__asm__(".text\n"
	".globl __fentry__\n"
	"__fentry__:\n"
	"	pushq %rax\n	pushq %rdx\n	pushq %rcx\n"
	"	rdtsc\n	shlq $32, %rdx\n	orq %rdx, %rax\n"
	"	movq floor_pos(%rip), %rcx\n"
	"	movq 24(%rsp), %rdx\n"
	"	movq %rdx, floor_ring(%rcx)\n	movq %rax, floor_ring+8(%rcx)\n"
	"	addq $16, %rcx\n	andq $(1 << 20) - 1, %rcx\n	movq %rcx, floor_pos(%rip)\n"
	"	popq %rcx\n	popq %rdx\n	popq %rax\n	ret\n"
	".globl __return__\n"
	"__return__:\n"
	"	pushq %rax\n	pushq %rdx\n	pushq %rcx\n"
	"	rdtsc\n	shlq $32, %rdx\n	orq %rdx, %rax\n"
	"	movq floor_pos(%rip), %rcx\n"
	"	movq 24(%rsp), %rdx\n	btsq $63, %rdx\n"
	"	movq %rdx, floor_ring(%rcx)\n	movq %rax, floor_ring+8(%rcx)\n"
	"	addq $16, %rcx\n	andq $(1 << 20) - 1, %rcx\n	movq %rcx, floor_pos(%rip)\n"
	"	popq %rcx\n	popq %rdx\n	popq %rax\n	ret\n");
