/* reloc_funcs.S - functions whose first instructions exercise every rule of
 * relocation (src/agent/arch/x86_64/relocate.c), in a shared object built
 * without patchable entries: test_relocate.c attaches to the ones that
 * must relocate and checks that the others were refused, by reason. */
	.text

/* rip-relative load in the first instruction: relocated. */
	.globl	rel_riprel_load
	.type	rel_riprel_load, @function
rel_riprel_load:
	movq	local_value(%rip), %rax
	ret
	.size	rel_riprel_load, .-rel_riprel_load

/* rip-relative lea: relocated; returns the address of reloc_value. */
	.globl	rel_lea
	.type	rel_lea, @function
rel_lea:
	leaq	local_value(%rip), %rax
	ret
	.size	rel_lea, .-rel_lea

/* rip-relative store of the argument: relocated. */
	.globl	rel_store
	.type	rel_store, @function
rel_store:
	movq	%rdi, local_stored(%rip)
	movq	%rdi, %rax
	ret
	.size	rel_store, .-rel_store

/* A short conditional jump among the first bytes, to past them:
 * relocated, the jcc widened to rel32.  Returns 1 for a non-zero
 * argument, 2 for zero. */
	.globl	rel_jcc
	.type	rel_jcc, @function
rel_jcc:
	testl	%edi, %edi
	je	1f
	movl	$1, %eax
	ret
1:	movl	$2, %eax
	ret
	.size	rel_jcc, .-rel_jcc

/* An unconditional short jump first, over an instruction never run:
 * relocated.  Returns 42. */
	.globl	rel_jmp
	.type	rel_jmp, @function
rel_jmp:
	jmp	1f
	movl	$99, %eax
1:	movl	$42, %eax
	ret
	.size	rel_jmp, .-rel_jmp

/* endbr64, then a 5-byte instruction: the site is past endbr64. */
	.globl	rel_endbr
	.type	rel_endbr, @function
rel_endbr:
	endbr64
	movl	$7, %eax
	ret
	.size	rel_endbr, .-rel_endbr

/* A loop back into the covered bytes: refused (branch into the patch).
 * Returns the sum 1..n. */
	.globl	rel_loop_back
	.type	rel_loop_back, @function
rel_loop_back:
	xorl	%eax, %eax
1:	addl	%edi, %eax
	decl	%edi
	jnz	1b
	ret
	.size	rel_loop_back, .-rel_loop_back

/* A call as the last covered instruction: relocated (the detour pushes
 * the original return address, rel_call_first + 5, and jumps to the
 * callee).  Returns 8. */
	.globl	rel_call_first
	.type	rel_call_first, @function
rel_call_first:
	call	rel_endbr
	addl	$1, %eax
	ret
	.size	rel_call_first, .-rel_call_first

/* Returns the address its call returns to, as the callee sees it: the
 * original one, rel_call_retaddr + 5, relocated or not. */
	.globl	rel_call_retaddr
	.type	rel_call_retaddr, @function
rel_call_retaddr:
	call	rel_peek_ret
	ret
	.size	rel_call_retaddr, .-rel_call_retaddr

	.type	rel_peek_ret, @function
rel_peek_ret:
	movq	(%rsp), %rax
	ret
	.size	rel_peek_ret, .-rel_peek_ret

/* A 2-byte call followed by more covered bytes: its return lands inside
 * them, refused (call in the patch).  Calls its argument; returns what
 * that returns + 1. */
	.globl	rel_call_reg
	.type	rel_call_reg, @function
rel_call_reg:
	call	*%rdi
	addl	$1, %eax
	ret
	.size	rel_call_reg, .-rel_call_reg

/* A switch as compilers emit it: a bounded table of 32-bit offsets whose
 * targets all lie past the covered bytes: relocated.  Returns 20 + n for
 * n in 0..3, -1 otherwise. */
	.globl	rel_switch
	.type	rel_switch, @function
rel_switch:
	cmpl	$3, %edi
	ja	9f
	movl	%edi, %edi
	leaq	4f(%rip), %rdx
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
5:	movl	$20, %eax
	ret
6:	movl	$21, %eax
	ret
7:	movl	$22, %eax
	ret
8:	movl	$23, %eax
	ret
9:	movl	$-1, %eax
	ret
	.section .rodata
	.p2align 2
4:	.long	5b - 4b, 6b - 4b, 7b - 4b, 8b - 4b
	.text
	.size	rel_switch, .-rel_switch

/* The same, with one entry of the table back into the covered bytes (no
 * direct branch goes there): refused (branch into the patch).  Returns
 * 10 for n = 0, 20 for n = 1 (the table's way round the loop). */
	.globl	rel_switch_into
	.type	rel_switch_into, @function
rel_switch_into:
	xorl	%eax, %eax
1:	addl	$10, %eax
	cmpl	$1, %edi
	ja	9f
	movl	%edi, %ecx
	leaq	4f(%rip), %rdx
	movslq	(%rdx,%rcx,4), %rcx
	addq	%rdx, %rcx
	movl	$0, %edi
	jmp	*%rcx
5:	ret
9:	movl	$-1, %eax
	ret
	.section .rodata
	.p2align 2
4:	.long	5b - 4b, 1b - 4b
	.text
	.size	rel_switch_into, .-rel_switch_into

/* A tail call through a pointer, the stack as at entry (the call-frame
 * information says so): its targets are function entries, relocated.
 * Calls its argument with 0. */
	.globl	rel_tail_ptr
	.type	rel_tail_ptr, @function
rel_tail_ptr:
	.cfi_startproc
	movq	%rdi, %rax
	xorl	%edi, %edi
	jmp	*%rax
	.cfi_endproc
	.size	rel_tail_ptr, .-rel_tail_ptr

/* A jump through a register with a frame pushed: not a tail call, its
 * target unknown: refused (jump table).  Returns 5. */
	.globl	rel_goto_framed
	.type	rel_goto_framed, @function
rel_goto_framed:
	.cfi_startproc
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	leaq	1f(%rip), %rax
	jmp	*%rax
1:	movl	$5, %eax
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	rel_goto_framed, .-rel_goto_framed

/* A jump table without a bound check (the index masked instead): its
 * size unknown, refused (jump table).  Returns 10 + (n & 1). */
	.globl	rel_jump_table
	.type	rel_jump_table, @function
rel_jump_table:
	andl	$1, %edi
	leaq	2f(%rip), %rax
	jmp	*(%rax,%rdi,8)
1:	movl	$10, %eax
	ret
3:	movl	$11, %eax
	ret
	.section .data.rel.ro, "aw"
	.p2align 3
2:	.quad	1b
	.quad	3b
	.text
	.size	rel_jump_table, .-rel_jump_table

/* A system call among the first bytes: refused (syscall in the patch).
 * getpid. */
	.globl	rel_syscall
	.type	rel_syscall, @function
rel_syscall:
	xorl	%eax, %eax
	movb	$39, %al
	syscall
	ret
	.size	rel_syscall, .-rel_syscall

/* Shorter than the patch: refused (too short).  Returns its argument. */
	.globl	rel_tiny
	.type	rel_tiny, @function
rel_tiny:
	movl	%edi, %eax
	ret
	.size	rel_tiny, .-rel_tiny

/* What rel_store stored last (read without relocation: refused, it is
 * two instructions of which the second is a ret). */
	.globl	rel_stored
	.type	rel_stored, @function
rel_stored:
	movq	local_stored(%rip), %rax
	ret
	.size	rel_stored, .-rel_stored

/* A leaf that changes no register but eax (its first instruction is 5
 * bytes: relocated), and a caller in the same object that keeps a value
 * in every other caller-saved register across the call, as gcc's
 * -fipa-ra lets a caller of such a leaf do.  rel_keep_caller returns the
 * mask of the registers that came back changed: bits 0-7 rcx, rdx, rsi,
 * rdi, r8, r9, r10, r11; bits 8-23 xmm0-15.  Through the relocated entry
 * and the hijacked return, the full path or the direct one, it must be 0. */
	.globl	rel_keep_leaf
	.type	rel_keep_leaf, @function
rel_keep_leaf:
.Lkeep_leaf:
	movl	$7, %eax
	ret
	.size	rel_keep_leaf, .-rel_keep_leaf

	.globl	rel_keep_caller
	.type	rel_keep_caller, @function
rel_keep_caller:
	pushq	%rbx
	movq	$0x101, %rcx
	movq	$0x102, %rdx
	movq	$0x103, %rsi
	movq	$0x104, %rdi
	movq	$0x105, %r8
	movq	$0x106, %r9
	movq	$0x107, %r10
	movq	$0x108, %r11
	movq	$0x200, %rax
	movq	%rax, %xmm0
	movq	$0x201, %rax
	movq	%rax, %xmm1
	movq	$0x202, %rax
	movq	%rax, %xmm2
	movq	$0x203, %rax
	movq	%rax, %xmm3
	movq	$0x204, %rax
	movq	%rax, %xmm4
	movq	$0x205, %rax
	movq	%rax, %xmm5
	movq	$0x206, %rax
	movq	%rax, %xmm6
	movq	$0x207, %rax
	movq	%rax, %xmm7
	movq	$0x208, %rax
	movq	%rax, %xmm8
	movq	$0x209, %rax
	movq	%rax, %xmm9
	movq	$0x20a, %rax
	movq	%rax, %xmm10
	movq	$0x20b, %rax
	movq	%rax, %xmm11
	movq	$0x20c, %rax
	movq	%rax, %xmm12
	movq	$0x20d, %rax
	movq	%rax, %xmm13
	movq	$0x20e, %rax
	movq	%rax, %xmm14
	movq	$0x20f, %rax
	movq	%rax, %xmm15
	call	.Lkeep_leaf
	xorl	%ebx, %ebx
	cmpq	$0x101, %rcx
	je	1f
	orl	$0x1, %ebx
1:
	cmpq	$0x102, %rdx
	je	1f
	orl	$0x2, %ebx
1:
	cmpq	$0x103, %rsi
	je	1f
	orl	$0x4, %ebx
1:
	cmpq	$0x104, %rdi
	je	1f
	orl	$0x8, %ebx
1:
	cmpq	$0x105, %r8
	je	1f
	orl	$0x10, %ebx
1:
	cmpq	$0x106, %r9
	je	1f
	orl	$0x20, %ebx
1:
	cmpq	$0x107, %r10
	je	1f
	orl	$0x40, %ebx
1:
	cmpq	$0x108, %r11
	je	1f
	orl	$0x80, %ebx
1:
	movq	%xmm0, %rax
	cmpq	$0x200, %rax
	je	1f
	orl	$0x100, %ebx
1:
	movq	%xmm1, %rax
	cmpq	$0x201, %rax
	je	1f
	orl	$0x200, %ebx
1:
	movq	%xmm2, %rax
	cmpq	$0x202, %rax
	je	1f
	orl	$0x400, %ebx
1:
	movq	%xmm3, %rax
	cmpq	$0x203, %rax
	je	1f
	orl	$0x800, %ebx
1:
	movq	%xmm4, %rax
	cmpq	$0x204, %rax
	je	1f
	orl	$0x1000, %ebx
1:
	movq	%xmm5, %rax
	cmpq	$0x205, %rax
	je	1f
	orl	$0x2000, %ebx
1:
	movq	%xmm6, %rax
	cmpq	$0x206, %rax
	je	1f
	orl	$0x4000, %ebx
1:
	movq	%xmm7, %rax
	cmpq	$0x207, %rax
	je	1f
	orl	$0x8000, %ebx
1:
	movq	%xmm8, %rax
	cmpq	$0x208, %rax
	je	1f
	orl	$0x10000, %ebx
1:
	movq	%xmm9, %rax
	cmpq	$0x209, %rax
	je	1f
	orl	$0x20000, %ebx
1:
	movq	%xmm10, %rax
	cmpq	$0x20a, %rax
	je	1f
	orl	$0x40000, %ebx
1:
	movq	%xmm11, %rax
	cmpq	$0x20b, %rax
	je	1f
	orl	$0x80000, %ebx
1:
	movq	%xmm12, %rax
	cmpq	$0x20c, %rax
	je	1f
	orl	$0x100000, %ebx
1:
	movq	%xmm13, %rax
	cmpq	$0x20d, %rax
	je	1f
	orl	$0x200000, %ebx
1:
	movq	%xmm14, %rax
	cmpq	$0x20e, %rax
	je	1f
	orl	$0x400000, %ebx
1:
	movq	%xmm15, %rax
	cmpq	$0x20f, %rax
	je	1f
	orl	$0x800000, %ebx
1:
	movl	%ebx, %eax
	popq	%rbx
	ret
	.size	rel_keep_caller, .-rel_keep_caller

	.data
local_value:
	.quad	0x1234567890
local_stored:
	.quad	0

	.section .note.GNU-stack, "", @progbits
