/* safe_copy.c - copying a string argument from an address the traced
 * program passed, which may be unmapped, PROT_NONE, past the end of a
 * mapped file or not an address at all, without a system call: the
 * user-space form of the kernel's copy_from_user_nofault and its
 * exception table.
 *
 * The copy loop (safe_copy_run, below) is assembly with three labels: a
 * SIGSEGV or SIGBUS raised by the kernel (si_code > 0) at a PC in
 * [safe_copy_text_start, safe_copy_text_end) is the copy's, and the
 * handler resumes the thread at safe_copy_fixup, which returns the count
 * the loop had reached (rax, never changed by a faulting instruction) and
 * "faulted".  No flag is set around the copy and no state is shared: the
 * PC says it all.  The loop reads aligned 8-byte words while 8 bytes
 * remain under max (the first one shifted down to src[0] when src is not
 * aligned), then bytes.  An aligned word never straddles a page, so a
 * fault names the first byte that cannot be read and the count is exact;
 * each byte is read once, and a word's NUL is looked for in the register
 * the word was loaded into, so a string that changes under the copy gives
 * a consistent result.  libneedle is never traced (module.c), and this
 * code has no patchable entry either way.
 *
 * Every other SIGSEGV and SIGBUS is the program's and goes where it would
 * have gone untraced.  The sigaction and signal interposers
 * (sigmask_watch.c) hand SIGSEGV and SIGBUS here: once the handler is in,
 * the action a program sets is recorded as the one to chain to, the
 * kernel keeps ours, and sigaction(sig, NULL, &old) reads the recorded
 * one back (with SA_RESTORER and the restorer, as the C library's
 * sigaction reads back what the kernel holds).  The handler then:
 *  - program handler: sets the mask it would run with untraced (the
 *    interrupted mask, its sa_mask, the signal unless SA_NODEFER),
 *    applies SA_RESETHAND to the recorded action, and jumps to it with the
 *    kernel's registers and stack as they came (signal number, siginfo,
 *    ucontext; the restorer as return address), so it runs in the frame
 *    the kernel built, and a backtrace or a siglongjmp from it sees what
 *    it would untraced.  Our handler is installed with the program's
 *    SA_ONSTACK and SA_RESTART, so the kernel picks the same stack and
 *    restarts the same system calls;
 *  - SIG_DFL, or SIG_IGN for a fault (which the kernel never ignores):
 *    puts SIG_DFL back in the kernel and returns; the faulting
 *    instruction runs again, faults again, and the process dies of the
 *    signal with a core, as untraced;
 *  - a signal sent with kill, tgkill or sigqueue (si_code <= 0), or an
 *    asynchronous machine-check SIGBUS (BUS_MCEERR_AO): SIG_IGN drops it;
 *    SIG_DFL re-sends it to the thread after putting SIG_DFL back, and it
 *    is delivered, fatally, when the handler returns.
 * Differences from untraced, all outside the copy: a handler installed
 * with sigset, sysv_signal, bsd_signal, sigignore or a raw rt_sigaction
 * takes the kernel's place unseen (faults in the copy then reach it); a
 * SIGSEGV or SIGBUS sent to a program that ignores it interrupts a
 * system call the way a handler does (EINTR from poll, nanosleep...)
 * instead of being dropped by the kernel at once; while the handler runs
 * (before the jump) asynchronous signals wait, for a microsecond; each of
 * the program's faults costs that and one rt_sigprocmask more; and if a
 * fault with SIG_DFL does not happen again on return (another thread
 * mapped the page meanwhile), the program runs on without our handler.
 *
 * Masks.  The kernel kills a process that faults with the signal
 * blocked, handler or not.  So the fast path runs only on a thread whose
 * mask is known to let SIGSEGV and SIGBUS through: a thread-local state,
 * open when the pthread_sigmask interposer saw a mask that lets both
 * through, or a copy read the mask (one system call) and found it so.
 * Every other way the mask changes has to close it or keep it true:
 *  - a handler's sa_mask, which the kernel adds at delivery, unseen: once
 *    the handler is in, SIGSEGV and SIGBUS are taken out of the sa_mask of
 *    every handler of another signal, as sigmask_watch.c takes SIGTRAP
 *    out: those installed before (safe_copy_init re-installs them) and
 *    after (safe_copy_sigaction); sigaction(sig, NULL, &old) reads back
 *    the mask the program gave.  A handler then has the two signals as
 *    the code it interrupted had them, and the state holds inside it.
 *    What differs from untraced, only inside a handler whose sa_mask
 *    held them (sigfillset is common): a fault of the program's own there
 *    is delivered, to its SIGSEGV or SIGBUS handler, or to the default
 *    action, which kills the process; untraced, the kernel would force
 *    the default action at once.  For a program without a handler for it
 *    the end is the same: killed by the signal, with a core.  Besides,
 *    a SIGSEGV or SIGBUS sent with kill arrives inside the handler
 *    instead of after it, and the mask read there shows them unblocked;
 *  - the program's own SIGSEGV and SIGBUS handlers: their mask is set
 *    here (chain), which closes the state if it blocks either;
 *  - calls that set a mask until they return, then give back the one
 *    from before (sigsuspend, ppoll, pselect, epoll_pwait, and
 *    pthread_sigmask until it has returned): "unsettled" for the length
 *    of the call, each copy reading the mask and never keeping what it
 *    read (a handler may run before the system call, under the old mask,
 *    or inside it, under the call's), and the state from before back when
 *    it returns;
 *  - switches that may never return (setcontext, swapcontext, siglongjmp
 *    with a saved mask): a handler may run on either side of the system
 *    call, so the state must hold for both masks: it stays open if both
 *    let the signals through, is unsettled if the new one blocks one
 *    (until the next mask the interposers see), and unknown otherwise;
 *    swapcontext's return and longjmp make it unknown;
 *  - unknown: the next copy reads the mask; if both signals go through,
 *    the state opens, else it copies with process_vm_readv.
 * Unseen, where a copy from a bad pointer kills the process: masks set
 * by raw system calls (rt_sigprocmask; ppoll, epoll_pwait, io_uring_enter
 * with a mask) or inside the C library (sighold, sigpause, and the
 * setcontext by which a coroutine's uc_link is entered, seen only when
 * that is a swapcontext's return); the sa_mask of a handler installed
 * with a raw rt_sigaction; a wait already under way when libneedle was
 * loaded into the running process; and a handler that unblocks SIGSEGV
 * or SIGBUS (or edits uc_sigmask) and returns: the kernel restores the
 * interrupted mask at sigreturn, where nothing of needle runs.
 *
 * Writers of the recorded actions and of the handlers' masks (init; the
 * sigaction and signal interposers, for every signal once init has
 * started: it re-installs handlers, and an action the program set
 * between its read and its write would be lost) take a spin lock with
 * asynchronous signals blocked, so no handler on the same thread can find
 * it held: two rt_sigprocmask calls more per sigaction.  Before init the
 * calls pass a gate instead, two atomic additions.  The signal handler
 * takes the lock only to read (and for SA_RESETHAND), from a handler that
 * runs with them blocked too.  A fork's child releases it.  It is here,
 * in base, because the record layer, which copies string arguments, may
 * include only base and common (docs/design.md, "Layers"). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>

#include "agent/arch/arch.h"
#include "agent/base/interpose.h"
#include "agent/base/raw_syscall.h"
#include "agent/base/safe_copy.h"

struct run_result {
	size_t n;
	size_t faulted;
};

/* The assembly below; visibility hidden, so no PLT and no relocation. */
#define HIDDEN __attribute__((visibility("hidden")))
HIDDEN struct run_result safe_copy_run(char *dst, const void *src, size_t max);
struct word_result {
	uint64_t value;
	size_t faulted;
};
HIDDEN struct word_result safe_copy_run_word(const void *src);
HIDDEN void safe_copy_signal_entry(int sig, siginfo_t *info, void *uc);
HIDDEN void *safe_copy_on_signal(int sig, siginfo_t *info, ucontext_t *uc);
extern const char safe_copy_text_start[] HIDDEN, safe_copy_text_end[] HIDDEN, safe_copy_fixup[] HIDDEN;

/* safe_copy_run(dst: rdi, src: rsi, max: rdx) -> n: rax, faulted: rdx.
 * Registers: rax the count, rcx and r8 scratch, r9 and r10 the constants
 * of the zero-byte test ((v - 0x01..01) & ~v & 0x80..80 has its lowest
 * set bit in the first zero byte of v).  The loads at (%rsi,%rax) are
 * the only ones that may fault (the stores go to needle's own buffer).
 *
 * safe_copy_signal_entry is the handler the kernel calls: it asks
 * safe_copy_on_signal what to do, and either returns (to the restorer:
 * sigreturn) or jumps to the program's handler with the arguments, stack
 * and return address the kernel gave, and rax zeroed as the kernel
 * leaves it for handlers declared without a prototype. */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl	safe_copy_run\n"
	"	.hidden	safe_copy_run\n"
	"	.type	safe_copy_run, @function\n"
	"safe_copy_run:\n"
	"	.cfi_startproc\n"
	"	xorl	%eax, %eax\n"
	"	testq	%rdx, %rdx\n"
	"	jz	.Lsc_done\n"
	"	movabsq	$0x0101010101010101, %r9\n"
	"	movabsq	$0x8080808080808080, %r10\n"
	"	.globl	safe_copy_text_start\n"
	"	.hidden	safe_copy_text_start\n"
	"safe_copy_text_start:\n"
	/* src not 8-aligned (and max >= 8): the aligned word that holds
	 * src[0], shifted down to it, its top bytes filled with 0xff (not a
	 * NUL); then n = 8 - (src & 7) and src + n is aligned.  The load
	 * faults with n still 0. */
	"	movl	%esi, %ecx\n"
	"	andl	$7, %ecx\n"
	"	jz	.Lsc_words\n"
	"	cmpq	$8, %rdx\n"
	"	jb	.Lsc_tail\n"
	"	movq	%rsi, %r8\n"
	"	andq	$-8, %r8\n"
	"	movq	(%r8), %r8\n"
	"	movl	$8, %eax\n"
	"	subl	%ecx, %eax\n"
	"	shll	$3, %ecx\n"
	"	shrq	%cl, %r8\n"
	"	negl	%ecx\n"
	"	movq	$-1, %r11\n"
	"	shlq	%cl, %r11\n"
	"	orq	%r11, %r8\n"
	"	movq	%r8, (%rdi)\n"
	"	movq	%r8, %rcx\n"
	"	subq	%r9, %rcx\n"
	"	notq	%r8\n"
	"	andq	%r8, %rcx\n"
	"	andq	%r10, %rcx\n"
	"	jz	.Lsc_words\n"
	"	bsfq	%rcx, %rcx\n"
	"	shrq	$3, %rcx\n"
	"	leaq	1(%rcx), %rax\n"
	"	jmp	.Lsc_done\n"
	/* Aligned words while 8 bytes remain under max. */
	".Lsc_words:\n"
	"	movq	%rdx, %rcx\n"
	"	subq	%rax, %rcx\n"
	"	cmpq	$8, %rcx\n"
	"	jb	.Lsc_tail\n"
	"	movq	(%rsi,%rax), %r8\n"
	"	movq	%r8, (%rdi,%rax)\n"
	"	movq	%r8, %rcx\n"
	"	subq	%r9, %rcx\n"
	"	notq	%r8\n"
	"	andq	%r8, %rcx\n"
	"	andq	%r10, %rcx\n"
	"	jnz	.Lsc_nul\n"
	"	addq	$8, %rax\n"
	"	jmp	.Lsc_words\n"
	".Lsc_nul:\n"
	"	bsfq	%rcx, %rcx\n"
	"	shrq	$3, %rcx\n"
	"	leaq	1(%rax,%rcx), %rax\n"
	"	jmp	.Lsc_done\n"
	/* Fewer than 8 bytes left under max: bytes. */
	".Lsc_tail:\n"
	"	cmpq	%rdx, %rax\n"
	"	jae	.Lsc_done\n"
	"	movzbl	(%rsi,%rax), %ecx\n"
	"	movb	%cl, (%rdi,%rax)\n"
	"	incq	%rax\n"
	"	testb	%cl, %cl\n"
	"	jnz	.Lsc_tail\n"
	"	jmp	.Lsc_done\n"
	/* safe_copy_run_word(src: rdi) -> the word: rax, faulted: rdx.  In
	 * the same text range, so a fault at its load resumes at the same
	 * fixup, which returns with rax still 0.  It pushes nothing, as the
	 * fixup's ret requires, and shares safe_copy_run's unwind rule (the
	 * CFA is rsp + 8 throughout). */
	"	.globl	safe_copy_run_word\n"
	"	.hidden	safe_copy_run_word\n"
	"safe_copy_run_word:\n"
	"	xorl	%eax, %eax\n"
	"	movq	(%rdi), %rax\n"
	"	.globl	safe_copy_text_end\n"
	"	.hidden	safe_copy_text_end\n"
	"safe_copy_text_end:\n"
	".Lsc_done:\n"
	"	xorl	%edx, %edx\n"
	"	ret\n"
	"	.globl	safe_copy_fixup\n"
	"	.hidden	safe_copy_fixup\n"
	"safe_copy_fixup:\n"
	"	movl	$1, %edx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size	safe_copy_run, .-safe_copy_run\n"
	"\n"
	"	.p2align 4\n"
	"	.globl	safe_copy_signal_entry\n"
	"	.hidden	safe_copy_signal_entry\n"
	"	.type	safe_copy_signal_entry, @function\n"
	"safe_copy_signal_entry:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	pushq	%rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	pushq	%rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	pushq	%rdx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call	safe_copy_on_signal\n"
	"	popq	%rdx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq	%rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq	%rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	testq	%rax, %rax\n"
	"	jz	1f\n"
	"	movq	%rax, %r11\n"
	"	xorl	%eax, %eax\n"
	"	jmp	*%r11\n"
	"1:	ret\n"
	"	.cfi_endproc\n"
	"	.size	safe_copy_signal_entry, .-safe_copy_signal_entry\n");

/* System calls here are raw (raw_syscall.h): nothing here may touch
 * errno, take a lock of the C library, or call a function a patch batch
 * may be rewriting. */
#define BIT(sig) (1ull << ((sig) - 1))
/* Signals the kernel raises for an instruction: never blocked here (one
 * that is blocked when raised kills the process). */
#define SYNC_SIGNALS (BIT(SIGSEGV) | BIT(SIGBUS) | BIT(SIGILL) | BIT(SIGFPE) | BIT(SIGTRAP) | BIT(SIGSYS))
#define FAULT_SIGNALS (BIT(SIGSEGV) | BIT(SIGBUS))
/* The kernel's sigset: the first word of the C library's. */
#define KERNEL_SIGSET 8

static int sigmask_set(int how, const uint64_t *set, uint64_t *old)
{
	return (int)raw_syscall4(SYS_rt_sigprocmask, how, (long)set, (long)old, KERNEL_SIGSET);
}

/* Pages are at least 4 KiB: a span that does not cross a multiple of 4096
 * lies in one page, whatever the page size. */
#define PAGE 4096ul

static _Atomic int installed;
static atomic_flag chain_lock = ATOMIC_FLAG_INIT;
/* The program's sigaction and signal calls go to the C library unlocked
 * until safe_copy_init starts (gate_closed): a program that never copies
 * a string sees no change.  init closes the gate, then
 * waits for the calls that went through to finish (gate_users) before it
 * re-installs handlers, so none of them lands between its read and its
 * write.  Sequentially consistent: a call either sees the gate closed,
 * or is counted by the time init looks. */
static _Atomic int gate_closed, gate_users;
/* Under chain_lock: per signal (0 SIGSEGV, 1 SIGBUS), the program's
 * action as the interposer gave it (sigmask_watch.c's mask adjustments
 * made), and the flags our handler has in the kernel. */
static struct sigaction program_action[2];
static int our_flags[2];
/* What the C library's sigaction adds (SA_RESTORER and its restorer), as
 * read back from ours: the program reads it back on its own action too. */
static int restorer_flags;
static void (*restorer)(void);

/* Per signal other than SIGSEGV and SIGBUS, under chain_lock: which of
 * them were taken out of the sa_mask of the handler the kernel holds
 * (FAULT_OUT_*), to be put back in what the program reads. */
#define FAULT_OUT_SEGV 1
#define FAULT_OUT_BUS 2
#define NSIGNALS 64
static uint8_t faults_out[NSIGNALS + 1];

/* The calling thread's mask, as far as SIGSEGV and SIGBUS go (see top):
 * unknown (read it), open (both known through: the fast path), unsettled
 * (read it at each copy, never keep what was read). */
enum { MASK_UNKNOWN, MASK_OPEN, MASK_UNSETTLED };
static __thread uint8_t mask_state __attribute__((tls_model("initial-exec")));

static int slot(int sig)
{
	return sig == SIGSEGV ? 0 : 1;
}

static int is_handler(const struct sigaction *act)
{
	return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

static uint8_t take_faults_out(sigset_t *mask)
{
	uint8_t out = 0;
	if (sigismember(mask, SIGSEGV) == 1) {
		sigdelset(mask, SIGSEGV);
		out |= FAULT_OUT_SEGV;
	}
	if (sigismember(mask, SIGBUS) == 1) {
		sigdelset(mask, SIGBUS);
		out |= FAULT_OUT_BUS;
	}
	return out;
}

static void put_faults_back(sigset_t *mask, uint8_t out)
{
	if (out & FAULT_OUT_SEGV)
		sigaddset(mask, SIGSEGV);
	if (out & FAULT_OUT_BUS)
		sigaddset(mask, SIGBUS);
}

static void lock_spin(void)
{
	while (atomic_flag_test_and_set_explicit(&chain_lock, memory_order_acquire))
		__builtin_ia32_pause();
}

static void unlock_spin(void)
{
	atomic_flag_clear_explicit(&chain_lock, memory_order_release);
}

static void lock_writers(uint64_t *saved)
{
	uint64_t block = ~SYNC_SIGNALS;
	sigmask_set(SIG_BLOCK, &block, saved);
	lock_spin();
}

static void unlock_writers(const uint64_t *saved)
{
	unlock_spin();
	sigmask_set(SIG_SETMASK, saved, NULL);
}

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int (*fn)(int, const struct sigaction *, struct sigaction *) = interpose_next(IP_SIGACTION);
	return fn(sig, act, old);
}

/* The kernel picks the handler's stack and restarts system calls by our
 * flags: the program's, for its handler.  SA_ONSTACK when it has none (a
 * stack overflow then still reaches us on an alternate stack). */
static int flags_for(const struct sigaction *prog)
{
	int f = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	if (is_handler(prog))
		f = SA_SIGINFO | (prog->sa_flags & (SA_ONSTACK | SA_RESTART));
	return f;
}

static int install_ours(int sig, int flags, struct sigaction *old)
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = safe_copy_signal_entry;
	act.sa_flags = flags;
	/* Asynchronous signals wait while it decides; the mask a program
	 * handler runs with is set before the jump. */
	sigfillset(&act.sa_mask);
	for (int s = 1; s < 64; s++)
		if (SYNC_SIGNALS & BIT(s))
			sigdelset(&act.sa_mask, s);
	return real_sigaction(sig, &act, old);
}

/* What the kernel would have kept of act: a 64-bit mask without SIGKILL
 * and SIGSTOP, and what the C library's sigaction adds. */
static void record(int sig, const struct sigaction *act)
{
	struct sigaction *p = &program_action[slot(sig)];

	memset(p, 0, sizeof(*p));
	p->sa_sigaction = act->sa_sigaction;
	p->sa_flags = act->sa_flags | restorer_flags;
	p->sa_restorer = restorer_flags ? restorer : act->sa_restorer;
	memcpy(&p->sa_mask, &act->sa_mask, KERNEL_SIGSET);
	sigdelset(&p->sa_mask, SIGKILL);
	sigdelset(&p->sa_mask, SIGSTOP);
}

/* Under the lock: our flags follow the recorded action. */
static void follow_flags(int sig)
{
	int i = slot(sig), f = flags_for(&program_action[i]);
	if (f != our_flags[i] && !install_ours(sig, f, NULL))
		our_flags[i] = f;
}

static int install_locked(void)
{
	static const int sigs[2] = { SIGSEGV, SIGBUS };
	struct sigaction prev[2], back;

	memset(prev, 0, sizeof(prev));
	for (int i = 0; i < 2; i++) {
		/* The program's calls wait for the lock; what the swap returns
		 * differs from what was read only if the action was changed
		 * unseen (raw rt_sigaction): flags then follow it. */
		int flags = 0;
		if (!real_sigaction(sigs[i], NULL, &prev[i]))
			flags = flags_for(&prev[i]);
		if (!flags || install_ours(sigs[i], flags, &prev[i])) {
			int err = errno;
			if (i == 1)
				real_sigaction(sigs[0], &prev[0], NULL);
			return -err;
		}
		program_action[i] = prev[i];
		our_flags[i] = flags;
		follow_flags(sigs[i]);
	}
	if (!real_sigaction(SIGSEGV, NULL, &back)) {
		restorer_flags = back.sa_flags & ~our_flags[0];
		restorer = back.sa_restorer;
	}
	/* The handlers already in: before any thread's state can open (see
	 * top), none runs with SIGSEGV or SIGBUS added to its mask. */
	for (int sig = 1; sig <= NSIGNALS; sig++) {
		struct sigaction cur;
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
		    real_sigaction(sig, NULL, &cur) || !is_handler(&cur))
			continue;
		uint8_t out = take_faults_out(&cur.sa_mask);
		if (out && !real_sigaction(sig, &cur, NULL))
			faults_out[sig] = out;
	}
	atomic_store(&installed, 1);
	return 0;
}

/* A call takes a microsecond; one still counted after 20 ms was left by
 * a jump out of a signal handler that interrupted it (and will never be
 * done), or its thread is not running: init goes on without it. */
static void wait_gate_users(void)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (atomic_load(&gate_users)) {
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) > 20000000L)
			return;
	}
}

/* A fork's child has only the thread that forked, which held no lock
 * (nothing that runs with it held forks, nor lets a handler run). */
static void fork_child(void)
{
	unlock_spin();
}

int safe_copy_init(void)
{
	static int atfork_set;
	uint64_t saved;
	int err = 0, e = errno;

	if (atomic_load(&installed))
		return 0;
	/* Waited for outside the lock: a handler that interrupts one of
	 * those calls and calls sigaction itself takes the lock. */
	atomic_store(&gate_closed, 1);
	wait_gate_users();
	lock_writers(&saved);
	if (!atomic_load(&installed))
		err = install_locked();
	unlock_writers(&saved);
	if (!err && !atfork_set)
		atfork_set = !pthread_atfork(NULL, NULL, fork_child);
	errno = e;
	return err;
}

/* 1: go to the C library unlocked, then gate_leave. */
static int gate_enter(void)
{
	atomic_fetch_add(&gate_users, 1);
	if (!atomic_load(&gate_closed))
		return 1;
	atomic_fetch_sub(&gate_users, 1);
	return 0;
}

static void gate_leave(void)
{
	atomic_fetch_sub(&gate_users, 1);
}

/* As the C library's sigaction fills old: the kernel's 64 signals of the
 * mask, the rest of the caller's left as it was. */
static void copy_out(struct sigaction *old, const struct sigaction *o)
{
	old->sa_sigaction = o->sa_sigaction;
	old->sa_flags = o->sa_flags;
	old->sa_restorer = o->sa_restorer;
	memcpy(&old->sa_mask, &o->sa_mask, KERNEL_SIGSET);
}

/* A signal other than SIGSEGV and SIGBUS: a handler's mask without them
 * once the handler is in.  old is written after the lock is dropped: a
 * bad pointer faults there, not with the lock held. */
static int other_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction a, o;
	uint64_t saved;
	uint8_t was, out = 0;
	int r, err;

	if (act)
		a = *act;
	if (sig <= 0 || sig > NSIGNALS)
		return real_sigaction(sig, act ? &a : NULL, old);
	if (gate_enter()) {
		r = real_sigaction(sig, act ? &a : NULL, old);
		gate_leave();
		return r;
	}
	lock_writers(&saved);
	if (act && atomic_load_explicit(&installed, memory_order_relaxed) && is_handler(&a))
		out = take_faults_out(&a.sa_mask);
	r = real_sigaction(sig, act ? &a : NULL, &o);
	err = errno;
	was = faults_out[sig];
	if (!r && act)
		faults_out[sig] = out;
	unlock_writers(&saved);
	errno = err;
	if (r)
		return -1;
	if (old) {
		copy_out(old, &o);
		put_faults_back(&old->sa_mask, was);
	}
	return 0;
}

int safe_copy_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction a, o;
	uint64_t saved;
	int r = 0, err = errno;

	if (sig != SIGSEGV && sig != SIGBUS)
		return other_sigaction(sig, act, old);
	/* Read before the lock: a bad pointer faults here, as it does in
	 * the C library's sigaction. */
	if (act)
		a = *act;
	if (gate_enter()) {
		r = real_sigaction(sig, act ? &a : NULL, old);
		gate_leave();
		return r;
	}
	lock_writers(&saved);
	if (!atomic_load_explicit(&installed, memory_order_relaxed)) {
		r = real_sigaction(sig, act ? &a : NULL, &o);
		err = errno;
	} else {
		o = program_action[slot(sig)];
		if (act) {
			record(sig, &a);
			follow_flags(sig);
		}
	}
	unlock_writers(&saved);
	errno = err;
	if (r)
		return -1;
	if (old)
		copy_out(old, &o);
	return 0;
}

sighandler_t safe_copy_signal(int sig, sighandler_t handler, sighandler_t (*c_signal)(int, sighandler_t))
{
	uint64_t saved;

	if (gate_enter()) {
		sighandler_t prev = c_signal(sig, handler);
		gate_leave();
		return prev;
	}
	lock_writers(&saved);
	sighandler_t prev = c_signal(sig, handler);
	int err = errno;
	if (prev != SIG_ERR && sig > 0 && sig <= NSIGNALS)
		faults_out[sig] = 0;
	unlock_writers(&saved);
	errno = err;
	return prev;
}

void safe_copy_mask_changed(const sigset_t *now)
{
	uint64_t word;

	memcpy(&word, now, sizeof(word));
	int open = !(word & FAULT_SIGNALS) && atomic_load_explicit(&installed, memory_order_relaxed);
	mask_state = open ? MASK_OPEN : MASK_UNKNOWN;
}

void safe_copy_mask_unknown(void)
{
	mask_state = MASK_UNKNOWN;
}

void safe_copy_mask_switch(const sigset_t *to)
{
	uint64_t word;

	memcpy(&word, to, sizeof(word));
	if (word & FAULT_SIGNALS)
		mask_state = MASK_UNSETTLED;
	else if (mask_state != MASK_OPEN)
		mask_state = MASK_UNKNOWN;
}

int safe_copy_mask_enter(void)
{
	int token = mask_state;
	mask_state = MASK_UNSETTLED;
	return token;
}

void safe_copy_mask_leave(int token)
{
	mask_state = (uint8_t)token;
}

/* The system-call copy: a page at a time, so that a string that ends
 * before an unreadable page is read whole and one that runs into it
 * stops exactly there. */
static size_t copy_syscall(char *dst, const char *src, size_t max, int *faulted)
{
	long pid = raw_syscall4(SYS_getpid, 0, 0, 0, 0);
	size_t n = 0;

	*faulted = 0;
	while (n < max) {
		uintptr_t at = (uintptr_t)src + n;
		size_t chunk = PAGE - (at & (PAGE - 1));
		if (chunk > max - n)
			chunk = max - n;
		struct iovec local = { dst + n, chunk }, remote = { (void *)at, chunk };
		long got = raw_syscall6(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
		for (long i = 0; i < got; i++)
			if (!dst[n + i])
				return n + i + 1;
		if (got != (long)chunk) {
			*faulted = 1;
			return n + (got > 0 ? got : 0);
		}
		n += chunk;
	}
	return n;
}

static inline size_t copy_fast(char *dst, const void *src, size_t max, int *faulted)
{
	struct run_result r = safe_copy_run(dst, src, max);
	*faulted = (int)r.faulted;
	return r.n;
}

/* Whether a fault may be taken on this thread now, when mask_state does
 * not already say so: the handler is in and the mask (one system call)
 * lets SIGSEGV and SIGBUS through.  Out of line: the fast path saves no
 * registers.  A handler that runs between the read and the store
 * returns to the mask that was read. */
static __attribute__((noinline)) int faults_allowed_slow(void)
{
	uint64_t mask;

	if (!atomic_load_explicit(&installed, memory_order_acquire) || sigmask_set(SIG_BLOCK, NULL, &mask) ||
	    (mask & FAULT_SIGNALS))
		return 0;
	if (mask_state == MASK_UNKNOWN)
		mask_state = MASK_OPEN;
	return 1;
}

size_t safe_copy_str(char *dst, const void *src, size_t max, int *faulted)
{
	/* Addresses no user mapping can have: the first 64 KiB (below
	 * vm.mmap_min_addr's default; where small integers taken for
	 * pointers point) and above the 47-bit user half.  Refused without
	 * a load, so the commonest bad pointers never fault: a fault costs
	 * a signal, and one taken while a mask set by a raw system call
	 * blocks SIGSEGV (which no interposer sees) would kill the process. */
	uintptr_t a = (uintptr_t)src;
	if (a < (64u << 10) || a >= (1ull << 47) - max) {
		*faulted = 1;
		return 0;
	}
	if (__builtin_expect(mask_state != MASK_OPEN, 0) && !faults_allowed_slow())
		return copy_syscall(dst, src, max, faulted);
	return copy_fast(dst, src, max, faulted);
}

int safe_copy_word(uint64_t *dst, const void *src)
{
	uintptr_t a = (uintptr_t)src;

	if (a < (64u << 10) || a >= (1ull << 47) - 8 || (a & 7))
		return -1;
	if (__builtin_expect(mask_state != MASK_OPEN, 0) && !faults_allowed_slow()) {
		struct iovec local = { dst, 8 }, remote = { (void *)a, 8 };
		long pid = raw_syscall4(SYS_getpid, 0, 0, 0, 0);
		return raw_syscall6(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0) == 8 ? 0 : -1;
	}
	struct word_result r = safe_copy_run_word(src);
	if (r.faulted)
		return -1;
	*dst = r.value;
	return 0;
}

/* Under the lock: the program's action for this delivery, and
 * SA_RESETHAND done as the kernel does it at delivery. */
static void take_action(int sig, struct sigaction *act)
{
	int i = slot(sig);

	lock_spin();
	*act = program_action[i];
	if (is_handler(act) && (act->sa_flags & SA_RESETHAND)) {
		program_action[i].sa_handler = SIG_DFL;
		follow_flags(sig);
	}
	unlock_spin();
}

static void *chain(int sig, siginfo_t *info, ucontext_t *uc)
{
	struct sigaction act;
	/* Sent by a process, or an asynchronous machine-check report:
	 * nothing faults again on return. */
	int sent = info->si_code <= 0 || (sig == SIGBUS && info->si_code == BUS_MCEERR_AO);

	take_action(sig, &act);
	if (is_handler(&act)) {
		uint64_t mask, add;
		memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
		memcpy(&add, &act.sa_mask, sizeof(add));
		mask |= add;
		if (!(act.sa_flags & SA_NODEFER))
			mask |= BIT(sig);
		mask &= ~(BIT(SIGKILL) | BIT(SIGSTOP));
		if ((mask & FAULT_SIGNALS) && mask_state == MASK_OPEN)
			mask_state = MASK_UNKNOWN;
		sigmask_set(SIG_SETMASK, &mask, NULL);
		return (void *)act.sa_handler;
	}
	if (act.sa_handler == SIG_IGN && sent)
		return NULL;
	/* The default action, now and for good: the process is dying.
	 * rt_sigaction with SIG_DFL needs no restorer. */
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} dfl = { 0 };
	raw_syscall4(SYS_rt_sigaction, sig, (long)&dfl, 0, KERNEL_SIGSET);
	if (sent) {
		/* Blocked until this handler returns, then fatal. */
		long pid = raw_syscall4(SYS_getpid, 0, 0, 0, 0), tid = raw_syscall4(SYS_gettid, 0, 0, 0, 0);
		raw_syscall4(SYS_tgkill, pid, tid, sig, 0);
	}
	return NULL;
}

void *safe_copy_on_signal(int sig, siginfo_t *info, ucontext_t *uc)
{
	uintptr_t pc = (uintptr_t)arch_ucontext_pc(uc);

	if (info->si_code > 0 && !(sig == SIGBUS && info->si_code == BUS_MCEERR_AO) &&
	    pc >= (uintptr_t)safe_copy_text_start && pc < (uintptr_t)safe_copy_text_end) {
		arch_ucontext_set_pc(uc, (uint64_t)(uintptr_t)safe_copy_fixup);
		return NULL;
	}
	int saved = errno;
	void *fn = chain(sig, info, uc);
	errno = saved;
	return fn;
}
