/* direct_asm.h - assembler macros the direct paths' assembly shares
 * (probe_trampoline.S, and the recorder's agent/graph_trampoline.S): the
 * thread's tests and the read section, each the same as its C twin in
 * direct_path.h and rcu.h.  Included by .S files only. */
#ifndef NEEDLE_DIRECT_ASM_H
#define NEEDLE_DIRECT_ASM_H

#include "agent/dispatch/direct_layout.h"

/* rcx = the calling thread's state, if it may take this path at rdi (the
 * stack pointer the traced function's return leaves): a state (not a
 * sentinel), not inside the agent, no raw fork's child, its own stack,
 * no read section open; else to \decline.  rax is clobbered.
 * dispatch/direct_path.h's direct_thread.  check_stack=0 (an exit): rcx
 * is loaded and tested already, and neither the agent nor the stack is
 * tested. */
.macro DIRECT_THREAD decline, check_stack=1
	.if \check_stack
	movq	needle_thread@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rcx
	cmpq	$G_THREAD_STATE_SENTINEL_MAX, %rcx
	jbe	\decline
	.endif
	movq	thread_state_fork_word(%rip), %rax
	cmpq	$0, (%rax)
	je	\decline
	.if \check_stack
	movq	needle_agent_busy@gottpoff(%rip), %rax
	cmpl	$0, %fs:(%rax)
	jne	\decline
	movq	%rdi, %rax
	shrq	$G_STACK_BLOCK_SHIFT, %rax
	subq	G_TS_STACK_WINDOW(%rcx), %rax
	cmpq	$G_STACK_WINDOW_BLOCKS - 1, %rax
	ja	\decline
	.endif
	testw	$0xffff, G_TS_RCU_WORD(%rcx)
	jne	\decline
.endm

/* The read section (rcu.h's rcu_read_lock_outer): the opener's stack
 * pointer (rcu_note_opener, before the word and again after it), and the
 * generation and a nesting of 1 in the thread's word, one store, no
 * fence (the writer's membarrier orders it).  rax is clobbered. */
.macro DIRECT_READ_LOCK
	movq	%rsp, G_TS_RCU_SP(%rcx)
	movq	rcu_gp_generation(%rip), %rax
	shlq	$G_RCU_NEST_BITS, %rax
	orq	$1, %rax
	movq	%rax, G_TS_RCU_WORD(%rcx)
	movq	%rsp, G_TS_RCU_SP(%rcx)
.endm
/* rcu_read_unlock(ts, 0): a plain store, a release under TSO (rcu.h). */
.macro DIRECT_READ_UNLOCK
	movq	$0, G_TS_RCU_WORD(%rcx)
.endm


/* \c = the site's (r11) only consumer and \ops its ops, read inside the
 * read section (direct_path.h's direct_sole_consumer); to \decline when
 * the site's list is not one consumer.  rax is clobbered (unless it is
 * \c).  Plain loads are acquire loads under TSO: they pair with
 * consumer_set_ops' and site_swap_consumers' release stores. */
.macro DIRECT_SOLE_CONSUMER c, ops, decline
	movq	G_SITE_CONSUMERS(%r11), %rax
	testq	%rax, %rax
	jz	\decline
	cmpl	$1, G_LIST_CNT(%rax)
	jne	\decline
	movq	G_LIST_ITEMS(%rax), %\c
	movq	G_C_OPS(%\c), %\ops
.endm

#endif
