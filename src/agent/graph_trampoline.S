/* graph_trampoline.S - the recorder's own path in assembly: a call of a
 * function whose only consumer is needle record's function_graph tracer,
 * from the calling trampoline (arch/x86_64/trampoline.S) to its event,
 * and back from its return, with no C, no needle_ctx, no indirect call:
 * the kernel gives an ftrace_ops alone on a function a trampoline of its
 * own; this is needle's.
 *
 * Four subroutines, called by the calling trampolines:
 *   needle_graph_entry              from needle_calling_trampoline
 *   needle_graph_entry_relocated    from needle_calling_trampoline_relocated
 *   needle_graph_return             from needle_calling_return
 *   needle_graph_return_relocated   from needle_calling_return_relocated
 * Their contract with the trampolines:
 *   - Registers: the entries put back every general-purpose register
 *     (all argument registers are live), and so does the relocated return
 *     (a relocated function's callers may keep a value in any register,
 *     -fipa-ra); the compiled return keeps rax and rdx, the return value,
 *     as needle_calling_return's call into C always did.  Only the flags
 *     change otherwise, and no vector register is touched.
 *   - They return the flags of an unsigned compare: "above" when the call
 *     was taken (the entry's event written and its frame pushed, for the
 *     trampoline to call the function; the exit's event written, its
 *     frame popped and the real return address in the slot), "equal"
 *     when it was declined with nothing done (the trampoline goes on to
 *     the C direct path, then the full path, which decide it whole).
 *
 * Invariants:
 *   - The same call, the same bytes: each test, store and barrier is one
 *     that the C direct path (dispatch/direct_path.h and
 *     record/recorder_direct.h, rec_graph_plain_entry and
 *     rec_graph_direct_exit) makes for the same call, in the same order
 *     where order matters: the frame is written before shadow_top moves;
 *     the real return address is read before the frame is popped; the
 *     read section's word is stored before the consumer list is loaded
 *     and cleared after the last load of consumer data.  A frame pushed
 *     here is closed by any exit path, and one pushed in C is closed
 *     here, as graph_entry's and graph_exit's calls are by each other.
 *   - Taken only when everything holds: the thread has a state it owns,
 *     is inside no handler, no read section and no fork's stale copy; the
 *     site's list is the recorder's consumer alone, live (odd
 *     generation), with its direct handlers; the recording is on and not
 *     paused; the site has no flag but a duration trigger's, and -A
 *     values only in integer registers; the thread has a
 *     chunk with room, is in no -F or -N call and under the depth limit;
 *     the return goes back into the function's own object (entries); the
 *     frame is the calling trampoline's one-entry frame at this stack
 *     pointer, of a site no C entry declined for good (exits).  Anything
 *     else declines.
 *   - The site's direct_graph byte is only a hint (set by graph_direct.c
 *     when its C path took a call of the site, cleared with direct_skip
 *     whenever the site's list or handlers change): every condition
 *     above is tested on every call, so a stale byte costs a decline,
 *     never a wrong event.
 *   - The read section (rcu.h): a detach swaps the site's list, retires
 *     the consumer (its generation), then waits for a grace period.  A
 *     thread that stored its read-section word before that grace period
 *     began is waited for; one that stores it later loads the new list
 *     (membarrier, rcu.h) and declines.  So when the grace period ends no
 *     thread is between here and its last use of the consumer or its
 *     thread data, and a frame pushed before carries the old generation,
 *     whose exit declines to the full path, which skips it. */
#include "agent/dispatch/direct_asm.h"
#include "agent/graph_layout.h"

	.text

/* Save and restore registers: GRAPH_RESTORE_RET takes them in the
 * reverse order, then returns. */
.macro GRAPH_SAVE regs:vararg
	.irp r, \regs
	pushq	%\r
	.cfi_adjust_cfa_offset 8
	.endr
.endm
.macro GRAPH_RESTORE_RET regs:vararg
	.irp r, \regs
	popq	%\r
	.cfi_adjust_cfa_offset -8
	.endr
	ret
.endm
/* What the entry uses: every argument register (rax: the count of vector
 * arguments; r10: the static chain), pushed so that they lie as struct
 * needle_regs's integer part (rdi lowest), where -A values are read
 * from.  r11, the site, is left alone. */
#define ENTRY_SAVE r10, rax, r9, r8, rcx, rdx, rsi, rdi
#define ENTRY_RESTORE rdi, rsi, rdx, rcx, r8, r9, rax, r10
#define ENTRY_SAVED 64
/* What the return uses, for a relocated function, whose callers may keep
 * a value in any register it leaves alone (-fipa-ra)... */
#define RETURN_SAVE_ALL rax, rcx, rsi, rdx, rdi, r8, r9, r10, r11
#define RETURN_RESTORE_ALL r11, r10, r9, r8, rdi, rdx, rsi, rcx, rax
#define RETURN_SAVED_ALL 72
/* The first tests (a return of a site not handed to this path declines
 * soonest) use rax, rcx and rsi only: saved first, and alone on that
 * decline. */
#define RETURN_SAVE_ALL_EARLY rax, rcx, rsi
#define RETURN_SAVE_ALL_LATE rdx, rdi, r8, r9, r10, r11
#define RETURN_RESTORE_ALL_EARLY rsi, rcx, rax
#define RETURN_SAVED_ALL_EARLY 24
/* ... and for a compiled one, whose callers keep nothing in the
 * caller-saved registers but the return value (needle_calling_return
 * calls C with no more saved). */
#define RETURN_SAVE_VALUE rax, rdx
#define RETURN_RESTORE_VALUE rdx, rax
#define RETURN_SAVED_VALUE 16
#define RETURN_SAVE_VALUE_EARLY rax
#define RETURN_SAVE_VALUE_LATE rdx
#define RETURN_RESTORE_VALUE_EARLY rax
#define RETURN_SAVED_VALUE_EARLY 8

/* rsi = the thread's rec_thread: r8 the consumer, whose storage the
 * thread has claimed (consumer.h's consumer_thread_data_if_used); else to
 * \decline.  rax is clobbered. */
.macro GRAPH_THREAD_DATA decline
	cmpb	$0, G_TS_DATA_USED(%rcx)
	je	\decline
	movq	G_TS_DATA(%rcx), %rax
	movl	G_C_TDATA_IDX(%r8), %esi
	movl	(%rax,%rsi,4), %esi
	cmpl	G_C_TDATA_TAG(%r8), %esi
	jne	\decline
	movzwl	G_C_TDATA_OFF(%r8), %esi
	addq	%rax, %rsi
.endm

/* The recording's switches: on, timed by the TSC, not paused (a
 * trace_off, a finish); else to \decline. */
.macro GRAPH_RECORDING decline
	cmpl	$0, rec_active(%rip)
	je	\decline
	cmpl	$0, use_tsc(%rip)
	je	\decline
	cmpl	$0, rec_paused(%rip)
	jne	\decline
.endm

/* r8 = the site's -A/-R spec or 0, r10d = the site's id (r11 the site)
 * (args.h's args_for).  rax is clobbered. */
.macro GRAPH_SPEC
	movl	G_SITE_ID(%r11), %r10d
	xorl	%r8d, %r8d
	movq	args_table(%rip), %rax
	testq	%rax, %rax
	jz	2f
	cmpl	args_table+8(%rip), %r10d
	jae	2f
	movq	(%rax,%r10,8), %r8
2:
.endm
/* The exit's test: no -R values wanted (rec_graph_direct_exit's); else to
 * \decline.  r8, r10 and rax as GRAPH_SPEC leaves them. */
.macro GRAPH_NO_EXIT_VALUES decline
	GRAPH_SPEC
	testq	%r8, %r8
	jz	3f
	cmpb	$0, G_AS_EXIT_CNT(%r8)
	jne	\decline
3:
.endm
/* The entry's: no site flag (recorder_direct.h's rec_site_flag) but a
 * --trigger's (SF_TRIGGER: to \trigger, with no spec), and -A values, if
 * any, from integer registers with no filter (the spec's entry_direct:
 * rec_graph_direct_entry's test); else to \decline. */
.macro GRAPH_PLAIN_SITE decline, trigger
	GRAPH_SPEC
	testq	%r8, %r8
	jz	3f
	cmpb	$0, G_AS_ENTRY_DIRECT(%r8)
	je	\decline
3:	cmpl	$0, rec_have_flags(%rip)
	je	1f
	cmpl	$G_SITE_FLAG_IDS, %r10d
	jae	1f
	leaq	rec_site_flags(%rip), %rax
	movzwl	(%rax,%r10,2), %eax
	testl	%eax, %eax
	jz	1f
	cmpl	$G_SF_TRIGGER, %eax
	jne	\decline
	testq	%r8, %r8
	jz	\trigger
	jmp	\decline
1:
.endm

/* r8 = the --trigger table's entry for site r10d (trigger.h's
 * trigger_folded_site: a binary search of the table trigger_fold
 * published, which a grace period keeps while the read section is
 * held), or 0.  rax and r9 are clobbered. */
.macro GRAPH_TRIGGER_SITE
	xorl	%r8d, %r8d
	movq	trigger_folded(%rip), %rax
	testq	%rax, %rax
	jz	27f
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	xorl	%edx, %edx              /* lo */
	movq	G_TT_CNT(%rax), %r9     /* hi */
21:	cmpq	%r9, %rdx
	jae	23f
	leaq	(%rdx,%r9), %rcx
	shrq	$1, %rcx                /* mid */
	movq	%rcx, %r8
	shlq	$G_TS_SHIFT, %r8
	cmpl	%r10d, G_TT_SITE + G_TS_ID(%rax,%r8)
	jae	22f
	leaq	1(%rcx), %rdx
	jmp	21b
22:	movq	%rcx, %r9
	jmp	21b
23:	xorl	%r8d, %r8d
	cmpq	G_TT_CNT(%rax), %rdx
	jae	26f
	shlq	$G_TS_SHIFT, %rdx
	leaq	G_TT_SITE(%rax,%rdx), %r9
	cmpl	%r10d, G_TS_ID(%r9)
	jne	26f
	movq	%r9, %r8
26:	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rcx
	.cfi_adjust_cfa_offset -8
27:
.endm

/* rax = the TSC's delta from the chunk's base (rsi the rec_thread), rdx
 * = where the event goes, with room for one word and a delta that fits;
 * else to \decline.  event_writer.h's event_room, for the common case. */
.macro GRAPH_CLOCK decline
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	subq	G_RT_BASE(%rsi), %rax
	movq	%rax, %rdx
	shrq	$G_EV_DELTA_BITS, %rdx
	jnz	\decline
	movq	G_RT_POS(%rsi), %rdx
	cmpq	G_RT_END(%rsi), %rdx
	jae	\decline
.endm

/* Publish the events up to rdx, the thread's new position (event_writer.h's
 * events_publish: the chunk's used bytes, a plain store, which x86-TSO
 * orders after the events').  rdx and r9 are clobbered. */
.macro GRAPH_PUBLISH
	movq	%rdx, G_RT_POS(%rsi)
	movq	G_RT_CHUNK(%rsi), %r9
	subq	%r9, %rdx
	subq	$G_CHUNK_EVENTS, %rdx
	movl	%edx, G_CHUNK_USED(%r9)
.endm
/* Store the event in r9 at rdx and publish it.  rdx and r9 are clobbered. */
.macro GRAPH_STORE
	movq	%r9, (%rdx)
	addq	$8, %rdx
	GRAPH_PUBLISH
.endm

/* The entry, [rsp + ra] holding the traced function's return address
 * once the registers are saved. */
.macro GRAPH_ENTRY ra
	GRAPH_SAVE ENTRY_SAVE
	leaq	\ra + 8(%rsp), %rdi     /* the stack pointer after the return */
	DIRECT_THREAD 9f
	/* dispatch/direct_path.h's entry (direct_call_order): no frame at
	 * or below sp (a longjmp skipped it) but a tail call's caller, no
	 * coroutine switch to sort out, room for a frame, no exit sites, a
	 * return into the function's own object or, for a tail call, into
	 * its caller's hooked return. */
	movq	\ra(%rsp), %rdx
	movq	G_TS_SHADOW_TOP(%rcx), %rsi
	movq	G_TS_SHADOW_CAP(%rcx), %rax
	subq	%rsi, %rax
	cmpq	$G_FRAME_BYTES, %rax
	jb	9f
	cmpb	$0, G_SITE_EXITS_LIVE(%r11)
	jne	9f
	movq	G_SITE_MODULE(%r11), %r8
	testq	%r8, %r8
	jz	9f
	testq	%rsi, %rsi
	jz	1f
	movq	G_TS_SHADOW(%rcx), %rax
	cmpq	%rdi, G_FH_SP - G_FH_HEADER(%rax,%rsi)
	ja	2f
	jb	9f
	/* At the top frame's sp: a tail call if the return address is a
	 * hooked return (shadow_frame.h's is_return_trampoline), which
	 * needs no range test. */
	.irp	hook, needle_calling_return, needle_calling_return_relocated, needle_return_trampoline, needle_return_trampoline_full
	leaq	\hook(%rip), %rax
	cmpq	%rax, %rdx
	je	3f
	.endr
	jmp	9f
1:	cmpq	$0, G_TS_CONTEXT(%rcx)
	jne	9f
2:	cmpq	G_MOD_EXEC_LO(%r8), %rdx
	jb	9f
	cmpq	G_MOD_EXEC_HI(%r8), %rdx
	jae	9f
	cmpq	G_MOD_FOREIGN_LO(%r8), %rdx
	jb	3f
	cmpq	G_MOD_FOREIGN_HI(%r8), %rdx
	jb	9f
3:	DIRECT_READ_LOCK
	/* The recorder's consumer alone on the site, live. */
	DIRECT_SOLE_CONSUMER r8, r9, 8f
	leaq	rec_graph_direct_entry(%rip), %rax
	cmpq	%rax, G_OPS_DIRECT_ENTRY(%r9)
	jne	8f
	/* The frame's first word, {slot, ops, generation}, with the
	 * generation read once: the one tested is the one the exit compares. */
	movl	G_C_GENERATION(%r8), %edx
	testl	$1, %edx
	jz	8f
	shlq	$32, %rdx
	movzwl	G_OPS_INDEX(%r9), %eax
	shll	$16, %eax
	orq	%rax, %rdx
	movzwl	G_C_SLOT(%r8), %eax
	orq	%rax, %rdx
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	/* The cookie's word: nonzero once a --trigger's threshold wants the
	 * call timed. */
	pushq	$0
	.cfi_adjust_cfa_offset 8
	GRAPH_THREAD_DATA 7f
	GRAPH_RECORDING 7f
	GRAPH_PLAIN_SITE 7f, 30f
	jmp	31f
30:	/* A --trigger's function (trigger_fold): an entry trigger is the C
	 * path's to fire; a duration trigger's call is timed, its entry
	 * clock in the cookie (rec_graph_direct_entry). */
	GRAPH_TRIGGER_SITE
	testq	%r8, %r8
	jz	31f
	cmpl	$0, G_TS_ON_ENTRY(%r8)
	jne	7f
	cmpq	$0, G_TS_THRESHOLD(%r8)
	je	32f
	movq	$1, (%rsp)
32:	xorl	%r8d, %r8d              /* no spec */
31:
	/* recorder_direct.h's rec_graph_plain_entry. */
	cmpl	$0, rec_have_subtree(%rip)
	jne	7f
	cmpq	$0, G_RT_CHUNK(%rsi)
	je	7f
	cmpl	$0, G_RT_OUT_COUNT(%rsi)
	jne	7f
	movl	G_RT_LIMIT(%rsi), %eax
	testl	%eax, %eax
	jnz	4f
	movl	rec_max_depth(%rip), %eax
4:	cmpl	%eax, G_RT_DEPTH(%rsi)
	jae	7f
	GRAPH_CLOCK 7f
	cmpq	$0, (%rsp)
	je	15f
	/* COOKIE_TIMED | (the clock & COOKIE_TIME_MASK). */
	movq	%rax, %r9
	addq	G_RT_BASE(%rsi), %r9
	shlq	$64 - G_COOKIE_TIME_BITS, %r9
	shrq	$64 - G_COOKIE_TIME_BITS, %r9
	btsq	$G_COOKIE_TIMED_BIT, %r9
	movq	%r9, (%rsp)
15:	movl	%r10d, %r9d
	andl	$G_EV_SITE_MASK, %r9d
	shlq	$G_EV_SITE_SHIFT, %r9
	orq	%rax, %r9               /* EV_ENTRY is 0 */
	testq	%r8, %r8
	jz	11f
	movzbl	G_AS_ENTRY_CNT(%r8), %eax
	testl	%eax, %eax
	jnz	12f
11:	GRAPH_STORE
	jmp	13f
12:	/* -A values: event_write_fixed's block after the event, its
	 * EV_DATA_SITE word then each item's word and value, read from
	 * the saved registers (the recorder's args_value_in). */
	shll	$4, %eax
	leaq	16(%rdx,%rax), %rax     /* past the block */
	cmpq	G_RT_END(%rsi), %rax
	ja	7f
	movq	%r9, (%rdx)
	movzbl	G_AS_ENTRY_CNT(%r8), %r9d
	leal	(%r9,%r9), %eax         /* the block's words */
	movabsq	$G_EV_DATA_SITE_SWITCH, %r9
	orq	%rax, %r9
	movq	%r9, 8(%rdx)
	addq	$16, %rdx
	movzbl	G_AS_ENTRY_CNT(%r8), %r9d
	addq	$G_AS_ENTRY, %r8
	pushq	%rcx                    /* the thread: cl takes the shift */
	.cfi_adjust_cfa_offset 8
14:	movq	G_AI_WORD(%r8), %rax
	movq	%rax, (%rdx)
	movzwl	G_AI_REG(%r8), %eax
	movq	24(%rsp,%rax), %rax     /* past rcx, the cookie's and the frame's words */
	movzbl	G_AI_SHIFT(%r8), %ecx
	shll	$3, %ecx
	shrq	%cl, %rax
	andq	G_AI_MASK(%r8), %rax
	movq	%rax, 8(%rdx)
	addq	$16, %rdx
	addq	$G_AI_SIZE, %r8
	decl	%r9d
	jnz	14b
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	GRAPH_PUBLISH
13:	movl	G_RT_DEPTH(%rsi), %eax
	cmpl	$G_REC_OPEN_SITES, %eax
	jae	5f
	movl	%r10d, G_RT_OPEN_SITE(%rsi,%rax,4)
5:	incl	%eax
	movl	%eax, G_RT_DEPTH(%rsi)
	/* The cookie: the trigger's clock, and the thread's lib_top before
	 * this call, which is none. */
	popq	%r9
	.cfi_adjust_cfa_offset -8
	cmpb	$0, G_RT_LIB_TOP(%rsi)
	je	6f
	btsq	$G_COOKIE_LIB_TOP_BIT, %r9
	movb	$0, G_RT_LIB_TOP(%rsi)
6:	/* The frame (direct_path.h's direct_frame_push), then shadow_top. */
	popq	%r8                     /* {slot, ops, generation} */
	.cfi_adjust_cfa_offset -8
	movq	G_TS_SHADOW_TOP(%rcx), %rdx
	movq	G_TS_SHADOW(%rcx), %rsi
	addq	%rdx, %rsi
	movq	%r8, (%rsi)
	movq	%r9, 8(%rsi)
	movq	\ra(%rsp), %rax
	movq	%rax, 16 + G_FH_RETURN_ADDR(%rsi)
	movq	%r11, 16 + G_FH_SITE(%rsi)
	movq	%rdi, 16 + G_FH_SP(%rsi)
	movabsq	$G_FRAME_CALLED_ONE, %rax
	movq	%rax, 16 + G_FH_COUNTS(%rsi)
	addq	$G_FRAME_BYTES, %rdx
	movq	%rdx, G_TS_SHADOW_TOP(%rcx)
	cmpq	G_TS_SHADOW_HIGH(%rcx), %rdx
	jbe	10f
	movq	%rdx, G_TS_SHADOW_HIGH(%rcx)
10:	DIRECT_READ_UNLOCK
	movl	$1, %eax
	cmpl	$0, %eax                /* above: taken, to be called */
	GRAPH_RESTORE_RET ENTRY_RESTORE
	.cfi_adjust_cfa_offset ENTRY_SAVED + 16
7:	addq	$16, %rsp               /* the frame's and the cookie's words */
	.cfi_adjust_cfa_offset -16
8:	DIRECT_READ_UNLOCK
9:	xorl	%eax, %eax
	cmpl	$0, %eax                /* equal: declined */
	GRAPH_RESTORE_RET ENTRY_RESTORE
.endm

	/* From needle_calling_trampoline: [rsp + 8] = the traced function's
	 * return address, r11 = struct site *. */
	.globl	needle_graph_entry
	.hidden	needle_graph_entry
	.type	needle_graph_entry, @function
	.p2align 4
needle_graph_entry:
	.cfi_startproc
	GRAPH_ENTRY ENTRY_SAVED + 8
	.cfi_endproc
	.size	needle_graph_entry, .-needle_graph_entry

	/* From needle_calling_trampoline_relocated: [rsp + 8] = the
	 * program's r11, [rsp + 16] = the return address. */
	.globl	needle_graph_entry_relocated
	.hidden	needle_graph_entry_relocated
	.type	needle_graph_entry_relocated, @function
	.p2align 4
needle_graph_entry_relocated:
	.cfi_startproc
	GRAPH_ENTRY ENTRY_SAVED + 16
	.cfi_endproc
	.size	needle_graph_entry_relocated, .-needle_graph_entry_relocated

/* The return, saving the return value only, or every register (`all`):
 * [rsp + saved + 8] the slot once saved. */
.macro GRAPH_RETURN_RESTORE all
	.if \all
	GRAPH_RESTORE_RET RETURN_RESTORE_ALL
	.else
	GRAPH_RESTORE_RET RETURN_RESTORE_VALUE
	.endif
.endm
.macro GRAPH_RETURN all
	.if \all
	GRAPH_SAVE RETURN_SAVE_ALL_EARLY
	early = RETURN_SAVED_ALL_EARLY
	saved = RETURN_SAVED_ALL
	.else
	GRAPH_SAVE RETURN_SAVE_VALUE_EARLY
	early = RETURN_SAVED_VALUE_EARLY
	saved = RETURN_SAVED_VALUE
	.endif
	/* The thread's state (not a sentinel) and its top frame first: a
	 * return of a site not handed to this path declines soonest. */
	movq	needle_thread@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rcx
	cmpq	$G_THREAD_STATE_SENTINEL_MAX, %rcx
	jbe	19f
	/* The top frame: the calling trampoline's, of one entry, at sp. */
	movq	G_TS_SHADOW_TOP(%rcx), %rsi
	testq	%rsi, %rsi
	jz	19f
	addq	G_TS_SHADOW(%rcx), %rsi
	subq	$G_FH_HEADER, %rsi      /* the header */
	leaq	early + 16(%rsp), %rax  /* the stack pointer after the return */
	cmpq	%rax, G_FH_SP(%rsi)
	jne	19f
	movabsq	$G_FRAME_CALLED_ONE, %rax
	cmpq	%rax, G_FH_COUNTS(%rsi)
	jne	19f
	/* A site handed to this path (direct_graph) that the C entry has not
	 * declined for good since (direct_skip, whose exits the C path
	 * leaves to graph_exit too): both bytes in one compare. */
	movq	G_FH_SITE(%rsi), %rax
	cmpw	$0x0100, G_SITE_DIRECT_SKIP(%rax)
	jne	19f
	.if \all
	GRAPH_SAVE RETURN_SAVE_ALL_LATE
	.else
	GRAPH_SAVE RETURN_SAVE_VALUE_LATE
	.endif
	leaq	saved + 16(%rsp), %rdi    /* the stack pointer after the return */
	movq	G_FH_SITE(%rsi), %r11
	/* The rest of direct_thread's tests but the two an exit skips (a
	 * hooked return runs its exit even inside the agent, on any stack,
	 * as the C path's needle_direct_dispatch_exit does). */
	DIRECT_THREAD 9f, 0
	/* Its consumer: the slot's, if the generation is still the one the
	 * entry saw (a retired consumer's exit is the full path's, which
	 * skips it), with the recorder's direct exit in the frame's ops. */
	movzwl	-16(%rsi), %r8d
	imulq	$G_C_SIZE, %r8, %r8
	leaq	consumer_table(%rip), %rax
	addq	%rax, %r8
	DIRECT_READ_LOCK
	movl	-12(%rsi), %eax
	cmpl	G_C_GENERATION(%r8), %eax
	jne	8f
	movzwl	-14(%rsi), %eax
	imulq	$G_OPS_SIZE, %rax, %rax
	leaq	consumer_ops_table(%rip), %r9
	leaq	rec_graph_direct_exit(%rip), %r10
	cmpq	%r10, G_OPS_DIRECT_EXIT(%r9,%rax)
	jne	8f
	/* recorder_direct.c's rec_graph_direct_exit, for a plain call (and no
	 * -R values: the site's spec has no exit items). */
	movq	-8(%rsi), %r10          /* the cookie */
	movabsq	$G_COOKIE_NOT_PLAIN, %rax
	testq	%rax, %r10
	jnz	8f
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	GRAPH_THREAD_DATA 7f
	GRAPH_RECORDING 7f
	GRAPH_NO_EXIT_VALUES 7f
	cmpq	$0, G_RT_CHUNK(%rsi)
	je	7f
	GRAPH_CLOCK 7f
	/* A duration trigger's call that took longer than its threshold:
	 * graph_exit fires it (rec_graph_direct_exit's compare). */
	btq	$G_COOKIE_TIMED_BIT, (%rsp)
	jnc	17f
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	GRAPH_TRIGGER_SITE
	popq	%rax
	.cfi_adjust_cfa_offset -8
	testq	%r8, %r8
	jz	17f
	movq	G_TS_THRESHOLD(%r8), %r9
	testq	%r9, %r9
	jz	17f
	movq	%rax, %r8
	addq	G_RT_BASE(%rsi), %r8
	subq	(%rsp), %r8
	shlq	$64 - G_COOKIE_TIME_BITS, %r8
	shrq	$64 - G_COOKIE_TIME_BITS, %r8
	cmpq	%r9, %r8
	ja	7f
17:	movl	%r10d, %r9d
	andl	$G_EV_SITE_MASK, %r9d
	shlq	$G_EV_SITE_SHIFT, %r9
	orq	%rax, %r9
	btsq	$G_EV_EXIT_BIT, %r9
	GRAPH_STORE
	popq	%r10                    /* the cookie */
	.cfi_adjust_cfa_offset -8
	btq	$G_COOKIE_LIB_TOP_BIT, %r10
	setc	G_RT_LIB_TOP(%rsi)
	movl	G_RT_DEPTH(%rsi), %eax
	testl	%eax, %eax
	jz	1f
	decl	%eax
	movl	%eax, G_RT_DEPTH(%rsi)
1:	popq	%rsi                    /* the header */
	.cfi_adjust_cfa_offset -8
	/* The real return address into the slot, before the pop: a signal
	 * handler's call may push a frame over the popped one. */
	movq	G_FH_RETURN_ADDR(%rsi), %rax
	movq	%rax, saved + 8(%rsp)
	subq	$G_FRAME_BYTES, G_TS_SHADOW_TOP(%rcx)
	DIRECT_READ_UNLOCK
	movl	$1, %eax
	cmpl	$0, %eax                /* above: taken */
	GRAPH_RETURN_RESTORE \all
	.cfi_adjust_cfa_offset saved + 16
7:	addq	$16, %rsp
	.cfi_adjust_cfa_offset -16
8:	DIRECT_READ_UNLOCK
9:	xorl	%eax, %eax
	cmpl	$0, %eax                /* equal: declined */
	GRAPH_RETURN_RESTORE \all
	.cfi_adjust_cfa_offset early
19:	xorl	%eax, %eax
	cmpl	$0, %eax                /* equal: declined */
	.if \all
	GRAPH_RESTORE_RET RETURN_RESTORE_ALL_EARLY
	.else
	GRAPH_RESTORE_RET RETURN_RESTORE_VALUE_EARLY
	.endif
.endm

	/* From needle_calling_return, [rsp + 8] = the slot its final ret
	 * goes through, just below the caller's stack pointer; rax:rdx the
	 * return value (xmm0:xmm1 are never touched). */
	.globl	needle_graph_return
	.hidden	needle_graph_return
	.type	needle_graph_return, @function
	.p2align 4
needle_graph_return:
	.cfi_startproc
	GRAPH_RETURN 0
	.cfi_endproc
	.size	needle_graph_return, .-needle_graph_return

	/* From needle_calling_return_relocated: the same, every register
	 * put back. */
	.globl	needle_graph_return_relocated
	.hidden	needle_graph_return_relocated
	.type	needle_graph_return_relocated, @function
	.p2align 4
needle_graph_return_relocated:
	.cfi_startproc
	GRAPH_RETURN 1
	.cfi_endproc
	.size	needle_graph_return_relocated, .-needle_graph_return_relocated

	.section .note.GNU-stack, "", @progbits
