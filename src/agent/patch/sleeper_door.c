/* sleeper_door.c - see sleeper_door.h.
 *
 * Why a closed door is enough.  A thread the kernel shows asleep in a
 * system call (/proc/self/task/TID/syscall: "NR ARGS SP PC") is in the
 * kernel; the only user code it can run before the batch ends is (a) the
 * instruction at PC, when the call returns, and (b) a handler of a signal
 * delivered to it meanwhile, after which it comes back to PC.  The door
 * traps (a), so what it would have run is run after the batch; (b) runs
 * through the batch's int3 on each site, which the SIGTRAP handler
 * resolves, and this is why door_allowed asks that no handler block
 * SIGTRAP (sigmask_watch.c already takes it out of every mask the program
 * sets through the C library).  The thread's own mask at PC is its mask
 * while asleep, except for the calls that swap masks, which get no door
 * (door_syscall_allowed): one that blocks SIGTRAP on the way back
 * would be killed by the int3.
 *
 * The copy.  A parked thread continues in a detour holding the door's
 * instruction re-encoded for its new place (relocate.c, the rules of a
 * relocated entry) and a jmp back past it: the original byte need not be
 * back first, and the patcher, which may make a system call through the
 * very wrapper a door sits in, goes through it at once.
 *
 * The wait is a futex on door_seq, odd while doors are closed, made with
 * the syscall instruction here (raw_syscall.h): the C library's syscall()
 * may itself hold a door. */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>

#include "agent/arch/arch.h"
#include "agent/base/raw_syscall.h"
#include "agent/patch/core_sync.h"
#include "agent/patch/sleeper_door.h"
#include "agent/patch/task_list.h"
#include "agent/patch/thread_stop.h"
#include "agent/sites/module.h"

#define DOOR_MAX 64
#define DOOR_INSN_MAX 15

struct door {
	_Atomic uint64_t pc;         /* 0 once retired */
	uint64_t body;               /* the instruction's copy, then jmp pc + len */
	uint8_t insn[DOOR_INSN_MAX]; /* the instruction, as copied */
	uint8_t len;
	uint8_t saved;               /* the byte under the int3 while closed */
	uint8_t closed;
	uint8_t armed;               /* prepared for this batch: its page is writable */
};

static struct door doors[DOOR_MAX];
static _Atomic size_t door_cnt;  /* entries published (release; the trap handler acquires) */
static _Atomic uint32_t door_seq; /* odd while doors are closed */
static _Atomic long door_patcher; /* tid that passes through while closed */
static _Atomic long door_pid;     /* the process that closed them */
static int doors_closed;          /* door_close_all ran, door_open_all not yet */

static struct door *door_find(uint64_t pc)
{
	size_t n = atomic_load_explicit(&door_cnt, memory_order_acquire);
	for (size_t i = 0; i < n; i++)
		if (atomic_load_explicit(&doors[i].pc, memory_order_relaxed) == pc)
			return &doors[i];
	return NULL;
}

/* The instruction at the door is still the one its detour copies (doors
 * are open whenever this is asked). */
static int same_insn(const struct door *d)
{
	return !memcmp((const void *)(uintptr_t)atomic_load_explicit(&d->pc, memory_order_relaxed), d->insn, d->len);
}

int door_syscall_allowed(long nr, const uint64_t args[6])
{
	if (task_syscall_shares_memory(nr, args))
		return 0;
	switch (nr) {
	case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait:
		return 0;
	case SYS_ppoll:
		return !args[3];
	case SYS_pselect6:
		return !args[5];
	case SYS_epoll_pwait:
	case SYS_epoll_pwait2:
		return !args[4];
	case SYS_io_pgetevents:
		return !args[5];
	default:
		return 1;
	}
}

int door_ready(uint64_t pc)
{
	struct door *d = door_find(pc);
	return d && d->armed && same_insn(d);
}

int door_prepare(uint64_t pc)
{
	struct door *d = door_find(pc);
	const struct module_span *span = module_exec_span(pc);
	struct reloc_plan plan;
	struct stub_span code;
	uint8_t out[RELOC_DETOUR_SIZE], off[RELOC_MAX_INSNS];
	int err;

	if (d && same_insn(d)) {
		d->armed = 1;
		return 0;
	}
	if (d) /* the code changed under it (another object at that address) */
		atomic_store_explicit(&d->pc, 0, memory_order_relaxed);
	if (!span || pc >= span->hi)
		return -EFAULT;
	if (*(const volatile uint8_t *)(uintptr_t)pc == ARCH_BREAKPOINT)
		return -EINVAL; /* a breakpoint someone else put there */
	size_t n = atomic_load_explicit(&door_cnt, memory_order_relaxed);
	if (n == DOOR_MAX)
		return -ENOSPC;
	if (reloc_plan_one(pc, span->hi, &plan) != RELOC_OK || plan.covered > DOOR_INSN_MAX)
		return -EINVAL;
	if ((err = stub_area_code(RELOC_DETOUR_SIZE, pc, pc + plan.covered, &code)))
		return err;
	/* The detour's head (its call to a stub) is never run: a parked
	 * thread enters at its body.  It is pointed at the body itself so
	 * that nothing needs a stub. */
	uint64_t at = (uint64_t)(uintptr_t)code.at;
	if (reloc_emit(&plan, at, at + RELOC_DETOUR_BODY, 0, out, off) != RELOC_OK) {
		stub_area_release(&code);
		return -EINVAL;
	}
	memcpy(code.at, out, sizeof(out));
	if ((err = stub_area_seal(&code)))
		return err;
	d = &doors[n];
	d->body = at + RELOC_DETOUR_BODY;
	d->len = plan.covered;
	memcpy(d->insn, (const void *)(uintptr_t)pc, plan.covered);
	d->closed = 0;
	d->armed = 1;
	atomic_store_explicit(&d->pc, pc, memory_order_relaxed);
	/* Pairs with door_find's acquire: a handler that sees the count sees
	 * the entry whole. */
	atomic_store_explicit(&door_cnt, n + 1, memory_order_release);
	return 0;
}

int door_allowed(void)
{
	uint64_t mine = 0;
	int stop = thread_stop_signal();

	if (raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&mine, 8) || (mine >> (SIGTRAP - 1)) & 1)
		return 0;
	for (int sig = 1; sig <= 64; sig++) {
		/* The kernel's struct sigaction: handler, flags, restorer, mask. */
		struct {
			uint64_t handler, flags, restorer, mask;
		} act;
		/* SIGSEGV and SIGBUS: safe_copy.c's own handler, which blocks
		 * everything, runs for a fault, not for a signal sent; a fault
		 * arises in a parked thread's place only inside a handler of
		 * the program's that faults during the batch. */
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGTRAP || sig == stop || sig == SIGSEGV ||
		    sig == SIGBUS)
			continue;
		if (raw_syscall4(SYS_rt_sigaction, sig, 0, (long)&act, 8))
			continue;
		if (act.handler > 1 && (act.mask >> (SIGTRAP - 1)) & 1)
			return 0;
	}
	return 1;
}

void door_close_all(const uint64_t *pcs, size_t n)
{
	atomic_store_explicit(&door_patcher, raw_syscall4(SYS_gettid, 0, 0, 0, 0), memory_order_relaxed);
	atomic_store_explicit(&door_pid, raw_syscall4(SYS_getpid, 0, 0, 0, 0), memory_order_relaxed);
	/* Odd before any int3: a thread that traps at one sees it closed
	 * (x86-TSO keeps the two stores in order; the fence keeps the
	 * compiler from moving them). */
	atomic_fetch_add_explicit(&door_seq, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	doors_closed = 1;
	for (size_t i = 0; i < n; i++) {
		struct door *d = door_find(pcs[i]);
		if (!d || !d->armed || d->closed)
			continue;
		volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)pcs[i];
		d->saved = *p;
		d->closed = 1;
		*p = ARCH_BREAKPOINT;
	}
}

void door_open_all(void)
{
	size_t n = atomic_load_explicit(&door_cnt, memory_order_relaxed);

	if (doors_closed) {
		for (size_t i = 0; i < n; i++) {
			struct door *d = &doors[i];
			if (!d->closed)
				continue;
			*(volatile uint8_t *)(uintptr_t)atomic_load_explicit(&d->pc, memory_order_relaxed) = d->saved;
			d->closed = 0;
		}
		core_sync(); /* no CPU runs a door's int3 after this */
		/* Even: the parked threads' waits end (pairs with door_trap's
		 * acquire load). */
		atomic_fetch_add_explicit(&door_seq, 1, memory_order_release);
		raw_syscall6(SYS_futex, (long)&door_seq, FUTEX_WAKE_PRIVATE, INT32_MAX, 0, 0, 0);
		atomic_store_explicit(&door_patcher, 0, memory_order_relaxed);
		doors_closed = 0;
	}
	for (size_t i = 0; i < n; i++)
		doors[i].armed = 0;
}

int door_trap(ucontext_t *uc)
{
	uint64_t at = arch_ucontext_breakpoint(uc);
	struct door *d = door_find(at);

	if (!d)
		return 0;
	long tid = raw_syscall4(SYS_gettid, 0, 0, 0, 0);
	/* A child forked while the doors were closed (by a handler of the
	 * program's run in a sleeper's place) keeps the int3s in its copy of
	 * the code and nobody to open them: it goes through at once, each
	 * time.  (A vfork child, sharing the code, does the same: it runs
	 * nothing of the batch's.) */
	int other_process = raw_syscall4(SYS_getpid, 0, 0, 0, 0) != atomic_load_explicit(&door_pid, memory_order_relaxed);
	if (!other_process && tid != atomic_load_explicit(&door_patcher, memory_order_relaxed)) {
		for (;;) {
			uint32_t seq = atomic_load_explicit(&door_seq, memory_order_acquire);
			if (!(seq & 1))
				break;
			/* A signal may end the wait early: look again. */
			raw_syscall6(SYS_futex, (long)&door_seq, FUTEX_WAIT_PRIVATE, seq, 0, 0, 0);
		}
	}
	arch_ucontext_set_pc(uc, d->body);
	return 1;
}
