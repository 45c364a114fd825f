/* trampoline.S - the code a patched site calls, and the code a hijacked
 * return lands in.  Both save what the traced code may still need (the
 * argument registers on entry, the return registers on exit), align the
 * stack to 16 bytes and call into C.
 *
 * At a site the traced function has just been called and has not touched
 * its stack yet, so there is no live red zone to protect; the trampoline
 * only grows the stack below the return address the CALL pushed.
 *
 * Both build a struct needle_ctx (include/needle.h) on the stack, so the
 * handler reads saved registers in place:
 *   regs:  0 rdi  8 rsi  16 rdx  24 rcx  32 r8  40 r9  48 rax  56 r10
 *          64 + 16*i: xmm<i>, i = 0..7
 *   192 func (struct needle_func *)   200 is_exit   204 exit_flags (exits)
 *   208 thread_data   216 call_data (set by dispatch)
 *   224 sp: the traced function's stack pointer at its entry, its
 *       caller's after the return at an exit            total 240 bytes
 * A struct site starts with its struct needle_func, so the entry side
 * stores the site pointer from r11 as ctx->func: no C stores at all.
 */
#include "agent/arch/x86_64/trampoline_layout.h"

#define CTX_SIZE 240
#define CTX_FUNC 192
#define CTX_IS_EXIT 200
#define CTX_EXIT_FLAGS 204
#define EXIT_NO_RETVAL 1 /* NEEDLE_EXIT_NO_RETVAL */
#define CTX_SP 224
/* The argument registers (and rax, r10, xmm0-7) in the ctx's regs, and
 * back; xmm8-15 above the ctx, for the full trampolines. */
.macro SAVE_ARGS
	movq	%rdi, 0(%rsp)
	movq	%rsi, 8(%rsp)
	movq	%rdx, 16(%rsp)
	movq	%rcx, 24(%rsp)
	movq	%r8, 32(%rsp)
	movq	%r9, 40(%rsp)
	movq	%rax, 48(%rsp)
	movq	%r10, 56(%rsp)
	movaps	%xmm0, 64(%rsp)
	movaps	%xmm1, 80(%rsp)
	movaps	%xmm2, 96(%rsp)
	movaps	%xmm3, 112(%rsp)
	movaps	%xmm4, 128(%rsp)
	movaps	%xmm5, 144(%rsp)
	movaps	%xmm6, 160(%rsp)
	movaps	%xmm7, 176(%rsp)
.endm
.macro RESTORE_ARGS
	movq	0(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdx
	movq	24(%rsp), %rcx
	movq	32(%rsp), %r8
	movq	40(%rsp), %r9
	movq	48(%rsp), %rax
	movq	56(%rsp), %r10
	movaps	64(%rsp), %xmm0
	movaps	80(%rsp), %xmm1
	movaps	96(%rsp), %xmm2
	movaps	112(%rsp), %xmm3
	movaps	128(%rsp), %xmm4
	movaps	144(%rsp), %xmm5
	movaps	160(%rsp), %xmm6
	movaps	176(%rsp), %xmm7
.endm
.macro SAVE_XMM_HIGH
	movaps	%xmm8, CTX_SIZE + 0(%rsp)
	movaps	%xmm9, CTX_SIZE + 16(%rsp)
	movaps	%xmm10, CTX_SIZE + 32(%rsp)
	movaps	%xmm11, CTX_SIZE + 48(%rsp)
	movaps	%xmm12, CTX_SIZE + 64(%rsp)
	movaps	%xmm13, CTX_SIZE + 80(%rsp)
	movaps	%xmm14, CTX_SIZE + 96(%rsp)
	movaps	%xmm15, CTX_SIZE + 112(%rsp)
.endm
.macro RESTORE_XMM_HIGH
	movaps	CTX_SIZE + 0(%rsp), %xmm8
	movaps	CTX_SIZE + 16(%rsp), %xmm9
	movaps	CTX_SIZE + 32(%rsp), %xmm10
	movaps	CTX_SIZE + 48(%rsp), %xmm11
	movaps	CTX_SIZE + 64(%rsp), %xmm12
	movaps	CTX_SIZE + 80(%rsp), %xmm13
	movaps	CTX_SIZE + 96(%rsp), %xmm14
	movaps	CTX_SIZE + 112(%rsp), %xmm15
.endm

.macro CFI_PUSH reg
	pushq	\reg
	.cfi_adjust_cfa_offset 8
.endm
.macro CFI_POP reg
	popq	\reg
	.cfi_adjust_cfa_offset -8
.endm

/* The full path of a hooked return, rsp the caller's stack pointer after
 * the return (less 8 for the return trampoline's slot): an rbp frame, a
 * ctx holding the return value (rax:rdx, xmm0:xmm1), and
 * needle_dispatch_exit's answer in rax; then the return value back and
 * the frame gone. */
.macro HOOKED_RETURN_FULL
	pushq	%rbp
	movq	%rsp, %rbp
	subq	$CTX_SIZE, %rsp
	andq	$-16, %rsp
	movl	$1, CTX_IS_EXIT(%rsp)
	movl	$0, CTX_EXIT_FLAGS(%rsp)
	movq	%rax, 48(%rsp)
	movq	%rdx, 16(%rsp)
	movaps	%xmm0, 64(%rsp)
	movaps	%xmm1, 80(%rsp)
	movq	%rsp, %rdi
	leaq	16(%rbp), %rsi
	movq	%rsi, CTX_SP(%rsp)
	call	needle_dispatch_exit
.endm
.macro HOOKED_RETURN_RESTORE
	movq	48(%rsp), %rax
	movq	16(%rsp), %rdx
	movaps	64(%rsp), %xmm0
	movaps	80(%rsp), %xmm1
	leave
.endm

/* The return of a relocated site's function, rsp at the slot its final
 * jump or ret goes through (the caller's stack pointer after the return,
 * less 8).  The caller may keep a value in any register (-fipa-ra), so
 * every one comes back: the direct exit with every general-purpose
 * register the C may change saved (it leaves the vector ones alone), its
 * answer in the slot (the real return address, or 0 for the full path);
 * the full exit with every register saved, its answer in the slot. */
.macro RELOCATED_RETURN_DIRECT
	pushq	%rax
	pushq	%rcx
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11                    /* 9 pushes + the slot: 16-byte aligned */
	leaq	80(%rsp), %rdi          /* the stack pointer after the return */
	call	needle_direct_dispatch_exit
	movq	%rax, 72(%rsp)          /* into the slot */
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	popq	%rax
.endm
.macro RELOCATED_RETURN_FULL
	pushq	%rbp
	movq	%rsp, %rbp
	subq	$CTX_SIZE + 144, %rsp
	andq	$-16, %rsp
	movl	$1, CTX_IS_EXIT(%rsp)
	movl	$0, CTX_EXIT_FLAGS(%rsp)
	movq	%r11, CTX_SIZE + 128(%rsp)
	SAVE_ARGS
	SAVE_XMM_HIGH
	movq	%rsp, %rdi
	leaq	16(%rbp), %rsi
	movq	%rsi, CTX_SP(%rsp)
	call	needle_dispatch_exit
	movq	%rax, 8(%rbp)           /* into the slot */
	RESTORE_ARGS
	RESTORE_XMM_HIGH
	movq	CTX_SIZE + 128(%rsp), %r11
	leave
.endm

/* The direct path's saves at rsp: struct needle_regs's integer part
 * (rdi, rsi, rdx, rcx, r8, r9, the program's rax from `rax`, r10), then
 * r11 (the site) at 64; and all of them back but rax. */
.macro DIRECT_SAVE rax
	movq	%rdi, 0(%rsp)
	movq	%rsi, 8(%rsp)
	movq	%rdx, 16(%rsp)
	movq	%rcx, 24(%rsp)
	movq	%r8, 32(%rsp)
	movq	%r9, 40(%rsp)
	movq	\rax, %rdi
	movq	%rdi, 48(%rsp)
	movq	%r10, 56(%rsp)
	movq	%r11, 64(%rsp)
.endm
.macro DIRECT_RESTORE
	movq	0(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdx
	movq	24(%rsp), %rcx
	movq	32(%rsp), %r8
	movq	40(%rsp), %r9
	movq	56(%rsp), %r10
	movq	64(%rsp), %r11
.endm

/* A calling trampoline's try of the direct path, r11 the site, the
 * return address at 88(%rsp) once `below` bytes are taken for the saves
 * (the integer part of struct needle_regs, then r11): a call it declines
 * goes to `full` with every register as it came; one it takes leaves
 * r11 = the function's code (the address at `code` in the site, plus
 * `past`), rax the program's, and the flags of eax's compare with 1:
 * equal, taken without its exit; above, taken to be called. */
.macro CALLING_DIRECT full, below, code, past, graph, probe, cpath
	/* A site handed to the recorder's path or to the probe path: its
	 * skip byte 0 and its direct_graph byte SITE_GRAPH_ASM or
	 * SITE_PROBE_ASM, read as one word (a hint: both paths test every
	 * condition, and decline to the C path below).  The probe path is
	 * jumped to: it goes on into the function itself, or back to
	 * `cpath`_tests, the direct path's own tests below (a site's probe
	 * stub leads there with none of these compares made). */
	cmpw	$SITE_GRAPH_ASM << 8, SITE_DIRECT_SKIP_OFFSET(%r11)
	je	6f
	cmpw	$SITE_PROBE_ASM << 8, SITE_DIRECT_SKIP_OFFSET(%r11)
	je	\probe
	.globl	\cpath\()_tests
	.hidden	\cpath\()_tests
\cpath\()_tests:
	cmpl	$0, consumer_direct_users(%rip)
	je	\full
	cmpb	$0, SITE_DIRECT_SKIP_OFFSET(%r11)
	jne	\full
	jmp	2f
	/* The recorder's own path (agent/graph_trampoline.S): every
	 * register as it came, the flags "above" when it took this call,
	 * "equal" when it declined. */
6:	call	\graph
	je	2f
	movq	\code(%r11), %r11
	leaq	\past(%r11), %r11
	jmp	3f
	.globl	\cpath
	.hidden	\cpath
\cpath:
2:	subq	$\below, %rsp
	.cfi_adjust_cfa_offset \below
	DIRECT_SAVE %rax
	movq	%r11, %rdi
	leaq	88(%rsp), %rsi          /* the return address's slot */
	movq	%rsp, %rdx
	call	needle_graph_calling_c  /* agent/graph_direct.c */
	DIRECT_RESTORE
	cmpl	$1, %eax                /* 0: declined, 1: taken, 2: taken, call */
	movq	48(%rsp), %rax          /* neither mov nor lea touches the flags */
	leaq	\below(%rsp), %rsp
	.cfi_adjust_cfa_offset -\below
	jb	\full
	movq	\code(%r11), %r11
	leaq	\past(%r11), %r11
3:
.endm

/* The direct path (dispatch_direct.c), tried first while some consumer
 * has direct handlers: only the general-purpose registers are saved (the
 * C it calls is built to leave the vector registers alone: that is what
 * lets a relocated site's full trampoline take it too), no ctx is built,
 * and a declined call goes on to the full path with every register as it
 * came.  r11 holds the site; `ret_at`: where the traced function's return
 * address is, above the trampoline's return address; `below`: the bytes
 * taken under rax's push, so that the saves (struct needle_regs, 16-byte
 * aligned) and the call are aligned: 72 from a site's CALL, 80 from a
 * detour's, whose push of r11 put the stack 8 bytes further.  Taken:
 * returns to the site (or detour).  Declined: falls through with rax
 * pushed, for the caller to pop. */
.macro DIRECT_ENTRY ret_at, below
	endbr64
	CFI_PUSH %rax
	movq	needle_direct_users_slot(%rip), %rax
	cmpl	$0, (%rax)
	je	1f
	cmpb	$0, SITE_DIRECT_SKIP_OFFSET(%r11)
	jne	1f
	/* The argument registers laid out as struct needle_regs's integer
	 * part (the handler reads -A values from it), then r11. */
	subq	$\below, %rsp
	.cfi_adjust_cfa_offset \below
	DIRECT_SAVE \below(%rsp)
	movq	%r11, %rdi
	leaq	\below + 8 + \ret_at(%rsp), %rsi
	movq	%rsp, %rdx
	xorl	%ecx, %ecx              /* the return is hijacked, not called */
	call	*needle_direct_entry_slot(%rip)
	DIRECT_RESTORE
	addq	$\below, %rsp
	.cfi_adjust_cfa_offset -\below
	testl	%eax, %eax
	jz	1f
	CFI_POP	%rax
	ret
	.cfi_adjust_cfa_offset 8
1:
.endm

/* A trampoline's frame: rbp-based (the unwinder follows it), the ctx
 * (and `extra` bytes above it) 16-byte aligned below, the site from r11
 * as ctx->func, is_exit as given.  `above`: bytes the caller's side put
 * on the stack before (the return address; and r11, for the exit
 * trampoline whose stub pushed it). */
.macro CTX_FRAME extra, is_exit, above=8
	endbr64
	pushq	%rbp
	.cfi_def_cfa_offset \above + 8
	.cfi_offset %rbp, -(\above + 8)
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$CTX_SIZE + \extra, %rsp
	andq	$-16, %rsp
	movq	%r11, CTX_FUNC(%rsp)
	movl	$\is_exit, CTX_IS_EXIT(%rsp)
.endm

	.text

	.globl	needle_entry_trampoline
	.hidden	needle_entry_trampoline
	.type	needle_entry_trampoline, @function
	.p2align 4
needle_entry_trampoline:
	/* [rsp] = site + 5, [rsp + 8] = the traced function's return address,
	 * r11 = struct site * (loaded by the site's stub). */
	.cfi_startproc
	DIRECT_ENTRY 8, 72
	CFI_POP	%rax
	CTX_FRAME 0, 0
	SAVE_ARGS
	movq	%rsp, %rdi
	leaq	16(%rbp), %rsi
	movq	%rsi, CTX_SP(%rsp)
	call	*needle_entry_dispatch_slot(%rip)
	RESTORE_ARGS
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc

	/* The same for a relocated site, whose function no compiler
	 * prepared: its callers may keep values in any register the function
	 * itself leaves alone (gcc's -fipa-ra), so every register but r11 is
	 * put back, xmm8-15 included.  r11 (the stub's) was pushed by the
	 * detour, which pops it after this returns:
	 *   [rsp] = detour + 7, [rsp + 8] = the program's r11,
	 *   [rsp + 16] = the traced function's return address. */
	.globl	needle_entry_trampoline_full
	.hidden	needle_entry_trampoline_full
	.type	needle_entry_trampoline_full, @function
	.p2align 4
needle_entry_trampoline_full:
	.cfi_startproc
	DIRECT_ENTRY 16, 80
	CFI_POP	%rax
	CTX_FRAME 128, 0
	SAVE_ARGS
	SAVE_XMM_HIGH
	movq	%rsp, %rdi
	leaq	24(%rbp), %rsi
	movq	%rsi, CTX_SP(%rsp)
	call	*needle_entry_dispatch_slot(%rip)
	RESTORE_ARGS
	RESTORE_XMM_HIGH
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	needle_entry_trampoline_full, .-needle_entry_trampoline_full

	/* An exit site's call before a sibling-call jmp (a compiler's NOP5,
	 * or an XRay tail-call sled) lands in its stub, which pushes r11 and
	 * loads the exit site into it:
	 *   [rsp] = the program's r11, [rsp + 8] = exit site + 5,
	 *   [rsp + 16] = the traced function's return address.
	 * The function's frame is gone; what is live is the sibling call's
	 * arguments (rax holding a variadic callee's vector count, r10 a
	 * static chain) and, since gcc emits the NOP as text after register
	 * allocation, whatever register the jmp goes through, r11 included.
	 * So every register comes back.  Both exit trampolines return with
	 * a ret that matches the site's call: the return stack buffer stays
	 * in step, which is the point of exit sites. */
	.globl	needle_exit_trampoline
	.hidden	needle_exit_trampoline
	.type	needle_exit_trampoline, @function
	.p2align 4
needle_exit_trampoline:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	.cfi_offset %r11, -16
	CTX_FRAME 128, 1, 16
	/* Before the sibling call: the return value is the callee's. */
	movl	$EXIT_NO_RETVAL, CTX_EXIT_FLAGS(%rsp)
	SAVE_ARGS
	SAVE_XMM_HIGH
	movq	%rsp, %rdi
	leaq	32(%rbp), %rsi          /* the stack pointer after the function's return */
	movq	%rsi, CTX_SP(%rsp)
	call	*needle_exit_dispatch_slot(%rip)
	RESTORE_ARGS
	RESTORE_XMM_HIGH
	leave
	.cfi_def_cfa %rsp, 16
	popq	%r11
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	needle_exit_trampoline, .-needle_exit_trampoline

	/* An exit site right before a ret: only the return value is live
	 * there (rax:rdx, xmm0:xmm1), as at a hijacked return, and r11 is
	 * free (gcc turns -fipa-ra off under -pg).  The stub only loads r11:
	 *   [rsp] = exit site + 5, [rsp + 8] = the function's return address. */
	.globl	needle_exit_trampoline_ret
	.hidden	needle_exit_trampoline_ret
	.type	needle_exit_trampoline_ret, @function
	.p2align 4
needle_exit_trampoline_ret:
	.cfi_startproc
	endbr64
	/* The direct path first, as at the entry: the return value's rax
	 * and rdx saved, and r11 (the exit site) for the full path. */
	CFI_PUSH %rax
	CFI_PUSH %rdx
	movq	needle_direct_users_slot(%rip), %rax
	cmpl	$0, (%rax)
	je	1f
	CFI_PUSH %r11
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	movq	%r11, %rdi
	leaq	48(%rsp), %rsi          /* the stack pointer after the function's return */
	call	*needle_direct_exit_site_slot(%rip)
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	CFI_POP	%r11
	testl	%eax, %eax
	jz	1f
	CFI_POP	%rdx
	CFI_POP	%rax
	ret
1:	CFI_POP	%rdx
	CFI_POP	%rax
	CTX_FRAME 0, 1
	movl	$0, CTX_EXIT_FLAGS(%rsp)
	movq	%rax, 48(%rsp)
	movq	%rdx, 16(%rsp)
	movaps	%xmm0, 64(%rsp)
	movaps	%xmm1, 80(%rsp)
	movq	%rsp, %rdi
	leaq	24(%rbp), %rsi          /* the stack pointer after the function's return */
	movq	%rsi, CTX_SP(%rsp)
	call	*needle_exit_dispatch_slot(%rip)
	movq	48(%rsp), %rax
	movq	16(%rsp), %rdx
	movaps	64(%rsp), %xmm0
	movaps	80(%rsp), %xmm1
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	needle_exit_trampoline_ret, .-needle_exit_trampoline_ret

	/* A calling site's stub jumps here (see needle_calling_trampoline):
	 * the trampoline lives in libneedle, where its unwind information
	 * is, and the slot below holds its address in each copy. */
	.globl	needle_calling_thunk
	.hidden	needle_calling_thunk
	.type	needle_calling_thunk, @function
	.p2align 4
needle_calling_thunk:
	.cfi_startproc
	jmp	*needle_calling_slot(%rip)
	.cfi_endproc
	.size	needle_calling_thunk, .-needle_calling_thunk

	/* The same for a relocated site, whose detour jumps to its stub. */
	.globl	needle_calling_thunk_relocated
	.hidden	needle_calling_thunk_relocated
	.type	needle_calling_thunk_relocated, @function
	.p2align 4
needle_calling_thunk_relocated:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	.cfi_offset %r11, -16
	jmp	*needle_calling_relocated_slot(%rip)
	.cfi_endproc
	.size	needle_calling_thunk_relocated, .-needle_calling_thunk_relocated

	/* A calling site whose only consumer is entry only may be switched
	 * to its second stub, which jumps here and on to the probe path
	 * itself (dispatch/probe_trampoline.S): no calling trampoline, none
	 * of its tests of the site's bytes.  The probe path declines back to
	 * the calling trampoline's C direct path, so a site left here after
	 * its consumers change is slower, never wrong. */
	.globl	needle_probe_thunk
	.hidden	needle_probe_thunk
	.type	needle_probe_thunk, @function
	.p2align 4
needle_probe_thunk:
	.cfi_startproc
	jmp	*needle_probe_slot(%rip)
	.cfi_endproc
	.size	needle_probe_thunk, .-needle_probe_thunk

	/* The blob from needle_entry_trampoline to needle_entry_trampoline_end
	 * is copied next to each object's stubs (a stub's jmp rel32 must
	 * reach it).  The slots travel with it and each copy's slots are
	 * filled with the C dispatchers' addresses; this original is never
	 * run. */
	.p2align 3
	.globl	needle_entry_dispatch_slot
	.hidden	needle_entry_dispatch_slot
needle_entry_dispatch_slot:
	.quad	0
	.globl	needle_exit_dispatch_slot
	.hidden	needle_exit_dispatch_slot
needle_exit_dispatch_slot:
	.quad	0
	/* needle_direct_dispatch_entry, the address of
	 * consumer_direct_users, needle_direct_dispatch_exit_site. */
	.globl	needle_direct_entry_slot
	.hidden	needle_direct_entry_slot
needle_direct_entry_slot:
	.quad	0
	.globl	needle_direct_users_slot
	.hidden	needle_direct_users_slot
needle_direct_users_slot:
	.quad	0
	.globl	needle_direct_exit_site_slot
	.hidden	needle_direct_exit_site_slot
needle_direct_exit_site_slot:
	.quad	0
	.globl	needle_calling_slot
	.hidden	needle_calling_slot
needle_calling_slot:
	.quad	0
	.globl	needle_calling_relocated_slot
	.hidden	needle_calling_relocated_slot
needle_calling_relocated_slot:
	.quad	0
	.globl	needle_probe_slot
	.hidden	needle_probe_slot
needle_probe_slot:
	.quad	0
	.globl	needle_entry_trampoline_end
	.hidden	needle_entry_trampoline_end
needle_entry_trampoline_end:
	.size	needle_entry_trampoline, .-needle_entry_trampoline

	.globl	needle_return_trampoline
	.hidden	needle_return_trampoline
	.type	needle_return_trampoline, @function
	.p2align 4
	/* An unwinder that meets a hijacked return (pthread_cancel's forced
	 * unwind, which needle cannot interpose) looks up the return address
	 * minus one: the nop below.  There the frame has a personality
	 * routine, needle_return_personality, which sends the unwind to
	 * needle_unwind_landing instead of following this frame's (unusable)
	 * return address rule.  Past the first instruction, the return address
	 * is undefined: an unwind from inside an exit handler stops here. */
	.cfi_startproc
	.cfi_personality 0x9b, needle_personality_ref
	nop
needle_return_trampoline:
	/* A hijacked return arrives here: rsp is the caller's stack pointer
	 * after the return, rax:rdx and xmm0:xmm1 hold the return value.  The
	 * real return address comes back from C.  The direct path first, as
	 * at the entry: rax and rdx saved, the vector registers left alone. */
	.cfi_undefined rip
	pushq	%rax
	pushq	%rdx
	cmpl	$0, consumer_direct_users(%rip)
	je	1f
	leaq	16(%rsp), %rdi
	call	needle_direct_dispatch_exit
	testq	%rax, %rax
	jz	1f
	movq	%rax, %r11
	popq	%rdx
	popq	%rax
	jmp	*%r11                   /* not a ret: see below */
1:	popq	%rdx
	popq	%rax
	subq	$8, %rsp
	HOOKED_RETURN_FULL
	movq	%rax, %r11
	HOOKED_RETURN_RESTORE
	addq	$8, %rsp
	/* An indirect jump, not push + ret: a ret here would pop a return
	 * stack buffer entry that belongs to an outer frame and mispredict
	 * every outer return too. */
	jmp	*%r11
	.cfi_endproc
	.size	needle_return_trampoline, .-needle_return_trampoline

	/* The return of a relocated site's function: every register its
	 * caller may still hold a value in (-fipa-ra, see above) comes back,
	 * not only the return value's. */
	.globl	needle_return_trampoline_full
	.hidden	needle_return_trampoline_full
	.type	needle_return_trampoline_full, @function
	.p2align 4
	.cfi_startproc
	.cfi_personality 0x9b, needle_personality_ref
	nop
needle_return_trampoline_full:
	subq	$8, %rsp                /* the slot the final jump goes through */
	.cfi_undefined rip
	/* The direct path first; the slot reads 0 (the full path) unless it
	 * answers. */
	movq	$0, (%rsp)
	cmpl	$0, consumer_direct_users(%rip)
	je	1f
	RELOCATED_RETURN_DIRECT
	cmpq	$0, (%rsp)
	je	1f
	leaq	8(%rsp), %rsp           /* as below: through the popped slot */
	jmp	*-8(%rsp)
1:
	RELOCATED_RETURN_FULL
	/* [rsp] = the real return address.  r11 must come back, so no jmp
	 * *%r11; and not a ret either: the traced function's ret already
	 * took this call's entry off the return stack buffer, so a second
	 * ret would take its caller's, and every return above would be
	 * mispredicted.  The slot is popped first, then jumped through: it
	 * lies in the red zone, which signal delivery never writes (and no
	 * code keeps data there across a call, whose return address it is). */
	leaq	8(%rsp), %rsp
	jmp	*-8(%rsp)
	.cfi_endproc
	.size	needle_return_trampoline_full, .-needle_return_trampoline_full

	/* The calling trampoline: the entry of a compiled site that is a JMP
	 * to its stub rather than a CALL (site_table.h, jmp_entry).  Where
	 * the direct path takes a call and wants its exit, this trampoline
	 * calls the function's code itself instead of hijacking its return:
	 * the function's ret then comes back here as the return stack buffer
	 * predicts (a hijacked return is mispredicted every time), and this
	 * trampoline's own ret goes to the real return address, which is
	 * what the buffer holds next, because the site's JMP pushed nothing.
	 *   [rsp] = the traced function's return address, r11 = struct site *.
	 * The return address is popped before the call, so the function
	 * finds its stack arguments where its caller put them; the real one
	 * is in the shadow frame, which is the hijacked return's frame in
	 * every respect: the slot at sp - 8 holds needle_calling_return
	 * instead of needle_return_trampoline (shadow_frame.h counts both as
	 * hooked), and everything that restores, re-hijacks or unwinds
	 * hijacked returns treats it the same.  A call the direct path does
	 * not take, or takes without an exit, goes to the function's code
	 * with a jmp, with the return hijacked by the full path as before. */
	.globl	needle_calling_trampoline
	.hidden	needle_calling_trampoline
	.type	needle_calling_trampoline, @function
	.p2align 4
needle_calling_trampoline:
	.cfi_startproc
	endbr64
	/* struct needle_regs's integer part, then r11; 88 bytes below the
	 * return address: 16-byte aligned for the call. */
	CALLING_DIRECT needle_calling_full, 88, SITE_ADDR_OFFSET, SITE_LEN, needle_graph_entry, needle_probe_calling, needle_calling_direct_c
	je	1f
	/* The return address lives on in the frame: its slot is where the
	 * call below puts needle_calling_return. */
	.cfi_remember_state
	leaq	8(%rsp), %rsp
	.cfi_adjust_cfa_offset -8
	jmp	needle_calling_call
	.cfi_restore_state
1:	jmp	*%r11
	.cfi_endproc
	.size	needle_calling_trampoline, .-needle_calling_trampoline

	/* The call itself, with the hijacked return's unwind information
	 * (see needle_return_trampoline): an unwinder meets the return
	 * address needle_calling_return, looks up the call before it, and a
	 * forced unwind is sent to needle_unwind_landing with rsp the stack
	 * pointer after the function's return, as from a hijacked return. */
	.p2align 4
	.cfi_startproc
	.cfi_personality 0x9b, needle_personality_ref
needle_calling_call:
	.cfi_undefined rip
	call	*%r11
	.globl	needle_calling_return
	.hidden	needle_calling_return
needle_calling_return:
	/* rsp: the caller's stack pointer after the return; rax:rdx and
	 * xmm0:xmm1 the return value.  The slot below gets the real return
	 * address and the final ret goes through it. */
	subq	$8, %rsp
	cmpb	$0, needle_graph_live(%rip)
	je	2f
	call	needle_graph_return     /* the recorder's own path (graph_trampoline.S) */
	jbe	2f
	ret
2:	pushq	%rax
	pushq	%rdx
	cmpl	$0, consumer_direct_users(%rip)
	je	1f
	subq	$8, %rsp
	leaq	32(%rsp), %rdi
	call	needle_direct_dispatch_exit
	addq	$8, %rsp
	testq	%rax, %rax
	jz	1f
	movq	%rax, 16(%rsp)
	popq	%rdx
	popq	%rax
	ret
1:	popq	%rdx
	popq	%rax
	HOOKED_RETURN_FULL
	movq	%rax, 8(%rbp)           /* into the slot */
	HOOKED_RETURN_RESTORE
	ret
	.cfi_endproc
	.type	needle_calling_return, @function
	.size	needle_calling_return, .-needle_calling_return

	/* The full path of a calling site: needle_entry_trampoline's, with
	 * the return address on top instead of the site's, then a jmp to
	 * the function's code (the return is hijacked, or not, by C). */
	.globl	needle_calling_full
	.hidden	needle_calling_full
	.type	needle_calling_full, @function
	.p2align 4
needle_calling_full:
	.cfi_startproc
	CTX_FRAME 0, 0
	SAVE_ARGS
	movq	%rsp, %rdi
	leaq	8(%rbp), %rsi           /* the return address's slot */
	movq	%rsi, CTX_SP(%rsp)
	call	needle_dispatch_entry
	RESTORE_ARGS
	movq	CTX_FUNC(%rsp), %r11
	leave
	.cfi_def_cfa %rsp, 8
	movq	SITE_ADDR_OFFSET(%r11), %r11
	leaq	SITE_LEN(%r11), %r11
	jmp	*%r11
	.cfi_endproc
	.size	needle_calling_full, .-needle_calling_full

	/* The calling trampoline of a relocated site (site_table.h's
	 * jmp_entry): its detour pushed the program's r11 and jumped to the
	 * stub, which loaded the site:
	 *   [rsp] = the program's r11, [rsp + 8] = the traced function's
	 *   return address, r11 = struct site *.
	 * As needle_calling_trampoline, with two differences.  The function's
	 * code is its detour's body (the instructions moved there, then a jmp
	 * back), entered with the program's r11, so no register is free for
	 * the target: it is stored below the stack, in the red zone a signal
	 * frame never writes (24 bytes under the caller's stack pointer, below
	 * the slot the call writes), and the call or jmp goes through it.  And
	 * the function's callers may keep a value in any register the function
	 * leaves alone (gcc's -fipa-ra), so its return lands in
	 * needle_calling_return_relocated, which puts every one back. */
	.globl	needle_calling_trampoline_relocated
	.hidden	needle_calling_trampoline_relocated
	.type	needle_calling_trampoline_relocated, @function
	.p2align 4
needle_calling_trampoline_relocated:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	.cfi_offset %r11, -16
	endbr64
	/* 80 bytes below the program's r11: 16-byte aligned for the call. */
	CALLING_DIRECT needle_calling_full_relocated, 80, SITE_DETOUR_OFFSET, DETOUR_BODY_OFFSET, needle_graph_entry_relocated, needle_probe_calling_relocated, needle_calling_direct_c_relocated
	movq	%r11, -8(%rsp)          /* 24 bytes below the caller's stack pointer */
	movq	(%rsp), %r11            /* the program's */
	je	1f
	.cfi_remember_state
	leaq	16(%rsp), %rsp          /* the return address lives on in the frame */
	.cfi_adjust_cfa_offset -16
	jmp	needle_calling_call_relocated
	.cfi_restore_state
1:	leaq	8(%rsp), %rsp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r11
	jmp	*-16(%rsp)
	.cfi_endproc
	.size	needle_calling_trampoline_relocated, .-needle_calling_trampoline_relocated

	/* As needle_calling_call, for a relocated function: the return comes
	 * back to needle_calling_return_relocated. */
	.p2align 4
	.cfi_startproc
	.cfi_personality 0x9b, needle_personality_ref
needle_calling_call_relocated:
	.cfi_undefined rip
	call	*-24(%rsp)
	.globl	needle_calling_return_relocated
	.hidden	needle_calling_return_relocated
needle_calling_return_relocated:
	/* rsp: the caller's stack pointer after the return; rax:rdx and
	 * xmm0:xmm1 the return value, every other register the caller's.
	 * The slot below gets the real return address and the final ret goes
	 * through it (the return stack buffer holds that address next, as
	 * at needle_calling_return).  The direct path first, as in
	 * needle_return_trampoline_full. */
	subq	$8, %rsp
	cmpl	$0, consumer_direct_users(%rip)
	je	1f
	cmpb	$0, needle_graph_live(%rip)
	je	2f
	call	needle_graph_return_relocated /* the recorder's own path (graph_trampoline.S) */
	jbe	2f
	ret
2:	RELOCATED_RETURN_DIRECT
	cmpq	$0, (%rsp)
	je	1f
	ret
1:	RELOCATED_RETURN_FULL
	ret
	.cfi_endproc
	.type	needle_calling_return_relocated, @function
	.size	needle_calling_return_relocated, .-needle_calling_return_relocated

	/* The full path of a relocated calling site: needle_entry_trampoline_full's,
	 * with the program's r11 and the return address on top, then a jmp to
	 * the detour's body as above (the return is hijacked, or not, by C). */
	.globl	needle_calling_full_relocated
	.hidden	needle_calling_full_relocated
	.type	needle_calling_full_relocated, @function
	.p2align 4
needle_calling_full_relocated:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	.cfi_offset %r11, -16
	CTX_FRAME 128, 0, 16
	SAVE_ARGS
	SAVE_XMM_HIGH
	movq	%rsp, %rdi
	leaq	16(%rbp), %rsi          /* the return address's slot */
	movq	%rsi, CTX_SP(%rsp)
	call	needle_dispatch_entry
	RESTORE_ARGS
	RESTORE_XMM_HIGH
	movq	CTX_FUNC(%rsp), %r11
	leave
	.cfi_def_cfa %rsp, 16
	.cfi_restore %rbp               /* its slot is about to hold the body's address */
	movq	SITE_DETOUR_OFFSET(%r11), %r11
	leaq	DETOUR_BODY_OFFSET(%r11), %r11
	movq	%r11, -8(%rsp)          /* 24 bytes below the caller's stack pointer */
	popq	%r11                    /* the program's */
	.cfi_def_cfa_offset 8
	.cfi_restore %r11
	jmp	*-16(%rsp)
	.cfi_endproc
	.size	needle_calling_full_relocated, .-needle_calling_full_relocated

	.globl	needle_unwind_landing
	.hidden	needle_unwind_landing
	.type	needle_unwind_landing, @function
	.p2align 4
needle_unwind_landing:
	/* A forced unwind lands here instead of at the hijacked return: rsp
	 * is the stack pointer after the traced call's return, rax the
	 * unwind's exception object.  Build an ordinary frame whose return
	 * address is the real one (from the shadow stack), and resume the
	 * unwind from it: the frames above get their cleanups run as if the
	 * return had never been hijacked. */
	.cfi_startproc
	.cfi_def_cfa %rsp, 0
	subq	$8, %rsp                /* the return address slot */
	.cfi_def_cfa_offset 8
	pushq	%rbx                    /* rsp is 16-byte aligned again */
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -24
	movq	%rax, %rbx
	leaq	16(%rsp), %rdi
	call	needle_unwind_pop
	movq	%rax, 8(%rsp)
	movq	%rbx, %rdi
	call	_Unwind_Resume@PLT
	ud2
	.cfi_endproc
	.size	needle_unwind_landing, .-needle_unwind_landing

	.section .data.rel.ro.local, "aw"
	.p2align 3
	.hidden	needle_personality_ref
needle_personality_ref:
	.quad	needle_return_personality

	.section .note.GNU-stack, "", @progbits
