/* sigmask_watch.c - keeps signal masks and handlers from turning a patch
 * batch into a crash (see patch_batch.c).
 *
 * An int3 hit by a thread that blocks SIGTRAP makes the kernel reset
 * SIGTRAP to its default action and kill the process.  Masks change
 * through pthread_sigmask and sigprocmask, which libneedle interposes:
 * after each change the calling thread's TLS byte records whether SIGTRAP
 * is blocked, and a global count of such threads is kept, so a batch in a
 * process with 100,000 threads does not read 100,000 /proc files.  A new
 * thread inherits its creator's mask, so pthread_create is interposed
 * too.  What interposition cannot see (raw rt_sigprocmask system calls,
 * threads that existed before libneedle was loaded) is caught by reading
 * every thread's SigBlk from /proc before each batch, when the process
 * has at most NEEDLE_MASK_SCAN_MAX threads (default 64; patch_batch.c).
 *
 * That look is taken once, before the int3s go in, so no thread may
 * start blocking SIGTRAP after it: an int3 batch closes a gate
 * (sigmask_gate_close) that pthread_sigmask waits at before a mask that
 * blocks SIGTRAP lands, and pthread_create before a blocking thread makes
 * another that inherits its mask.  The thread counts itself in
 * gate_passers, then looks at batch_gate; the batch raises batch_gate,
 * then waits for gate_passers to drain before it looks.  Both sides store
 * then load, sequentially consistent (a Dekker pair): either the batch
 * sees the thread counted, waits for its mask to land and finds it in
 * its look (and stops it for the batch), or the thread sees the gate and
 * waits for the batch to end before it blocks.
 *
 * Signal handlers.  While a handler runs, its sa_mask is added to the
 * thread's mask by the kernel, where no interposition sees it.  So
 * sigaction (and signal) are interposed to change what the kernel gets:
 *  - SIGTRAP is taken out of a handler's sa_mask: an int3 inside the
 *    handler during a batch would otherwise kill the process.  The only
 *    difference a program could see is a SIGTRAP of its own arriving
 *    inside such a handler rather than after it;
 *  - needle's stop signal is added to it: a thread is then never stopped
 *    for a rewrite while a handler runs, so the PC that thread_stop.c
 *    moves out of a site is always the one the thread resumes at (a
 *    handler's interrupted PC sits in a signal frame that the stop
 *    handler cannot see);
 *  - once string arguments are copied, SIGSEGV and SIGBUS are taken out
 *    too, by safe_copy.c (kernel_action), for the same reason as SIGTRAP:
 *    a fault in the copy with either blocked would kill the process.
 *    What the program can see: a fault of its own inside such a handler
 *    goes to its SIGSEGV (SIGBUS) handler, or the default action, where
 *    the kernel would force the default action (the same end for a
 *    program without a handler), and a SIGSEGV sent to it arrives inside
 *    the handler rather than after it.
 * The program reads back (oldact) exactly the sa_mask it gave.  Handlers
 * installed with raw rt_sigaction calls are not seen (docs/design.md).
 *
 * SIGSEGV and SIGBUS go through safe_copy.c, whose handler, once string
 * copies are on, stays in the kernel in front of the program's: the
 * action the program sets (with the adjustments above) is recorded there
 * as the one its own faults go to, and is what it reads back.  signal()
 * for them is sigaction with the flags and mask the C library's signal()
 * gives (SA_RESTART, the signal itself; a siginterrupt() made before is
 * not seen): the C library's would go to the kernel directly and take
 * needle's handler out.  Each mask change tells safe_copy.c whether the
 * thread now blocks either signal (a fault in the copy would then kill
 * the process; it copies with a system call instead): pthread_sigmask
 * and sigprocmask; the jumps, with the mask they restore; and the waits
 * that set a mask until they return (sigsuspend, ppoll, pselect,
 * epoll_pwait), during which a handler runs under that mask.
 *
 * SIGEV_THREAD timers.  glibc runs their notify functions (since 2.32)
 * in threads it makes itself, unseen by the pthread_create interposer,
 * with every signal blocked: program code that an int3 would kill and
 * that a stop signal cannot reach.  timer_create is interposed to run
 * them through timer_notify, which unblocks SIGTRAP and the stop signal
 * for the rest of the thread (its TLS destructors run after the call);
 * the thread's view of its own mask (pthread_sigmask's old set) still
 * shows them blocked, and blocking them again keeps them unblocked,
 * until it unblocks them or sets a mask without them.  (A signal of the
 * program's on the stop signal's number may then be delivered to such
 * a thread, whose stop handler passes it on; a program it execs
 * inherits the two unblocked.)
 * A notify function reaches timer_notify through one of TIMER_FNS_MAX
 * trampolines, each bound to one function for good: nothing is
 * allocated per timer, nothing freed at timer_delete (a notification
 * may still be on its way then).  Beyond that many distinct functions, a
 * timer is made as the program asked.
 *
 * A signal given to needle record --signal goes the same way through
 * signal_front.c, whose handler stays in the kernel in front of the
 * program's; signal() for it is sigaction, as for SIGSEGV and SIGBUS.
 *
 * Nothing here takes a thread state or calls dlsym: pthread_sigmask and
 * sigprocmask are async-signal-safe and run inside signal handlers. */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "agent/base/interpose.h"
#include "common/tsc.h"
#include "agent/base/raw_syscall.h"
#include "agent/base/safe_copy.h"
#include "agent/base/signal_front.h"
#include "needle.h"
#include "agent/patch/sigmask_watch.h"
#include "agent/patch/task_list.h"
#include "agent/thread/thread_state.h"
#include "agent/patch/thread_stop.h"

static _Atomic int blockers;
static int check_always;
static __thread uint8_t blocks_sigtrap __attribute__((tls_model("initial-exec")));
/* The program blocked needle's stop signal itself (see unblock_stop_signal). */
static __thread uint8_t program_blocks_stop __attribute__((tls_model("initial-exec")));
/* A timer's notify function runs (timer_notify): SIGTRAP and the stop
 * signal are unblocked, the thread still sees them blocked. */
static __thread uint8_t timer_view __attribute__((tls_model("initial-exec")));

/* Per signal, what needle changed in the sa_mask the program gave, so that
 * sigaction(sig, NULL, &old) shows the program its own mask. */
static _Atomic uint8_t trap_taken_out[NSIG], stop_put_in[NSIG];

/* Threads that blocked SIGTRAP when libneedle was loaded into the running
 * process (sigmask_watch_adopt), each counted in blockers; a thread finds
 * itself here at its next mask change, and its TLS byte takes over. */
#define ADOPTED_MAX 256
static _Atomic pid_t adopted[ADOPTED_MAX];
static _Atomic int adopted_cnt;

static void adopted_claim(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < ADOPTED_MAX; i++) {
		pid_t want = tid;
		if (atomic_load_explicit(&adopted[i], memory_order_relaxed) == tid &&
		    atomic_compare_exchange_strong(&adopted[i], &want, 0)) {
			blocks_sigtrap = 1; /* already counted */
			atomic_fetch_sub(&adopted_cnt, 1);
			return;
		}
	}
}

/* The int3 batch gate (see top).  gate_owner: the thread running the
 * batch, which never waits at its own gate (a handler of the program may
 * run on it meanwhile).  gate_pid: the process whose batch closed it: a
 * child forked meanwhile inherits a closed gate that nobody will open,
 * and passers counted in its parent; it takes the gate for open
 * (sigmask_gate_forked resets it in the child). */
static _Atomic uint32_t batch_gate;
static _Atomic uint32_t gate_passers;
static _Atomic pid_t gate_pid;
static __thread uint8_t gate_owner __attribute__((tls_model("initial-exec")));

/* Threads waiting at the gate with every signal blocked: they run
 * nothing, not even a handler, until it opens, so the batch need not
 * stop them although they block SIGTRAP (a creator that blocked every
 * signal around its pthread_create, as jemalloc and many servers do).
 * A thread is listed before it looks at the gate and stays listed, and
 * waiting, until it sees the gate open; the batch's look comes after
 * the close.  Full, a thread waits unlisted (the batch then treats it as
 * any thread that blocks SIGTRAP). */
#define PARKED_MAX 64
static _Atomic pid_t parked[PARKED_MAX];

static int gate_closed_here(void)
{
	return atomic_load(&batch_gate) && !gate_owner &&
	       atomic_load_explicit(&gate_pid, memory_order_relaxed) == (pid_t)raw_syscall4(SYS_getpid, 0, 0, 0, 0);
}

static void gate_leave(void)
{
	if (atomic_fetch_sub(&gate_passers, 1) == 1 && atomic_load(&batch_gate))
		raw_syscall6(SYS_futex, (long)&gate_passers, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
}

/* Every catchable signal blocked but the C library's own two (SIGCANCEL
 * and SIGSETXID, which pthread_sigmask never blocks, and whose handlers
 * run no code of the program's). */
static int blocks_everything(void)
{
	uint64_t mask = 0;
	if (raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&mask, 8))
		return 0;
	uint64_t want = ~0ull & ~(1ull << (SIGKILL - 1)) & ~(1ull << (SIGSTOP - 1)) & ~(1ull << 31) & ~(1ull << 32);
	return (mask & want) == want;
}

/* Raw system calls: errno stays the program's, and this runs inside
 * signal handlers.  A wait ended by a signal looks again. */
static void gate_enter(void)
{
	for (;;) {
		atomic_fetch_add(&gate_passers, 1);
		if (!gate_closed_here())
			return;
		gate_leave();
		int slot = -1;
		if (blocks_everything()) {
			pid_t tid = (pid_t)raw_syscall4(SYS_gettid, 0, 0, 0, 0);
			for (int i = 0; i < PARKED_MAX && slot < 0; i++) {
				pid_t none = 0;
				if (atomic_compare_exchange_strong(&parked[i], &none, tid))
					slot = i;
			}
		}
		while (gate_closed_here())
			raw_syscall6(SYS_futex, (long)&batch_gate, FUTEX_WAIT_PRIVATE, 1, 0, 0, 0);
		if (slot >= 0)
			atomic_store(&parked[slot], 0);
	}
}

int sigmask_gate_parked(pid_t tid)
{
	for (int i = 0; i < PARKED_MAX; i++)
		if (atomic_load(&parked[i]) == tid)
			return 1;
	return 0;
}

void sigmask_gate_open(void)
{
	atomic_store(&batch_gate, 0);
	raw_syscall6(SYS_futex, (long)&batch_gate, FUTEX_WAKE_PRIVATE, INT32_MAX, 0, 0, 0);
	gate_owner = 0;
}

int sigmask_gate_close(void)
{
	uint32_t n;
	uint64_t until = monotonic_ns() + 50 * 1000000ull;

	gate_owner = 1;
	atomic_store_explicit(&gate_pid, getpid(), memory_order_relaxed);
	atomic_store(&batch_gate, 1);
	/* A passer is inside one pthread_sigmask or pthread_create: the wait
	 * is that long, unless the passer waits for a lock the patching
	 * thread holds (a batch made from a constructor, inside dlopen, and
	 * a pthread_create waiting for the loader's TLS lock), or a handler
	 * left the passer's call with siglongjmp and the count with it:
	 * after 50 ms the caller patches another way. */
	while ((n = atomic_load(&gate_passers)) != 0) {
		if (monotonic_ns() >= until) {
			sigmask_gate_open();
			return -ETIMEDOUT;
		}
		struct timespec t = { 0, 1000 * 1000 };
		raw_syscall6(SYS_futex, (long)&gate_passers, FUTEX_WAIT_PRIVATE, n, (long)&t, 0, 0);
	}
	return 0;
}

void sigmask_gate_forked(void)
{
	atomic_store(&batch_gate, 0);
	atomic_store(&gate_passers, 0);
	for (int i = 0; i < PARKED_MAX; i++)
		atomic_store(&parked[i], 0);
	gate_owner = 0;
}

static void set_blocking(int blocks)
{
	/* Only while adopted threads remain: one gettid per mask change. */
	if (__builtin_expect(atomic_load_explicit(&adopted_cnt, memory_order_relaxed) != 0, 0))
		adopted_claim();
	if (blocks != blocks_sigtrap) {
		blocks_sigtrap = (uint8_t)blocks;
		atomic_fetch_add(&blockers, blocks ? 1 : -1);
	}
}

/* timer_view's bits: the signals the thread believes blocked and are not. */
#define VIEW_TRAP 1
#define VIEW_STOP 2

NEEDLE_INTERPOSER_SITE int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t before, now, unviewed;
	int (*fn)(int, const sigset_t *, sigset_t *) = interpose_next(IP_PTHREAD_SIGMASK);
	int stop = thread_stop_signal();
	/* A timer's notify function (timer_notify): a signal it believes
	 * blocked stays unblocked when it blocks it again (its own
	 * save-and-restore of a mask included), and is believed unblocked
	 * once it unblocks it or sets a mask without it. */
	int viewed = timer_view;
	const sigset_t *asked = set;
	if (viewed && set && how != SIG_UNBLOCK) {
		unviewed = *set;
		if (viewed & VIEW_TRAP)
			sigdelset(&unviewed, SIGTRAP);
		if (viewed & VIEW_STOP)
			sigdelset(&unviewed, stop);
		set = &unviewed;
	}
	/* A thread that blocks SIGTRAP already changes nothing the batch's
	 * look has seen (an adopted one is claimed first). */
	if (__builtin_expect(atomic_load_explicit(&adopted_cnt, memory_order_relaxed) != 0, 0) && set)
		adopted_claim();
	int gated = set && how != SIG_UNBLOCK && sigismember(set, SIGTRAP) == 1 && !blocks_sigtrap;
	if (gated)
		gate_enter();
	/* Until the mask is known below, a handler may run under either. */
	int token = safe_copy_mask_enter();
	int r = fn(how, set, old ? old : &before);

	if (!r && set) {
		now = old ? *old : before;
		if (how == SIG_SETMASK)
			now = *set;
		else if (how == SIG_BLOCK)
			sigorset(&now, &now, set);
		else if (how == SIG_UNBLOCK)
			for (int sig = 1; sig < NSIG; sig++)
				if (sigismember(set, sig) == 1)
					sigdelset(&now, sig);
		set_blocking(sigismember(&now, SIGTRAP) == 1);
		program_blocks_stop = sigismember(&now, stop) == 1;
		safe_copy_mask_changed(&now);
		if (viewed && how == SIG_UNBLOCK)
			timer_view &= (uint8_t)~((sigismember(asked, SIGTRAP) == 1 ? VIEW_TRAP : 0) |
						 (sigismember(asked, stop) == 1 ? VIEW_STOP : 0));
		else if (viewed && how == SIG_SETMASK)
			timer_view &= (uint8_t)((sigismember(asked, SIGTRAP) == 1 ? VIEW_TRAP : 0) |
						(sigismember(asked, stop) == 1 ? VIEW_STOP : 0));
	} else {
		safe_copy_mask_leave(token);
	}
	if (!r && old && viewed) {
		if (viewed & VIEW_TRAP)
			sigaddset(old, SIGTRAP);
		if (viewed & VIEW_STOP)
			sigaddset(old, stop);
	}
	if (gated)
		gate_leave();
	return r;
}

/* The timer trampolines (see top): slot i loads timer_fns[i] as
 * timer_notify's second argument (the notification's value is the
 * first, in rdi) and jumps there. */
#define TIMER_FNS_MAX 64
__attribute__((visibility("hidden"))) void (*_Atomic needle_timer_fns[TIMER_FNS_MAX])(union sigval);
extern const char needle_timer_trampolines[] __attribute__((visibility("hidden")));
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".hidden needle_timer_trampolines\n"
	"needle_timer_trampolines:\n"
	".set needle_timer_slot, 0\n"
	".rept 64\n"
	"movq needle_timer_fns + 8 * needle_timer_slot(%rip), %rsi\n"
	"jmp needle_timer_notify\n"
	".p2align 4\n"
	".set needle_timer_slot, needle_timer_slot + 1\n"
	".endr\n"
	".popsection\n");
_Static_assert(TIMER_FNS_MAX == 64, "the .rept above");

__attribute__((visibility("hidden"), used)) void needle_timer_notify(union sigval value, void (*fn)(union sigval))
{
	int stop = thread_stop_signal();
	uint64_t trap = 1ull << (SIGTRAP - 1), stop_bit = stop >= 1 && stop <= 64 ? 1ull << (stop - 1) : 0;
	uint64_t both = trap | stop_bit, was = 0;

	if (!raw_syscall4(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&both, (long)&was, 8))
		timer_view = (uint8_t)((was & trap ? VIEW_TRAP : 0) | (was & stop_bit ? VIEW_STOP : 0));
	/* Nothing is blocked again after: glibc's thread ends once fn
	 * returns, running the thread's TLS and key destructors first,
	 * program code that must meet an int3 with SIGTRAP unblocked too
	 * (the view stays for them). */
	fn(value);
}

/* The trampoline bound to fn, bound now if none is; NULL when every one
 * is taken. */
static void (*timer_trampoline(void (*fn)(union sigval)))(union sigval)
{
	for (int i = 0; i < TIMER_FNS_MAX; i++) {
		void (*cur)(union sigval) = atomic_load(&needle_timer_fns[i]);
		if (!cur && atomic_compare_exchange_strong(&needle_timer_fns[i], &cur, fn))
			cur = fn;
		if (cur == fn)
			return (void (*)(union sigval))(uintptr_t)(needle_timer_trampolines + 16 * i);
	}
	return NULL;
}

NEEDLE_INTERPOSER_SITE int timer_create(clockid_t clock, struct sigevent *sev, timer_t *timer)
{
	int (*create)(clockid_t, struct sigevent *, timer_t *) = interpose_next(IP_TIMER_CREATE);

	if (!create) {
		/* A C library older than 2.34, with timer_create in a librt
		 * loaded local to a plugin: not found from here. */
		errno = ENOSYS;
		return -1;
	}
	if (sev && sev->sigev_notify == SIGEV_THREAD && sev->sigev_notify_function) {
		void (*tramp)(union sigval) = timer_trampoline(sev->sigev_notify_function);
		if (tramp) {
			struct sigevent mine = *sev;
			mine.sigev_notify_function = tramp;
			return create(clock, &mine, timer);
		}
	}
	return create(clock, sev, timer);
}

NEEDLE_INTERPOSER_SITE int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	/* In a threaded process sigprocmask acts on the calling thread.  It
	 * returns -1 and sets errno; pthread_sigmask returns the error. */
	int r = pthread_sigmask(how, set, old);
	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

struct start {
	void *(*fn)(void *);
	void *arg;
};

/* A thread made by one that blocks SIGTRAP: counted in blockers by its
 * creator, inside the gate, before it exists (a batch's look must not
 * miss it), so it only takes over the count here. */
static void *start_blocking(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	blocks_sigtrap = 1;
	return s.fn(s.arg);
}

NEEDLE_INTERPOSER_SITE int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		interpose_next(IP_PTHREAD_CREATE);

	/* A thread that blocked SIGTRAP before libneedle was loaded. */
	if (__builtin_expect(atomic_load_explicit(&adopted_cnt, memory_order_relaxed) != 0, 0))
		adopted_claim();
	if (blocks_sigtrap) {
		/* The new thread starts with our mask: SIGTRAP blocked. */
		struct start *s = malloc(sizeof(*s));
		int r;
		gate_enter();
		if (s) {
			s->fn = fn;
			s->arg = arg;
			atomic_fetch_add(&blockers, 1);
			if ((r = create(thread, attr, start_blocking, s))) {
				atomic_fetch_sub(&blockers, 1);
				free(s);
			}
		} else {
			check_always = 1;
			r = create(thread, attr, fn, arg);
		}
		gate_leave();
		return r;
	}
	return create(thread, attr, fn, arg);
}

/* What the kernel holds, as far as the program is concerned: safe_copy.c
 * keeps SIGSEGV and SIGBUS, and their masks, once string copies are on. */
static int kernel_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	/* A signal needle acts on (--signal): the program's action is kept
	 * there, and needle's handler stays in the kernel in front of it. */
	if (signal_front_owns(sig))
		return signal_front_sigaction(sig, act, old);
	return safe_copy_sigaction(sig, act, old);
}

static int is_handler(const struct sigaction *act)
{
	return (act->sa_flags & SA_SIGINFO) || (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN);
}

/* The mask the program asked for, from the one the kernel holds. */
static void program_view(int sig, struct sigaction *old)
{
	if (atomic_load(&trap_taken_out[sig]))
		sigaddset(&old->sa_mask, SIGTRAP);
	if (atomic_load(&stop_put_in[sig]))
		sigdelset(&old->sa_mask, thread_stop_signal());
}

/* Install act for sig with needle's changes to its mask (see top). */
static int install_adjusted(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction mine = *act;
	int stop = thread_stop_signal();
	uint8_t trap_out = 0, stop_in = 0;

	if (is_handler(act) && sig != SIGTRAP && sig != stop) {
		if (sigismember(&mine.sa_mask, SIGTRAP) == 1) {
			sigdelset(&mine.sa_mask, SIGTRAP);
			trap_out = 1;
		}
		if (stop > 0 && stop < NSIG && sigismember(&mine.sa_mask, stop) != 1) {
			sigaddset(&mine.sa_mask, stop);
			stop_in = 1;
		}
	}
	int r = kernel_action(sig, &mine, old);
	if (!r) {
		if (old)
			program_view(sig, old);
		atomic_store(&trap_taken_out[sig], trap_out);
		atomic_store(&stop_put_in[sig], stop_in);
	}
	return r;
}

NEEDLE_INTERPOSER_SITE int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig <= 0 || sig >= NSIG || !act) {
		int r = kernel_action(sig, act, old);
		if (!r && old && sig > 0 && sig < NSIG)
			program_view(sig, old);
		return r;
	}
	return install_adjusted(sig, act, old);
}

NEEDLE_INTERPOSER_SITE sighandler_t signal(int sig, sighandler_t handler)
{
	sighandler_t (*fn)(int, sighandler_t) = interpose_next(IP_SIGNAL);
	struct sigaction cur;

	if ((sig == SIGSEGV || sig == SIGBUS || signal_front_owns(sig)) && handler != SIG_ERR) {
		struct sigaction act = { .sa_handler = handler, .sa_flags = SA_RESTART };
		sigemptyset(&act.sa_mask);
		sigaddset(&act.sa_mask, sig);
		return install_adjusted(sig, &act, &cur) ? SIG_ERR : cur.sa_handler;
	}
	sighandler_t prev = safe_copy_signal(sig, handler, fn);

	/* glibc chose the flags (SA_RESTART unless siginterrupt said
	 * otherwise); only the mask is adjusted, as for sigaction. */
	if (prev != SIG_ERR && sig > 0 && sig < NSIG && !sigaction_real(sig, NULL, &cur)) {
		int saved = errno;
		install_adjusted(sig, &cur, NULL);
		errno = saved;
	}
	return prev;
}

/* Leaving a signal handler with longjmp (which, unlike siglongjmp with a
 * saved mask, restores no mask) would keep the stop signal that needle
 * put into the handler's mask blocked for good: the program would see a
 * signal blocked that it never blocked, and every later stop-the-world
 * batch would fail.  Unless the program blocked it itself, it is
 * unblocked on the way out (one system call per longjmp).  safe_copy.c
 * is told the mask a jump restores before it does (a handler may run on
 * either side); a jump that restores none leaves the one the handler had,
 * which it reads again before its next fast copy. */

static void unblock_stop_signal(void)
{
	int stop = thread_stop_signal();
	if (program_blocks_stop || stop <= 0 || stop >= NSIG)
		return;
	uint64_t set = 1ull << (stop - 1);
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, NULL, sizeof(set));
}

static void jump_mask(const struct __jmp_buf_tag *env)
{
	if (env->__mask_was_saved)
		safe_copy_mask_switch(&env->__saved_mask);
	else
		safe_copy_mask_unknown();
}

/* The stack pointer a jump to env restores: glibc keeps it mangled
 * (PTR_MANGLE: xor with the thread's pointer guard, %fs:0x30, then
 * rotate left by 17), at __jmpbuf[6]. */
static uint64_t jump_target_sp(const struct __jmp_buf_tag *env)
{
	uint64_t v = (uint64_t)env->__jmpbuf[6], guard;
	__asm__("movq %%fs:0x30, %0" : "=r"(guard));
	return (v >> 17 | v << 47) ^ guard;
}

#define LONGJMP_WRAPPER(name, which)                                                  \
	NEEDLE_INTERPOSER_SITE void name(struct __jmp_buf_tag env[1], int val)        \
	{                                                                             \
		void (*real)(struct __jmp_buf_tag *, int) = interpose_next(which);    \
		int saved = errno;                                                    \
		unblock_stop_signal();                                                \
		jump_mask(env);                                                       \
		thread_state_before_jump(jump_target_sp(env));                        \
		errno = saved;                                                        \
		real(env, val);                                                       \
		__builtin_unreachable();                                              \
	}
LONGJMP_WRAPPER(longjmp, IP_LONGJMP)
LONGJMP_WRAPPER(_longjmp, IP_UNDERSCORE_LONGJMP)
LONGJMP_WRAPPER(siglongjmp, IP_SIGLONGJMP)
LONGJMP_WRAPPER(__longjmp_chk, IP_LONGJMP_CHK)

/* Waits that run with the mask the program passes until they return,
 * then give back the one from before: a handler runs inside them under
 * that mask, which safe_copy.c must not take for the thread's.  The mask
 * is not read here (the C library hands the pointer to the kernel, which
 * says EFAULT for a bad one).  A wait given no mask keeps the thread's. */
#define WAIT_UNDER_MASK(mask, call)                     \
	do {                                            \
		if (!(mask))                            \
			return call;                    \
		int token_ = safe_copy_mask_enter();    \
		int r_ = call;                          \
		safe_copy_mask_leave(token_);           \
		return r_;                              \
	} while (0)

NEEDLE_INTERPOSER int sigsuspend(const sigset_t *set)
{
	int (*fn)(const sigset_t *) = interpose_next(IP_SIGSUSPEND);
	WAIT_UNDER_MASK(1, fn(set));
}

NEEDLE_INTERPOSER int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask)
{
	int (*fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) = interpose_next(IP_PPOLL);
	WAIT_UNDER_MASK(mask, fn(fds, n, timeout, mask));
}

/* What ppoll becomes under _FORTIFY_SOURCE. */
NEEDLE_INTERPOSER int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
				  const sigset_t *mask, size_t fds_len)
{
	int (*fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t) =
		interpose_next(IP_PPOLL_CHK);
	WAIT_UNDER_MASK(mask, fn(fds, n, timeout, mask, fds_len));
}

NEEDLE_INTERPOSER int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *timeout,
			      const sigset_t *mask)
{
	int (*fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *) =
		interpose_next(IP_PSELECT);
	WAIT_UNDER_MASK(mask, fn(n, rd, wr, ex, timeout, mask));
}

NEEDLE_INTERPOSER int epoll_pwait(int fd, struct epoll_event *events, int max, int timeout, const sigset_t *mask)
{
	int (*fn)(int, struct epoll_event *, int, int, const sigset_t *) = interpose_next(IP_EPOLL_PWAIT);
	WAIT_UNDER_MASK(mask, fn(fd, events, max, timeout, mask));
}

/* Newer than some C libraries this may run with. */
NEEDLE_INTERPOSER int epoll_pwait2(int fd, struct epoll_event *events, int max, const struct timespec *timeout,
				   const sigset_t *mask)
{
	int (*fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *) =
		interpose_next(IP_EPOLL_PWAIT2);
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	WAIT_UNDER_MASK(mask, fn(fd, events, max, timeout, mask));
}

static void thread_exit(struct thread_state *ts)
{
	(void)ts;
	set_blocking(0);
}

void sigmask_watch_init(void)
{
	static const struct thread_callbacks cb = { .on_exit = thread_exit };
	thread_state_register(&cb);
	/* A raw fork runs no atfork handler: gate_pid covers that child. */
	pthread_atfork(NULL, NULL, sigmask_gate_forked);
	thread_stop_signal();
	long n = task_count();
	if (n != 1)
		check_always = 1;
}

void sigmask_watch_adopt(int interposed)
{
	struct task_list list;
	int stop = thread_stop_signal();

	/* Handlers installed before libneedle came: their masks get the
	 * adjustments of install_adjusted, and the program reads back what
	 * it gave.  A handler changed by another thread at this moment keeps
	 * the newer one (sigaction is atomic per signal; the window is
	 * between the read and the write). */
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction cur;
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGTRAP || sig == stop)
			continue;
		if (!kernel_action(sig, NULL, &cur) && is_handler(&cur) &&
		    (sigismember(&cur.sa_mask, SIGTRAP) == 1 || sigismember(&cur.sa_mask, stop) != 1))
			install_adjusted(sig, &cur, NULL);
	}
	/* Masks: one /proc read per thread, once.  Afterwards interposition
	 * (the GOT slots interpose_bind_loaded rewrote) sees every change,
	 * so batches read /proc no more than in a process libneedle was
	 * preloaded into; unless the binding failed, or there were more
	 * blockers than the table holds. */
	if (task_list_read(&list))
		return;
	int overflow = 0;
	for (size_t i = 0; i < list.cnt; i++) {
		if (task_blocks_signal(list.tids[i], SIGTRAP) != 1)
			continue;
		int placed = 0;
		for (int j = 0; j < ADOPTED_MAX && !placed; j++) {
			pid_t empty = 0;
			placed = atomic_compare_exchange_strong(&adopted[j], &empty, list.tids[i]);
		}
		if (!placed) {
			overflow = 1;
			continue;
		}
		atomic_fetch_add(&adopted_cnt, 1);
		atomic_fetch_add(&blockers, 1);
	}
	task_list_free(&list);
	if (interposed && !overflow)
		check_always = 0;
}

int sigmask_may_block_sigtrap(void)
{
	return check_always || atomic_load(&blockers) > 0;
}
