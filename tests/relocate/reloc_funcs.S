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

/* A call among the first bytes: refused (call in the patch). */
	.globl	rel_call_first
	.type	rel_call_first, @function
rel_call_first:
	call	rel_endbr
	addl	$1, %eax
	ret
	.size	rel_call_first, .-rel_call_first

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

/* A jump table: refused (jump table), its first bytes several
 * instructions.  Returns 10 + (n & 1). */
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

	.data
local_value:
	.quad	0x1234567890
local_stored:
	.quad	0

	.section .note.GNU-stack, "", @progbits
