/* probe_trampoline.S - the probe path: a call of a function whose only
 * consumer is entry only (NEEDLE_ATTACH_ENTRY_ONLY), from the calling
 * trampoline (arch/x86_64/trampoline.S) straight to the link's direct
 * entry handler: the thread's tests, one read section, one indirect call,
 * no needle_ctx, no frame, no C of needle's.  The kernel's ftrace_ops
 * with only a func, alone on a function, called from a trampoline of its
 * own; dispatch_direct.c's direct_probe is the same path in C.
 *
 * Two subroutines, called by the calling trampolines:
 *   needle_probe_entry              from needle_calling_trampoline
 *   needle_probe_entry_relocated    from needle_calling_trampoline_relocated
 * Their contract with the trampolines: every general-purpose register
 * comes back as it came (all argument registers are live at an entry,
 * and a relocated function's callers may keep a value in any register:
 * -fipa-ra), no vector register is touched (the handler's contract,
 * needle.h: -mgeneral-regs-only), and the flags say what happened: "not
 * zero" when the handler ran (the trampoline goes on into the function,
 * whose return is not hooked), "zero" when declined with nothing done
 * (the trampoline goes on to the C direct path, then the full path, which
 * decide the call whole).
 *
 * Invariants:
 *   - The same tests, in the same order, as direct_thread
 *     (direct_path.h) before direct_probe (dispatch_direct.c): a thread
 *     with a state it owns (not a sentinel, not a raw fork's stale copy),
 *     not inside the agent, on its own stack (a raw clone that shares its
 *     creator's TLS runs elsewhere, and must not share its read-section
 *     word either), no read section open (the recursion guard: a traced
 *     call a handler makes is not dispatched).
 *   - regs, the nine saves, start 16-byte aligned (struct needle_regs's
 *     alignment), and so does the stack at the handler's call.
 *   - The read section (rcu.h): the word is stored before the site's
 *     list is loaded and cleared after the handler returns.  A detach
 *     swaps the site's list, retires the consumer (its generation), then
 *     waits for a grace period: a thread that stored its word before the
 *     grace period began is waited for, handler and all; one that stores
 *     it later loads the new list (membarrier, rcu.h) and declines, or
 *     finds the consumer retired (even generation) and declines.  So when
 *     the grace period ends no thread is inside the handler or reading
 *     the consumer, and link.c may free them.
 *   - The site's direct_graph byte (SITE_PROBE_ASM) is only a hint:
 *     every condition is tested on every call, so a stale byte costs a
 *     decline, never a wrong call. */
#include "agent/dispatch/direct_layout.h"

	.text

/* `above`: bytes left free above the nine saves, so that the lowest
 * (regs) is 16-byte aligned; below them the cookie at 0 and the thread's
 * state at 8, and so the handler's call is 16-byte aligned too.
 * `ret_at`: where the traced function's return address lies above this
 * subroutine's own return address. */
.macro PROBE_ENTRY above, ret_at
	probe_pad = 16
	probe_ret = \above + 72 + probe_pad + \ret_at
	.if \above
	leaq	-\above(%rsp), %rsp
	.cfi_adjust_cfa_offset \above
	.endif
	/* struct needle_regs's integer part (rdi lowest), then r11, the
	 * site: the handler reads its arguments there. */
	.irp r, r11, r10, rax, r9, r8, rcx, rdx, rsi, rdi
	pushq	%\r
	.cfi_adjust_cfa_offset 8
	.endr
	leaq	-probe_pad(%rsp), %rsp
	.cfi_adjust_cfa_offset probe_pad
	/* The thread (direct_path.h's direct_thread), the stack tested at
	 * the traced function's stack pointer, past its return address. */
	movq	needle_thread@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rcx
	cmpq	$G_THREAD_STATE_SENTINEL_MAX, %rcx
	jbe	9f
	movq	thread_state_fork_word(%rip), %rax
	cmpq	$0, (%rax)
	je	9f
	movq	needle_agent_busy@gottpoff(%rip), %rax
	cmpl	$0, %fs:(%rax)
	jne	9f
	leaq	probe_ret + 8(%rsp), %rax
	shrq	$G_STACK_BLOCK_SHIFT, %rax
	subq	G_TS_STACK_WINDOW(%rcx), %rax
	cmpq	$G_STACK_WINDOW_BLOCKS - 1, %rax
	ja	9f
	testw	$0xffff, G_TS_RCU_WORD(%rcx)
	jne	9f
	/* rcu_read_lock_outer: the generation and a nesting of 1 in the
	 * thread's word, one store, no fence (the writer's membarrier
	 * orders it, rcu.h). */
	movq	rcu_gp_generation(%rip), %rax
	shlq	$G_RCU_NEST_BITS, %rax
	orq	$1, %rax
	movq	%rax, G_TS_RCU_WORD(%rcx)
	/* direct_sole_consumer: a list of one, live, entry only.  Plain
	 * loads are acquire loads under TSO (consumer_set_ops' release). */
	movq	G_SITE_CONSUMERS(%r11), %rax
	testq	%rax, %rax
	jz	8f
	cmpl	$1, G_LIST_CNT(%rax)
	jne	8f
	movq	G_LIST_ITEMS(%rax), %rax
	movq	G_C_OPS(%rax), %rdx
	testl	$1, G_C_GENERATION(%rax)
	jz	8f
	cmpb	$0, G_OPS_PROBE(%rdx)
	je	8f
	/* direct_entry(&site->func, regs, ret_addr, NULL, &cookie,
	 * user_data); its answer is ignored (entry only). */
	movq	%rcx, 8(%rsp)
	movq	G_C_USER_DATA(%rax), %r9
	movq	G_OPS_DIRECT_ENTRY(%rdx), %rax
	movq	%r11, %rdi
	leaq	probe_pad(%rsp), %rsi
	movq	probe_ret(%rsp), %rdx
	xorl	%ecx, %ecx
	movq	$0, (%rsp)
	movq	%rsp, %r8
	call	*%rax
	movq	8(%rsp), %rcx
	/* rcu_read_unlock(ts, 0): a plain store, a release under TSO. */
	movq	$0, G_TS_RCU_WORD(%rcx)
	movl	$1, %eax
	testl	%eax, %eax              /* taken: not zero */
	jmp	7f
8:	movq	$0, G_TS_RCU_WORD(%rcx)
9:	xorl	%eax, %eax              /* declined: zero */
	/* lea and pop leave the flags alone. */
7:	leaq	probe_pad(%rsp), %rsp
	.cfi_adjust_cfa_offset -probe_pad
	.irp r, rdi, rsi, rdx, rcx, r8, r9, rax, r10, r11
	popq	%\r
	.cfi_adjust_cfa_offset -8
	.endr
	.if \above
	leaq	\above(%rsp), %rsp
	.cfi_adjust_cfa_offset -\above
	.endif
	ret
.endm

	/* From needle_calling_trampoline: [rsp + 8] = the traced function's
	 * return address, r11 = struct site *; rsp is 16-byte aligned, so
	 * 8 bytes are left above the saves. */
	.globl	needle_probe_entry
	.hidden	needle_probe_entry
	.type	needle_probe_entry, @function
	.p2align 4
needle_probe_entry:
	.cfi_startproc
	PROBE_ENTRY 8, 8
	.cfi_endproc
	.size	needle_probe_entry, .-needle_probe_entry

	/* From needle_calling_trampoline_relocated: [rsp + 8] = the
	 * program's r11, [rsp + 16] = the return address; rsp is 8 bytes
	 * off 16, so the saves end aligned as they are. */
	.globl	needle_probe_entry_relocated
	.hidden	needle_probe_entry_relocated
	.type	needle_probe_entry_relocated, @function
	.p2align 4
needle_probe_entry_relocated:
	.cfi_startproc
	PROBE_ENTRY 0, 16
	.cfi_endproc
	.size	needle_probe_entry_relocated, .-needle_probe_entry_relocated

	.section .note.GNU-stack, "", @progbits
