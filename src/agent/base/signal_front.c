/* signal_front.c - a signal needle acts on in front of the program's
 * handler (needle record --signal SIG@ACTION).
 *
 * Invariants:
 *  - for a fronted signal the kernel holds front_entry, with the mask and
 *    the SA_ONSTACK, SA_RESTART and SA_NODEFER flags of the program's
 *    handler (its own when the program has none: SA_RESTART, so a
 *    control signal interrupts no system call of the program with EINTR);
 *  - the program's action lives here (slot[published]): what its
 *    sigaction and signal calls set, read back exactly as the kernel
 *    would give it (its mask as 64 bits without SIGKILL and SIGSTOP, the
 *    C library's SA_RESTORER and restorer), and what front_entry runs;
 *  - the program's handler runs between the two callbacks: a trace_on
 *    before it and a trace_off or finish after it, so the handler's own
 *    calls are recorded whichever the action;
 *  - a signal the program ignores or leaves to its default action is
 *    taken by needle (the user sent it to needle): the program does not
 *    die of it, as under uftrace's --signal.
 *
 * Writers (signal_front_add, the sigaction interposer) are serialized by
 * a spin lock taken with every asynchronous signal blocked, so no handler
 * on the same thread can find it held.  The handler never takes it: it
 * reads the slot the writer published last (release/acquire on
 * `published`), and a writer fills the other slot.  A handler that reads
 * while two more writes land in between can see a mixed action: the
 * program changed its handler twice during one delivery, which the
 * kernel does not order either.
 *
 * The signal's name in the views is not recorded: the actions change
 * what is recorded, as uftrace's do. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

#include "agent/base/raw_syscall.h"
#include "agent/base/safe_copy.h"
#include "agent/base/signal_front.h"

#define FRONT_SIGNALS 64
#define KERNEL_SIGSET 8

struct front {
	void (*_Atomic before)(int);
	void (*_Atomic after)(int);
	_Atomic int published; /* which slot holds the program's action */
	struct sigaction slot[2];
	int our_flags;         /* the flags install gave the kernel last */
};

static struct front fronts[FRONT_SIGNALS + 1];
static _Atomic int fronted[FRONT_SIGNALS + 1];
static atomic_flag front_lock = ATOMIC_FLAG_INIT;

static void lock(uint64_t *saved)
{
	uint64_t all = ~0ull;
	raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)saved, KERNEL_SIGSET);
	while (atomic_flag_test_and_set_explicit(&front_lock, memory_order_acquire))
		__builtin_ia32_pause();
}

static void unlock(const uint64_t *saved)
{
	atomic_flag_clear_explicit(&front_lock, memory_order_release);
	raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)saved, 0, KERNEL_SIGSET);
}

static int is_handler(const struct sigaction *a)
{
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

static void front_entry(int sig, siginfo_t *info, void *uc);

/* Under the lock: needle's handler in the kernel, shaped by the
 * program's action p.  Through safe_copy, which keeps its own changes to
 * every handler's mask. */
static int install(int sig, const struct sigaction *p)
{
	struct sigaction ours;

	memset(&ours, 0, sizeof(ours));
	ours.sa_sigaction = front_entry;
	if (is_handler(p)) {
		ours.sa_flags = SA_SIGINFO | (p->sa_flags & (SA_ONSTACK | SA_RESTART | SA_NODEFER));
		ours.sa_mask = p->sa_mask;
	} else {
		ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		sigemptyset(&ours.sa_mask);
	}
	fronts[sig].our_flags = ours.sa_flags;
	return safe_copy_sigaction(sig, &ours, NULL);
}

/* Under the lock: publish act as the program's action, in the form the
 * kernel would give it back. */
static void publish(int sig, const struct sigaction *act)
{
	struct front *f = &fronts[sig];
	int next = !atomic_load_explicit(&f->published, memory_order_relaxed);
	struct sigaction *p = &f->slot[next], back;

	memset(p, 0, sizeof(*p));
	p->sa_sigaction = act->sa_sigaction;
	p->sa_flags = act->sa_flags;
	p->sa_restorer = act->sa_restorer;
	memcpy(&p->sa_mask, &act->sa_mask, KERNEL_SIGSET);
	sigdelset(&p->sa_mask, SIGKILL);
	sigdelset(&p->sa_mask, SIGSTOP);
	/* The C library adds its restorer (a flag and a function) to every
	 * action it gives the kernel, and the program reads it back: what
	 * it added to ours, it would have added to the program's. */
	if (is_handler(act) && !safe_copy_sigaction(sig, NULL, &back)) {
		p->sa_flags |= back.sa_flags & ~f->our_flags;
		if (back.sa_flags & ~f->our_flags)
			p->sa_restorer = back.sa_restorer;
	}
	/* Release: the slot's contents before the index a handler reads. */
	atomic_store_explicit(&f->published, next, memory_order_release);
}

static void front_entry(int sig, siginfo_t *info, void *uc)
{
	struct front *f = &fronts[sig];
	int saved = errno;
	void (*before)(int) = atomic_load_explicit(&f->before, memory_order_relaxed);
	void (*after)(int) = atomic_load_explicit(&f->after, memory_order_relaxed);

	if (before)
		before(sig);
	/* Acquire: pairs with publish's release. */
	struct sigaction p = f->slot[atomic_load_explicit(&f->published, memory_order_acquire)];
	errno = saved;
	if (is_handler(&p)) {
		if (p.sa_flags & SA_RESETHAND) {
			/* The kernel would have reset it on delivery: the
			 * handler only, its flags and mask stay. */
			uint64_t mask;
			struct sigaction dfl = p;
			dfl.sa_handler = SIG_DFL;
			lock(&mask);
			publish(sig, &dfl);
			install(sig, &dfl);
			unlock(&mask);
			errno = saved;
		}
		if (p.sa_flags & SA_SIGINFO)
			p.sa_sigaction(sig, info, uc);
		else
			p.sa_handler(sig);
	}
	saved = errno;
	if (after)
		after(sig);
	errno = saved;
}

int signal_front_add(int sig, void (*before)(int), void (*after)(int))
{
	struct sigaction cur;
	uint64_t mask;
	int err = 0;

	if (sig <= 0 || sig > FRONT_SIGNALS || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV ||
	    sig == SIGBUS || sig == SIGTRAP)
		return -EINVAL;
	struct front *f = &fronts[sig];
	atomic_store_explicit(&f->before, before, memory_order_relaxed);
	atomic_store_explicit(&f->after, after, memory_order_relaxed);
	lock(&mask);
	if (!atomic_load_explicit(&fronted[sig], memory_order_relaxed)) {
		/* The program's action so far (a handler it set before, or one
		 * a running process has when needle attaches). */
		if (safe_copy_sigaction(sig, NULL, &cur) || install(sig, &cur)) {
			err = -errno;
		} else {
			publish(sig, &cur);
			/* Release: the program's action before the interposer
			 * routes its calls here. */
			atomic_store_explicit(&fronted[sig], 1, memory_order_release);
		}
	}
	unlock(&mask);
	return err;
}

void signal_front_remove_all(void)
{
	uint64_t mask;

	lock(&mask);
	for (int sig = 1; sig <= FRONT_SIGNALS; sig++) {
		if (!atomic_load_explicit(&fronted[sig], memory_order_relaxed))
			continue;
		struct front *f = &fronts[sig];
		struct sigaction p = f->slot[atomic_load_explicit(&f->published, memory_order_relaxed)];
		/* The interposer sends the program's calls to safe_copy again
		 * from here on; a signal in flight still finds front_entry,
		 * which runs the program's action without callbacks. */
		atomic_store_explicit(&f->before, NULL, memory_order_relaxed);
		atomic_store_explicit(&f->after, NULL, memory_order_relaxed);
		atomic_store_explicit(&fronted[sig], 0, memory_order_release);
		safe_copy_sigaction(sig, &p, NULL);
	}
	unlock(&mask);
}

int signal_front_owns(int sig)
{
	return sig > 0 && sig <= FRONT_SIGNALS && atomic_load_explicit(&fronted[sig], memory_order_acquire);
}

int signal_front_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct front *f = &fronts[sig];
	struct sigaction a, prev;
	uint64_t mask;
	int r = 0, err = 0;

	/* Read before the lock: a bad pointer faults here, as in the C
	 * library's sigaction. */
	if (act)
		a = *act;
	lock(&mask);
	prev = f->slot[atomic_load_explicit(&f->published, memory_order_relaxed)];
	if (act) {
		if (install(sig, &a)) {
			r = -1;
			err = errno;
		} else {
			publish(sig, &a);
		}
	}
	unlock(&mask);
	if (r) {
		errno = err;
		return -1;
	}
	if (old)
		*old = prev;
	return 0;
}
