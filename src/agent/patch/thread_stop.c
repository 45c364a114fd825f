/* thread_stop.c - see thread_stop.h.
 *
 * The stop signal is SIGRTMAX - 2 unless NEEDLE_STOP_SIGNAL names another.
 * Each stopped thread records itself, then sleeps on a futex until the
 * generation changes.  Threads created while stopping are found by reading
 * /proc/self/task again until it shows nobody new.
 *
 * A stop signal can be lost on its way: a tracer (another needle record
 * -p borrowing the thread at that moment, a debugger) that takes it at
 * its delivery stop and lets the thread go without it.  So each is sent
 * with sigqueue's value naming this process's cookie and the stop round
 * (rt_tgsigqueueinfo), a thread stops once per round (stop_handled, its
 * own), and a thread that has neither stopped nor gone after a while is
 * signalled again: the copy that arrives after it stopped, or after the
 * round ended, is dropped.  A signal without the cookie is the
 * program's, passed to its handler. */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/arch/arch.h"
#include "agent/base/log.h"
#include "agent/base/raw_syscall.h"
#include "agent/base/thread_hold.h"
#include "agent/base/interpose.h"
#include "agent/patch/sleeper_door.h"
#include "agent/sites/site_table.h"
#include "agent/patch/task_list.h"
#include "agent/patch/thread_stop.h"

static int stop_signal;
static struct sigaction program_action;
static _Atomic int stop_active;
static _Atomic uint32_t release_generation;
static _Atomic uint32_t stopped_cnt, left_cnt;
static _Atomic uint32_t stop_round;  /* this stop's number, in its signals' value */
static uint32_t stop_cookie;         /* the high half of that value: ours, not the program's */
static __thread uint32_t stop_handled __attribute__((tls_model("initial-exec"))); /* the round this thread stopped in */
/* The threads stopped this round, by tid (open addressing, 2 slots per
 * thread signalled, at most STOPPED_SET_MAX): for the resend, which
 * signals those not in it.  Never freed, so that no late handler writes
 * freed memory; cleared before a round's first signal.  Full, a thread
 * not found is signalled again, and drops the copy. */
#define STOPPED_SET_MAX (1u << 18)
static _Atomic pid_t stopped_set[STOPPED_SET_MAX];
static size_t stopped_set_cap;

static void stopped_set_add(pid_t tid)
{
	if (!stopped_set_cap)
		return;
	for (size_t i = 0, h = (size_t)tid % stopped_set_cap; i < stopped_set_cap; i++, h = (h + 1) % stopped_set_cap) {
		pid_t none = 0;
		if (atomic_compare_exchange_strong(&stopped_set[h], &none, tid) || none == tid)
			return;
	}
}

static int stopped_set_has(pid_t tid)
{
	if (!stopped_set_cap)
		return 0;
	for (size_t i = 0, h = (size_t)tid % stopped_set_cap; i < stopped_set_cap; i++, h = (h + 1) % stopped_set_cap) {
		pid_t t = atomic_load(&stopped_set[h]);
		if (!t)
			return 0;
		if (t == tid)
			return 1;
	}
	return 0;
}
static struct site *const *fix_sites;
static size_t fix_cnt;

/* Threads signalled while asleep in a system call: the call, and the PC
 * past its system call instruction.  Calls such as nanosleep, poll or
 * epoll_wait end with EINTR when any handler runs, SA_RESTART or not; the
 * stop handler finds its thread here and makes the call again, with the
 * same arguments (the kernel keeps the argument registers across a system
 * call: arch_ucontext_restart_syscall), so the program sees no EINTR
 * (interrupted_call also covers a thread that entered its call just after
 * it was looked at).  A relative timeout then starts over: the call may
 * last longer than asked, never shorter, as under any scheduling delay.
 * Open addressing by tid; written before the signal is sent (tgkill
 * orders it), cleared at resume. */
#define ASLEEP_SLOTS 4096
static struct {
	_Atomic pid_t tid;
	long nr;
	uint64_t pc;
} asleep_calls[ASLEEP_SLOTS];
static int asleep_used;

static void asleep_note(pid_t tid, long nr, uint64_t pc)
{
	for (unsigned i = 0, h = (unsigned)tid % ASLEEP_SLOTS; i < ASLEEP_SLOTS; i++, h = (h + 1) % ASLEEP_SLOTS) {
		if (!atomic_load_explicit(&asleep_calls[h].tid, memory_order_relaxed)) {
			asleep_calls[h].nr = nr;
			asleep_calls[h].pc = pc;
			atomic_store_explicit(&asleep_calls[h].tid, tid, memory_order_release);
			asleep_used = 1;
			return;
		}
	}
	/* Full: that thread's call may end with EINTR. */
}

static void asleep_clear(void)
{
	if (asleep_used)
		memset(asleep_calls, 0, sizeof(asleep_calls));
	asleep_used = 0;
}

/* The call to make again, for a thread whose call our signal ended with
 * EINTR: the one noted when it was seen asleep, or else (it entered the
 * call between that look and the signal) the one the C library's usual
 * wrapper loads just before the system call instruction
 * (arch_syscall_nr_before). */
static long interrupted_call(uint64_t pc)
{
	pid_t tid = (pid_t)raw_syscall4(SYS_gettid, 0, 0, 0, 0);
	for (unsigned i = 0, h = (unsigned)tid % ASLEEP_SLOTS; i < ASLEEP_SLOTS; i++, h = (h + 1) % ASLEEP_SLOTS) {
		pid_t t = atomic_load_explicit(&asleep_calls[h].tid, memory_order_acquire);
		if (!t)
			break;
		if (t == tid) {
			if (asleep_calls[h].pc == pc)
				return asleep_calls[h].nr;
			break;
		}
	}
	return arch_syscall_nr_before(pc);
}

static void restart_interrupted_call(ucontext_t *uc)
{
	uint64_t pc = arch_ucontext_eintr_syscall(uc);

	if (!pc)
		return;
	long nr = interrupted_call(pc);
	if (nr >= 0)
		arch_ucontext_restart_syscall(uc, pc, nr);
}

/* Where a thread stopped at pc continues, out of every site in fix_sites. */
static uint64_t pc_outside_sites(uint64_t pc)
{
	size_t lo = 0, hi = fix_cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (fix_sites[mid]->func.site_addr < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* fix_sites[lo - 1] is the last site starting below pc: inside its
	 * covered bytes, the thread goes where the same instruction runs. */
	return lo ? site_pc_outside(fix_sites[lo - 1], pc) : pc;
}

/* Whether pc is one of the bytes the sites in fix_sites rewrite (their
 * first included): a door there would be overwritten. */
static int pc_in_sites(uint64_t pc)
{
	size_t lo = 0, hi = fix_cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (fix_sites[mid]->func.site_addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	const struct site *s = fix_sites[lo - 1];
	size_t len = s->form == NEEDLE_FORM_RELOCATED ? s->covered : s->load_len > ARCH_SITE_LEN ? s->load_len : ARCH_SITE_LEN;
	return pc < s->func.site_addr + len;
}

static void move_pc_out_of_site(ucontext_t *uc)
{
	arch_ucontext_set_pc(uc, pc_outside_sites(arch_ucontext_pc(uc)));
}

/* Its system calls are raw (raw_syscall.h): a thread may take the stop
 * signal with SIGTRAP blocked, and the C library's wrappers may hold a
 * door (sleeper_door.h), whose int3 would then kill it. */
static void stop_handler(int sig, siginfo_t *info, void *ucv)
{
	int saved_errno = errno;
	uint64_t value = (uint64_t)(uintptr_t)info->si_value.sival_ptr;

	if (info->si_code != SI_QUEUE || info->si_pid != (pid_t)raw_syscall4(SYS_getpid, 0, 0, 0, 0) ||
	    (uint32_t)(value >> 32) != stop_cookie) {
		if (program_action.sa_flags & SA_SIGINFO)
			program_action.sa_sigaction(sig, info, ucv);
		else if (program_action.sa_handler != SIG_IGN && program_action.sa_handler != SIG_DFL)
			program_action.sa_handler(sig);
		errno = saved_errno;
		return;
	}
	/* Ours: of a round that ended, or a second copy of this one (sent
	 * again while this thread was on its way): dropped. */
	uint32_t round = (uint32_t)value;
	if (!atomic_load(&stop_active) || round != atomic_load(&stop_round) || stop_handled == round) {
		errno = saved_errno;
		return;
	}
	stop_handled = round;
	uint32_t gen = atomic_load(&release_generation);
	restart_interrupted_call(ucv);
	move_pc_out_of_site(ucv);
	stopped_set_add((pid_t)raw_syscall4(SYS_gettid, 0, 0, 0, 0));
	atomic_fetch_add(&stopped_cnt, 1);
	/* Pairs with wait_stopped's futex wait: the stopper wakes at the
	 * last stop rather than at its next poll. */
	raw_syscall6(SYS_futex, (long)&stopped_cnt, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
	while (atomic_load(&release_generation) == gen)
		raw_syscall6(SYS_futex, (long)&release_generation, FUTEX_WAIT_PRIVATE, gen, 0, 0, 0);
	atomic_fetch_add(&left_cnt, 1);
	raw_syscall6(SYS_futex, (long)&left_cnt, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0); /* pairs with thread_resume_all's wait */
	errno = saved_errno;
}

static int install(void)
{
	struct sigaction act;

	if (stop_signal)
		return 0;
	const char *env = getenv("NEEDLE_STOP_SIGNAL");
	int sig = env ? atoi(env) : SIGRTMAX - 2;
	if (sig < 1 || sig > SIGRTMAX || sig == SIGTRAP || sig == SIGKILL || sig == SIGSTOP)
		return -EINVAL;
	memset(&act, 0, sizeof(act));
	act.sa_sigaction = stop_handler;
	act.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&act.sa_mask);
	/* Before the handler is in place: it tells ours from a program's
	 * sigqueue by it (never 0). */
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	stop_cookie = (uint32_t)(now.tv_nsec ^ (now.tv_sec << 20) ^ getpid()) | 1u;
	if (sigaction_real(sig, &act, &program_action))
		return -errno;
	stop_signal = sig;
	return 0;
}

/* The stop signal to tid, with this round in its value. */
static int stop_signal_send(pid_t tid)
{
	siginfo_t info;

	memset(&info, 0, sizeof(info));
	info.si_signo = stop_signal;
	info.si_code = SI_QUEUE;
	info.si_pid = getpid();
	info.si_uid = getuid();
	info.si_value.sival_ptr = (void *)(uintptr_t)((uint64_t)stop_cookie << 32 | atomic_load(&stop_round));
	return (int)syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, stop_signal, &info);
}

static int contains(const pid_t *tids, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

/* Wait until every signalled thread is stopped or gone: woken by each
 * stop handler as it counts itself (a poll would add its timer slack,
 * 50 us and more, to every stop window), and every 1 ms to see whether a
 * thread exited with our signal pending.  Every 64 ms one that is there,
 * not blocking the signal and not stopped is signalled again (its signal
 * may have been taken by a tracer). */
static uint64_t stop_clock_ns(void);

static void wait_stopped(const pid_t *sent, size_t n)
{
	uint64_t look_at = stop_clock_ns() + 64 * 1000 * 1000ull;

	for (;;) {
		uint32_t stopped = atomic_load(&stopped_cnt);
		if (stopped >= n)
			return;
		/* By the clock, not by wake-ups: each stop wakes this loop. */
		if (stop_clock_ns() >= look_at) {
			look_at = stop_clock_ns() + 64 * 1000 * 1000ull;
			size_t alive = 0;
			for (size_t i = 0; i < n; i++) {
				int blocks = task_blocks_signal(sent[i], stop_signal);
				alive += blocks >= 0;
				if (blocks == 0 && !stopped_set_has(sent[i]))
					stop_signal_send(sent[i]);
			}
			if (atomic_load(&stopped_cnt) >= alive)
				return;
		}
		struct timespec t = { 0, 1000 * 1000 };
		syscall(SYS_futex, &stopped_cnt, FUTEX_WAIT_PRIVATE, stopped, &t, NULL, 0);
	}
}

/* A thread being created, or exiting, runs with every signal blocked for
 * a moment: look again before concluding it blocks ours (100 ms: on two
 * busy CPUs such a thread may wait that long for its time slice).  Where
 * it can be held from outside (held), one asleep in a system call that
 * has lived longer than that is not looked at again: asleep, it cannot
 * unblock anything, and holding it costs a ptrace stop, not 100 ms of
 * every batch (jemalloc's background thread, in a futex wait with every
 * signal blocked).  A young one may be a thread being created, waiting
 * for its creator (start_thread's lock) with every signal blocked: it is
 * waited for, as before.  So is posix_spawn's parent, asleep in its
 * clone with every signal blocked until the child's exec, and for up to
 * 2 s: held, it would leave that child running in the process's memory.
 * 1: it blocks the signal for good, 2: it is such a parent still. */
static int blocks_for_good(pid_t tid, int held)
{
	uint64_t began = stop_clock_ns();

	for (;;) {
		if (task_blocks_signal(tid, stop_signal) != 1)
			return 0;
		uint64_t args[6], pc, waited = stop_clock_ns() - began;
		long nr = task_syscall_args(tid, args, &pc);
		int spawning = nr >= 0 && task_syscall_shares_memory(nr, args);
		if (held && nr >= 0 && !spawning && task_age_ms(tid) > 200)
			return 1;
		if (waited >= (spawning ? 2000 : 100) * 1000000ull)
			return spawning ? 2 : 1;
		struct timespec t = { 0, 500 * 1000 };
		nanosleep(&t, NULL);
	}
}

int thread_stop_signal(void)
{
	/* Read once, at start-up (sigmask_watch_init): sigaction, which needs
	 * it, may run inside a signal handler. */
	static _Atomic int chosen;
	int sig = atomic_load_explicit(&chosen, memory_order_relaxed);

	if (stop_signal)
		return stop_signal;
	if (!sig) {
		const char *env = getenv("NEEDLE_STOP_SIGNAL");
		sig = env ? atoi(env) : SIGRTMAX - 2;
		atomic_store_explicit(&chosen, sig, memory_order_relaxed);
	}
	return sig;
}

/* Nothing between the first signal and thread_resume_all may allocate,
 * print or take any lock a stopped thread may hold (malloc's, stdio's):
 * the arrays are sized before the first signal, the task list is read
 * with getdents64 into them, and a warning waits for the resume. */
static pid_t *sent_tids;     /* every thread signalled (they wait in the handler) */
static size_t sent_total, sent_cap;
static pid_t *round_tids;    /* one reading of /proc/self/task */
static pid_t blocked_tid;    /* a thread that blocks the stop signal, said after the resume */
static int blocked_spawning; /* ... because it waits for its vfork child (blocks_for_good's 2) */

/* Threads that block the stop signal, to be held from outside
 * (thread_hold.h): listed by stop_wanted, asked for by hold_ask before
 * the others are signalled, waited for by hold_finish once they are
 * stopped, released by thread_resume_all. */
static const struct thread_hold_ops *holder; /* what stop_begin found offered */
static int hold_tids[THREAD_HOLD_MAX];
static uint64_t hold_pcs[THREAD_HOLD_MAX];
/* Each one's CPU time, then the PC it was asleep at (0: not asleep), read
 * in that order when it was listed (hold_pc). */
static uint64_t hold_cpu[THREAD_HOLD_MAX], hold_asleep_pc[THREAD_HOLD_MAX];
static size_t hold_cnt;
static int asked;   /* hold_ask asked, hold_finish not yet waited */
static size_t asked_cnt; /* hold_tids[0..asked_cnt) were asked for */
static int holding; /* hold_finish held them */

/* Times of the current window (CLOCK_MONOTONIC ns; 0: nothing stopped
 * or held yet) and the maxima so far.  Only the patching thread writes
 * them, one batch at a time under the control lock; taken by the
 * session once its recording has stopped. */
static uint64_t window_began_ns, outside_began_ns;
static struct stop_hold_stats hold_stats;

static uint64_t stop_clock_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t); /* the vDSO: no system call */
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void window_begins(void)
{
	if (!window_began_ns)
		window_began_ns = stop_clock_ns();
}

void thread_stop_take_hold_stats(struct stop_hold_stats *st)
{
	*st = hold_stats;
	memset(&hold_stats, 0, sizeof(hold_stats));
}

static int hold_listed(pid_t tid)
{
	for (size_t i = 0; i < hold_cnt; i++)
		if (hold_tids[i] == tid)
			return 1;
	return 0;
}

/* Ask for the threads listed since the last hold (hold_finish waits for
 * them): asked before the other threads are signalled, so that needle
 * record's ptrace work and their stops overlap.  0 or negative errno. */
static int hold_ask(void)
{
	if (!hold_cnt || holding || asked)
		return 0;
	asked_cnt = hold_cnt;
	window_begins();
	outside_began_ns = stop_clock_ns();
	if (holder->hold_begin(hold_tids, hold_cnt)) {
		blocked_tid = hold_tids[0]; /* said as for a thread nobody could hold */
		return -EDEADLK;
	}
	asked = 1;
	return 0;
}

/* The PC of held thread i, which needle record did not read (it was not
 * asked to wait for the stop: shm_hold's no_wait).  Asleep in a system
 * call when it was listed and not run a nanosecond since (its CPU clock,
 * read before that look, unchanged now that it is asked to stop), it is
 * still in the kernel, where the pending stop keeps it until released:
 * its PC is the one it was asleep at, and nothing is waited for.
 * Otherwise its stop is waited for (1 s at most) and its PC read from
 * /proc.  0 or negative errno. */
static int hold_pc(size_t i)
{
	if (hold_pcs[i])
		return 0; /* read by needle record */
	if (hold_asleep_pc[i] && hold_cpu[i] && task_cpu_ns(hold_tids[i]) == hold_cpu[i]) {
		hold_pcs[i] = hold_asleep_pc[i];
		return 0;
	}
	for (int tries = 0; tries < 20000; tries++) {
		uint64_t pc = 0;
		int r = task_stopped_pc(hold_tids[i], &pc);
		if (r == -ESRCH)
			return 0; /* gone: nothing to move */
		if (r == 1) {
			hold_pcs[i] = pc;
			return 0;
		}
		struct timespec t = { 0, 50 * 1000 };
		nanosleep(&t, NULL);
	}
	return -ETIMEDOUT;
}

/* Wait for the hold asked for; their PCs are moved out of the sites at
 * release.  0 or negative errno. */
static int hold_finish(void)
{
	int err = hold_ask();
	if (err || !asked)
		return err;
	asked = 0;
	if (holder->hold_end(hold_pcs, asked_cnt)) {
		blocked_tid = hold_tids[0];
		return -EDEADLK;
	}
	if (asked_cnt < hold_cnt) {
		/* More were listed since the ask (threads created while
		 * stopping): asked again for all, which lets the first ones go
		 * for a moment, before any byte changes. */
		if ((err = hold_ask()))
			return err;
		return hold_finish();
	}
	holding = 1;
	for (size_t i = 0; i < hold_cnt; i++) {
		if (hold_pc(i)) {
			blocked_tid = hold_tids[i]; /* never stopped: said as one nobody could hold */
			return -EDEADLK; /* the caller resumes, which releases them all */
		}
		if (hold_pcs[i])
			hold_pcs[i] = pc_outside_sites(hold_pcs[i]);
	}
	return 0;
}

/* Whether tid is to be signalled (its system call noted first, if it is
 * in one), looked at before any signal goes: these reads of /proc (10-20
 * us each) stay out of the stop window.  A thread that blocks the stop
 * signal for good is listed to be held from outside, if that is offered
 * (a thread being created blocks every signal for a moment: it is waited
 * for, since a hold is lost if needle record dies during the batch), and
 * never the first thread, which needle record does not hold; otherwise
 * it fails the stop (*err). */
static int stop_wanted(pid_t tid, int *err)
{
	int can_hold = holder && !holding && tid != getpid() && hold_cnt < THREAD_HOLD_MAX;
	int blocks = blocks_for_good(tid, can_hold);
	if (blocks) {
		if (can_hold && blocks == 1) {
			if (!hold_listed(tid)) {
				uint64_t pc = 0;
				hold_cpu[hold_cnt] = task_cpu_ns(tid);
				hold_asleep_pc[hold_cnt] = task_syscall_pc(tid, &pc) >= 0 ? pc : 0;
				hold_tids[hold_cnt++] = tid;
			}
			return 0;
		}
		blocked_tid = tid;
		blocked_spawning = blocks == 2;
		*err = -EDEADLK;
		return 0;
	}
	uint64_t pc = 0;
	long nr = task_syscall_pc(tid, &pc);
	if (nr >= 0)
		asleep_note(tid, nr, pc);
	return 1;
}

/* Signal tid and count it in sent; 1 if it was signalled. */
static int stop_send(pid_t tid, int *err)
{
	if (sent_total == sent_cap) {
		*err = -EAGAIN; /* more threads than when it began: try again */
		return 0;
	}
	window_begins();
	if (stop_signal_send(tid) == 0) {
		sent_tids[sent_total++] = tid;
		return 1;
	}
	return 0;
}

/* Signal every thread of tids[0..n) that stop_wanted: all of them looked
 * at first, then all signalled, with the hold asked for in between.  The
 * number signalled. */
static size_t stop_these(pid_t *tids, size_t n, int *err)
{
	size_t wanted = 0, sent = 0;
	for (size_t i = 0; i < n && !*err; i++)
		if (stop_wanted(tids[i], err))
			tids[wanted++] = tids[i];
	if (!*err)
		*err = hold_ask();
	for (size_t i = 0; i < wanted && !*err; i++)
		sent += (size_t)stop_send(tids[i], err);
	return sent;
}

/* The tid arrays, grown here and never shrunk or freed: room for the
 * threads there are, those created while stopping, and extra. */
static size_t tids_room;

int thread_stop_reserve(size_t extra)
{
	long threads = task_count_fast();
	size_t want = (size_t)(threads > 0 ? threads : 64) * 2 + 64 + extra;

	if (want <= tids_room)
		return 0;
	pid_t *s = realloc(sent_tids, want * sizeof(*sent_tids));
	if (!s)
		return -ENOMEM;
	sent_tids = s;
	pid_t *r = realloc(round_tids, want * sizeof(*round_tids));
	if (!r)
		return -ENOMEM;
	round_tids = r;
	tids_room = want;
	return 0;
}

/* may_grow 0: the caller reserved room (thread_stop_reserve) and nothing
 * may be allocated now (thread_stop_list, inside sigmask_watch.c's gate,
 * where a parked thread may hold malloc's lock); a thread beyond the room
 * fails the stop with -EAGAIN. */
static int stop_begin(struct site *const *sites, size_t cnt, size_t extra, int may_grow)
{
	int err = install();

	if (!err && may_grow)
		err = thread_stop_reserve(extra);
	if (err)
		return err;
	if (!tids_room || tids_room < extra)
		return -EAGAIN;
	sent_cap = tids_room;
	stopped_set_cap = sent_cap * 2 < STOPPED_SET_MAX ? sent_cap * 2 : STOPPED_SET_MAX;
	memset((void *)stopped_set, 0, stopped_set_cap * sizeof(*stopped_set));
	fix_sites = sites;
	fix_cnt = cnt;
	sent_total = 0;
	blocked_tid = 0;
	blocked_spawning = 0;
	hold_cnt = 0;
	holding = asked = 0;
	holder = thread_hold_offered();
	atomic_store(&stopped_cnt, 0);
	atomic_store(&left_cnt, 0);
	/* Before stop_active: a handler that sees it active reads this
	 * round (seq_cst, as stop_active's store and load). */
	atomic_fetch_add(&stop_round, 1);
	atomic_store(&stop_active, 1);
	return 0;
}

/* After a failure, before the release: every signalled thread must be in
 * the handler, since one whose signal is still pending would enter after
 * it, read the new generation and wait for the next batch's release (the
 * process hung, seen with 1,000 threads when one blocked the stop
 * signal); and a hold asked for is waited for, its threads let go where
 * they were by the release. */
static void stop_settle(void)
{
	wait_stopped(sent_tids, sent_total);
	if (asked) {
		asked = 0;
		holding = !holder->hold_end(hold_pcs, asked_cnt);
		hold_cnt = asked_cnt;
	}
}

static void stop_failed(void)
{
	stop_settle();
	thread_resume_all();
}

int thread_stop_list(struct site *const *sites, size_t cnt, const struct task_list *tids)
{
	int err = stop_begin(sites, cnt, tids->cnt, 0);

	if (err)
		return err;
	memcpy(round_tids, tids->tids, tids->cnt * sizeof(*round_tids));
	stop_these(round_tids, tids->cnt, &err);
	if (!err) {
		wait_stopped(sent_tids, sent_total);
		err = hold_finish();
	}
	if (err)
		stop_failed();
	return err;
}

/* Whether tid, asleep in a system call, can be left asleep behind a door
 * (sleeper_door.h); *pc is then its door. */
static int sleeps_behind_door(pid_t tid, uint64_t *pc)
{
	uint64_t args[6];
	long nr = task_syscall_args(tid, args, pc);

	return nr >= 0 && door_syscall_allowed(nr, args) && !pc_in_sites(*pc) && door_ready(*pc) &&
	       task_blocks_signal(tid, SIGTRAP) == 0;
}

/* Signal every thread not yet signalled, held or asleep behind a door,
 * reading /proc/self/task again after each round's stops until it shows
 * nobody new.  A thread may be created while the others stop: by a
 * creator that unblocked its signals after the clone and was signalled
 * only then, or by a sleeper that woke before its door closed and ran on
 * until its own stop.  Such a thread begins in the C library
 * (start_thread, with every signal blocked), which may be the very code
 * the batch rewrites: left running, it would meet a half-written site or
 * an int3 it cannot take (SIGTRAP blocked kills the process).  The
 * threads in *skip are left alone; while doors may still be chosen
 * (add, the same list), a new thread asleep at one joins it; once they
 * are closed (add NULL), a new thread is stopped whatever it is doing. */
static int stop_until_nobody_new(struct sleepers *add, const struct sleepers *skip)
{
	int err;

	for (;;) {
		size_t n = 0, rest = 0, fresh;
		if ((err = task_list_read_into(round_tids, sent_cap, &n)))
			return err;
		for (size_t i = 0; i < n && !err; i++) {
			pid_t tid = round_tids[i];
			uint64_t pc;
			if (contains(sent_tids, sent_total, tid) || hold_listed(tid) ||
			    (skip && contains(skip->tids, skip->cnt, tid)))
				continue;
			if (add && sleeps_behind_door(tid, &pc)) {
				if (add->cnt < sent_cap) {
					add->tids[add->cnt] = tid;
					add->pcs[add->cnt++] = pc;
				} else {
					err = -EAGAIN;
				}
				continue;
			}
			round_tids[rest++] = tid;
		}
		fresh = err ? 0 : stop_these(round_tids, rest, &err);
		if (err)
			return err;
		wait_stopped(sent_tids, sent_total);
		if (!fresh)
			return 0;
	}
}

int thread_stop_all(struct site *const *sites, size_t cnt, struct sleepers *asleep)
{
	int err = stop_begin(sites, cnt, 0, 1);

	if (err)
		return err;
	if (asleep) {
		asleep->cnt = 0;
		asleep->tids = malloc(sent_cap * sizeof(*asleep->tids));
		asleep->pcs = malloc(sent_cap * sizeof(*asleep->pcs));
		if (!asleep->tids || !asleep->pcs) {
			thread_resume_all();
			return -ENOMEM;
		}
	}
	err = stop_until_nobody_new(asleep, asleep);
	if (!err)
		err = hold_finish();
	if (err)
		stop_failed();
	return err;
}

int thread_stop_woken(const struct sleepers *asleep)
{
	int err = 0;
	size_t woken = 0;

	for (size_t i = 0; i < asleep->cnt; i++) {
		uint64_t pc = 0;
		/* Asleep at the same door, it has been there since before
		 * the door closed, or came back to it before: either way it
		 * can only leave through it. */
		if (task_syscall_pc(asleep->tids[i], &pc) >= 0 && pc == asleep->pcs[i] &&
		    task_blocks_signal(asleep->tids[i], SIGTRAP) == 0)
			continue;
		round_tids[woken++] = asleep->tids[i];
	}
	if (stop_these(round_tids, woken, &err))
		wait_stopped(sent_tids, sent_total);
	/* A sleeper awake before its door closed may have created threads
	 * (a pthread_join that returned, then a pthread_create: a thread
	 * pool's churn), and may have done so even if it is back asleep at
	 * the same door now. */
	if (!err)
		err = stop_until_nobody_new(NULL, asleep);
	if (!err)
		err = hold_finish(); /* listed now, if none was before: a second hold would release the first */
	if (err)
		stop_settle(); /* the caller's thread_resume_all releases them */
	return err;
}

void sleepers_free(struct sleepers *s)
{
	free(s->tids);
	free(s->pcs);
	s->tids = NULL;
	s->pcs = NULL;
	s->cnt = 0;
}

void thread_resume_all(void)
{
	uint32_t stopped = atomic_load(&stopped_cnt);

	if (holding)
		holder->release(hold_tids, hold_cnt, hold_pcs);
	uint64_t now = stop_clock_ns();
	if (holding && now - outside_began_ns > hold_stats.outside_max_ns)
		hold_stats.outside_max_ns = now - outside_began_ns;
	holding = 0;
	hold_cnt = 0;

	atomic_fetch_add(&release_generation, 1);
	syscall(SYS_futex, &release_generation, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	if (window_began_ns) {
		hold_stats.stops++;
		if (now - window_began_ns > hold_stats.window_max_ns)
			hold_stats.window_max_ns = now - window_began_ns;
		window_began_ns = 0;
	}
	/* fix_sites must outlive every handler still reading it.  Asleep,
	 * not spinning: on a busy machine the threads leaving the handler
	 * wait for a CPU, and a spinning stopper kept one from them (memcached
	 * under load: 80-100 ms of resume). */
	for (uint32_t left; (left = atomic_load(&left_cnt)) < stopped;) {
		struct timespec t = { 0, 1000 * 1000 };
		syscall(SYS_futex, &left_cnt, FUTEX_WAIT_PRIVATE, left, &t, NULL, 0);
	}
	atomic_store(&stop_active, 0);
	asleep_clear();
	sent_total = sent_cap = 0;
	if (blocked_tid && blocked_spawning)
		pr_warn("thread %d has waited 2 s for a child that runs in its memory (vfork, posix_spawn) "
			"with every signal blocked, so it cannot be stopped for patching\n", (int)blocked_tid);
	else if (blocked_tid)
		pr_warn("thread %d blocks signal %d, so it cannot be stopped for patching\n", (int)blocked_tid,
			stop_signal);
	blocked_tid = 0;
}
