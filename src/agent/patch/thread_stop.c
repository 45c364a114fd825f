/* thread_stop.c - see thread_stop.h.
 *
 * The stop signal is SIGRTMAX - 2 unless NEEDLE_STOP_SIGNAL names another.
 * Each stopped thread records itself, then sleeps on a futex until the
 * generation changes.  Threads created while stopping are found by reading
 * /proc/self/task again until it shows nobody new. */
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

#include "agent/base/log.h"
#include "agent/patch/sigmask_watch.h"
#include "agent/sites/site_table.h"
#include "agent/patch/task_list.h"
#include "agent/patch/thread_stop.h"

static int stop_signal;
static struct sigaction program_action;
static _Atomic int stop_active;
static _Atomic uint32_t release_generation;
static _Atomic uint32_t stopped_cnt, left_cnt;
static struct site *const *fix_sites;
static size_t fix_cnt;

static void move_pc_out_of_site(greg_t *gregs)
{
	uint64_t pc = (uint64_t)gregs[REG_RIP];
	size_t lo = 0, hi = fix_cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (fix_sites[mid]->func.site_addr < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* fix_sites[lo - 1] is the last site starting below pc. */
	if (lo && pc < fix_sites[lo - 1]->func.site_addr + 5)
		gregs[REG_RIP] = (greg_t)(fix_sites[lo - 1]->func.site_addr + 5);
}

static void stop_handler(int sig, siginfo_t *info, void *ucv)
{
	int saved_errno = errno;

	if (!atomic_load(&stop_active) || info->si_pid != getpid()) {
		if (program_action.sa_flags & SA_SIGINFO)
			program_action.sa_sigaction(sig, info, ucv);
		else if (program_action.sa_handler != SIG_IGN && program_action.sa_handler != SIG_DFL)
			program_action.sa_handler(sig);
		errno = saved_errno;
		return;
	}
	uint32_t gen = atomic_load(&release_generation);
	move_pc_out_of_site(((ucontext_t *)ucv)->uc_mcontext.gregs);
	atomic_fetch_add(&stopped_cnt, 1);
	while (atomic_load(&release_generation) == gen)
		syscall(SYS_futex, &release_generation, FUTEX_WAIT_PRIVATE, gen, NULL, NULL, 0);
	atomic_fetch_add(&left_cnt, 1);
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
	if (sigaction_real(sig, &act, &program_action))
		return -errno;
	stop_signal = sig;
	return 0;
}

static int contains(const pid_t *tids, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

/* Wait until every signalled thread is stopped or gone. */
static void wait_stopped(const pid_t *sent, size_t n)
{
	for (unsigned round = 0;; round++) {
		uint32_t stopped = atomic_load(&stopped_cnt);
		if (stopped >= n)
			return;
		if (round % 1000 == 999) {
			/* A thread may have exited with our signal pending. */
			size_t alive = 0;
			for (size_t i = 0; i < n; i++)
				alive += task_blocks_signal(sent[i], stop_signal) >= 0;
			if (stopped >= alive)
				return;
		}
		struct timespec t = { 0, 20 * 1000 };
		nanosleep(&t, NULL);
	}
}

/* A thread being created runs with every signal blocked for a moment:
 * look again for a few milliseconds before concluding it blocks ours. */
static int blocks_for_good(pid_t tid)
{
	for (int tries = 0; tries < 20; tries++) {
		if (task_blocks_signal(tid, stop_signal) != 1)
			return 0;
		struct timespec t = { 0, 500 * 1000 };
		nanosleep(&t, NULL);
	}
	return 1;
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

int thread_stop_all(struct site *const *sites, size_t cnt)
{
	pid_t *sent = NULL;
	size_t sent_cnt = 0;
	int err = install();

	if (err)
		return err;
	fix_sites = sites;
	fix_cnt = cnt;
	atomic_store(&stopped_cnt, 0);
	atomic_store(&left_cnt, 0);
	atomic_store(&stop_active, 1);
	for (;;) {
		struct task_list list;
		size_t fresh = 0;
		if ((err = task_list_read(&list)))
			break;
		pid_t *grown = realloc(sent, (sent_cnt + list.cnt + 1) * sizeof(*sent));
		if (!grown) {
			task_list_free(&list);
			err = -ENOMEM;
			break;
		}
		sent = grown;
		for (size_t i = 0; i < list.cnt; i++) {
			pid_t tid = list.tids[i];
			if (contains(sent, sent_cnt, tid))
				continue;
			if (blocks_for_good(tid)) {
				pr_warn("thread %d blocks signal %d, so it cannot be stopped for patching\n",
					(int)tid, stop_signal);
				err = -EDEADLK;
				break;
			}
			if (syscall(SYS_tgkill, getpid(), tid, stop_signal) == 0)
				sent[sent_cnt + fresh++] = tid;
		}
		task_list_free(&list);
		if (err)
			break;
		sent_cnt += fresh;
		wait_stopped(sent, sent_cnt);
		if (!fresh)
			break;
	}
	free(sent);
	if (err)
		thread_resume_all();
	return err;
}

void thread_resume_all(void)
{
	uint32_t stopped = atomic_load(&stopped_cnt);

	atomic_fetch_add(&release_generation, 1);
	syscall(SYS_futex, &release_generation, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	/* fix_sites must outlive every handler still reading it. */
	while (atomic_load(&left_cnt) < stopped)
		sched_yield();
	atomic_store(&stop_active, 0);
}
