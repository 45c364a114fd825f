/* bench_reloc_lib - the body bench_patch counts (bench_count_target), in an
 * object built without patchable entries, for bench_reloc. */
__attribute__((noinline)) long bench_count_target(long x)
{
	__asm__ volatile("");
	return x * 3 + 7; /* the body bench_patch counts */
}

/* The floor of what a relocated site adds to a NOP5 site, without needle:
 * the same body behind the two direct jumps (site to detour, detour back),
 * the detour's push and pop of r11, and the full trampoline's saves and
 * restores of xmm8-15 (bench_reloc prints it as relocated_extra_floor_ns,
 * bench_floor_extra minus bench_floor_plain). */
__attribute__((noinline)) long bench_floor_plain(long x)
{
	__asm__ volatile("");
	return x * 3 + 7;
}

long bench_floor_extra(long x);
__asm__("	.text\n"
	"	.globl	bench_floor_extra\n"
	"	.type	bench_floor_extra, @function\n"
	"bench_floor_extra:\n"
	"	jmp	1f\n"
	"1:	pushq	%r11\n"
	"	subq	$128, %rsp\n"
	"	movaps	%xmm8, 0(%rsp)\n"
	"	movaps	%xmm9, 16(%rsp)\n"
	"	movaps	%xmm10, 32(%rsp)\n"
	"	movaps	%xmm11, 48(%rsp)\n"
	"	movaps	%xmm12, 64(%rsp)\n"
	"	movaps	%xmm13, 80(%rsp)\n"
	"	movaps	%xmm14, 96(%rsp)\n"
	"	movaps	%xmm15, 112(%rsp)\n"
	"	movaps	0(%rsp), %xmm8\n"
	"	movaps	16(%rsp), %xmm9\n"
	"	movaps	32(%rsp), %xmm10\n"
	"	movaps	48(%rsp), %xmm11\n"
	"	movaps	64(%rsp), %xmm12\n"
	"	movaps	80(%rsp), %xmm13\n"
	"	movaps	96(%rsp), %xmm14\n"
	"	movaps	112(%rsp), %xmm15\n"
	"	addq	$128, %rsp\n"
	"	popq	%r11\n"
	"	jmp	2f\n"
	"2:	leaq	7(%rdi,%rdi,2), %rax\n"
	"	ret\n"
	"	.size	bench_floor_extra, .-bench_floor_extra\n");
