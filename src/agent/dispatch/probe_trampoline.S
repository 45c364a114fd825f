/* probe_trampoline.S - the probe path: a call of a function whose only
 * consumer is entry only (NEEDLE_ATTACH_ENTRY_ONLY), from the calling
 * trampoline (arch/x86_64/trampoline.S) straight to the link's direct
 * entry handler: the thread's tests, one read section, one indirect call,
 * no needle_ctx, no frame, no C of needle's.  The kernel's ftrace_ops
 * with only a func, alone on a function, called from a trampoline of its
 * own; dispatch_direct.c's direct_probe is the same path in C.
 *
 * Two entries, jumped to by the calling trampolines, which go on into
 * the function themselves when the handler ran, or back to the
 * trampoline's C direct path when it declined:
 *   needle_probe_calling            from needle_calling_trampoline, or from a
 *                                   site's probe stub; declines to
 *                                   needle_calling_direct_c_tests
 *   needle_probe_calling_relocated  from needle_calling_trampoline_relocated;
 *                                   declines to needle_calling_direct_c_relocated_tests
 * Their contract with the trampolines: every general-purpose register
 * comes back as it came (all argument registers are live at an entry,
 * and a relocated function's callers may keep a value in any register:
 * -fipa-ra), but r11 where needle_probe_calling goes on into a compiled
 * function (the stub took r11 already: no compiled entry reads it); no
 * vector register is touched (the handler's contract, needle.h:
 * -mgeneral-regs-only).  A call declined was left alone: the calling
 * trampoline's own tests (direct_skip, consumer_direct_users: a site
 * whose probe stub outlived its entry-only consumer must still honour
 * NEEDLE_DIRECT_DECLINE_FUNC), the C direct path, then the full path,
 * decide it whole.
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
 *   - The consumer is tested on its solo list's line alone
 *     (consumer_list.probe, which consumer.c keeps equal to "this list
 *     is one consumer's, live, and its ops are entry only": the C path's
 *     three tests), so a call reads the site, the list, and nothing of
 *     the consumer or its ops.
 *   - The read section (rcu.h): the word is stored before the site's
 *     list is loaded and cleared after the handler returns.  A detach
 *     swaps the site's list, retires the consumer (its solo list's probe
 *     cleared, its generation), then waits for a grace period; new
 *     handlers (needle_link_set_handlers) store the probe, then wait for
 *     one too.  A thread that stored its word before the grace period
 *     began is waited for, handler and all; one that stores it later
 *     loads the new list or the new probe (membarrier, rcu.h) and
 *     declines or calls the new handler.  So when the grace period ends
 *     no thread is inside the old handler or reading the list, and
 *     link.c may free them.
 *   - The site's direct_graph byte (SITE_PROBE_ASM) is only a hint:
 *     every condition is tested on every call, so a stale byte costs a
 *     decline, never a wrong call. */
#include "agent/arch/x86_64/trampoline_layout.h"
#include "agent/dispatch/direct_asm.h"

	.text

/* `above`: bytes left free above the nine saves, so that the lowest
 * (regs) is 16-byte aligned; below them the cookie at 0 and the thread's
 * state at 8, and so the handler's call is 16-byte aligned too.
 * `ret_at`: where the traced function's return address lies above rsp
 * as it came.  `decline`: the label a declined call jumps to, with every
 * register as it came.  `relocated`: the function's code is its detour's
 * body, entered with the program's r11, which lies at rsp as it came. */
.macro PROBE_ENTRY above, ret_at, decline, relocated
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
	 * the traced function's stack pointer, past its return address;
	 * then rcu_read_lock_outer. */
	leaq	probe_ret + 8(%rsp), %rdi
	DIRECT_THREAD 9f
	DIRECT_READ_LOCK
	/* The site's list: one live entry-only consumer's solo list, whose
	 * probe is its direct entry (consumer_list.probe: NULL in any other
	 * list, and in a solo list once its consumer is retired or given
	 * other handlers), read with its user_data from the list's line. */
	movq	G_SITE_CONSUMERS(%r11), %rax
	testq	%rax, %rax
	jz	8f
	movq	G_LIST_PROBE(%rax), %r10
	testq	%r10, %r10
	jz	8f
	/* direct_entry(&site->func, regs, ret_addr, NULL, &cookie,
	 * user_data); its answer is ignored (entry only). */
	movq	%rcx, 8(%rsp)
	movq	G_LIST_PROBE_USER_DATA(%rax), %r9
	movq	%r11, %rdi
	leaq	probe_pad(%rsp), %rsi
	movq	probe_ret(%rsp), %rdx
	xorl	%ecx, %ecx
	movq	$0, (%rsp)
	movq	%rsp, %r8
	call	*%r10
	movq	8(%rsp), %rcx
	DIRECT_READ_UNLOCK
	movl	$1, %eax
	testl	%eax, %eax              /* taken: not zero */
	jmp	7f
8:	DIRECT_READ_UNLOCK
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
	jz	\decline
	.if \relocated
	/* Into the detour's body, with the program's r11: the target goes
	 * below the stack, in the red zone a signal frame never writes, as
	 * needle_calling_trampoline_relocated puts it. */
	movq	SITE_DETOUR_OFFSET(%r11), %r11
	leaq	DETOUR_BODY_OFFSET(%r11), %r11
	movq	%r11, -8(%rsp)
	movq	(%rsp), %r11
	leaq	8(%rsp), %rsp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r11
	jmp	*-16(%rsp)
	.else
	/* Into the function, past its site (r11 the site, free now). */
	movq	SITE_ADDR_OFFSET(%r11), %r11
	leaq	SITE_LEN(%r11), %r11
	jmp	*%r11
	.endif
.endm

	/* From needle_calling_trampoline, by a jmp: [rsp] = the traced
	 * function's return address, r11 = struct site *; rsp is 8 bytes off
	 * 16, so the saves end aligned as they are. */
	.globl	needle_probe_calling
	.hidden	needle_probe_calling
	.type	needle_probe_calling, @function
	.p2align 4
needle_probe_calling:
	.cfi_startproc
	endbr64                         /* reached by the probe thunk's indirect jmp */
	PROBE_ENTRY 0, 0, needle_calling_direct_c_tests, 0
	.cfi_endproc
	.size	needle_probe_calling, .-needle_probe_calling

	/* From needle_calling_trampoline_relocated, by a jmp: [rsp] = the
	 * program's r11, [rsp + 8] = the return address, r11 = struct site
	 * *; rsp is 16-byte aligned, so 8 bytes are left above the saves. */
	.globl	needle_probe_calling_relocated
	.hidden	needle_probe_calling_relocated
	.type	needle_probe_calling_relocated, @function
	.p2align 4
needle_probe_calling_relocated:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	.cfi_offset %r11, -16
	PROBE_ENTRY 8, 8, needle_calling_direct_c_relocated_tests, 1
	.cfi_endproc
	.size	needle_probe_calling_relocated, .-needle_probe_calling_relocated

	.section .note.GNU-stack, "", @progbits
