/* hold.c - needle record's side of holding threads from outside
 * (struct shm_hold, common/shm_layout.h): a thread that serves the
 * agent's requests to stop, with ptrace, the threads of the recorded
 * process that block every signal, for the length of a patch batch.
 *
 * Invariants:
 *  - One thread does every ptrace call on a held thread (ptrace's tracer
 *    is a thread), from PTRACE_SEIZE to PTRACE_DETACH.
 *  - Only threads of the recorded process, never its first thread (whose
 *    stops a waitpid of the program in this process could take), are
 *    held.
 *  - A held thread goes back with the registers it was stopped with,
 *    but for the PC the agent gave (out of the bytes being rewritten) and
 *    a system call the stop ended with EINTR, which is made again (the
 *    list of such calls is inject.c's); a signal that came for it while
 *    held is delivered at release, and its EINTR is the program's.
 *  - The newest request is served: a hold the agent gave up on is
 *    released by the release request that follows it.  When this thread
 *    ends (the recording ends), it releases whatever it holds. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/inject/inject.h"
#include "cli/record/hold.h"
#include "common/shm_layout.h"

struct held {
	pid_t tid;
	siginfo_t sig[32]; /* signals that came while held, delivered at release with their siginfo */
	int sig_cnt;
	int group_stop;   /* its stop was a group stop's, not the interrupt's */
	int stopped;    /* hold_wait saw it stop: it may be let go */
	struct user_regs_struct regs;
};

/* Whether tid is a thread of the process pid: a signal 0 goes to a
 * thread only within its own thread group (ESRCH otherwise, or if it is
 * gone), and costs one system call, not a read of /proc inside the
 * agent's stop window. */
static int thread_of(pid_t pid, pid_t tid)
{
	return syscall(SYS_tgkill, (int)pid, (int)tid, 0) == 0 || errno == EPERM;
}

/* Wait for tid's next stop, up to 1 s (polled: this thread cannot take
 * a timer signal of its own). */
static int wait_stop(pid_t tid, int *status)
{
	return inject_poll_stop(tid, status, 1000000000ull);
}

/* Seize tid and ask it to stop (hold_wait waits for it): every thread of
 * a request is asked first, so that their stops overlap. */
static int hold_interrupt(struct held *h, pid_t tid)
{
	int e;

	memset(h, 0, sizeof(*h));
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return -errno;
	h->tid = tid;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
		e = -errno;
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		h->tid = 0;
		return e;
	}
	return 0;
}

static int hold_wait(struct held *h)
{
	int status, e;

	for (;;) {
		if ((e = wait_stop(h->tid, &status))) {
			ptrace(PTRACE_DETACH, h->tid, NULL, NULL);
			h->tid = 0;
			return e;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			h->tid = 0;
			return -ESRCH;
		}
		if ((status >> 16) == PTRACE_EVENT_STOP) {
			h->group_stop = WSTOPSIG(status) != SIGTRAP;
			break;
		}
		/* A signal on its way stops the thread first: held, with its
		 * siginfo (one that does not queue, once). */
		int sig = WSTOPSIG(status), dup = 0;
		for (int i = 0; sig < SIGRTMIN && i < h->sig_cnt; i++)
			dup |= h->sig[i].si_signo == sig;
		if (!dup && h->sig_cnt == 32) {
			ptrace(PTRACE_CONT, h->tid, NULL, (void *)(uintptr_t)sig); /* full: let through, never dropped */
			continue;
		}
		if (!dup) {
			siginfo_t *si = &h->sig[h->sig_cnt++];
			if (ptrace(PTRACE_GETSIGINFO, h->tid, NULL, si)) {
				memset(si, 0, sizeof(*si));
				si->si_signo = sig;
				si->si_code = SI_TKILL;
			}
		}
		ptrace(PTRACE_CONT, h->tid, NULL, NULL);
	}
	if (ptrace(PTRACE_GETREGS, h->tid, NULL, &h->regs)) {
		e = -errno;
		ptrace(PTRACE_DETACH, h->tid, NULL, NULL);
		h->tid = 0;
		return e;
	}
	h->stopped = 1;
	return 0;
}

static void release_one(pid_t pid, struct held *h, uint64_t pc)
{
	if (!h->tid || (!h->stopped && hold_wait(h)))
		return; /* gone, or never stopped: hold_wait let it go */
	struct user_regs_struct back = h->regs;

	if (pc)
		back.rip = pc;
	/* At a ptrace stop, orig_rax >= 0 is the system call the thread was
	 * in; -EINTR in rax means the stop ended it. */
	if ((long long)back.orig_rax >= 0 && (long long)back.rax == -EINTR && !h->sig_cnt &&
	    inject_syscall_redoable((long)back.orig_rax)) {
		back.rax = back.orig_rax;
		back.rip -= 2; /* the syscall instruction */
		back.orig_rax = (unsigned long long)-1;
	}
	if (memcmp(&back, &h->regs, sizeof(back)))
		ptrace(PTRACE_SETREGS, h->tid, NULL, &back);
	inject_detach_delivering(pid, h->tid, h->sig, h->sig_cnt, h->group_stop);
	h->tid = 0;
}

static void *serve(void *arg)
{
	struct record_hold *rh = arg;
	struct shm_hold *hd = &rh->shm->hold;
	struct held held[SHM_HOLD_MAX];
	size_t held_cnt = 0;
	uint32_t seen = atomic_load(&hd->done);

	memset(held, 0, sizeof(held));
	atomic_store(&hd->served_by, (uint32_t)syscall(SYS_gettid)); /* record_hold_start waits for it */
	/* Each hold lasts a patch batch of the agent's, with its other
	 * threads stopped: this thread's sleeps between polls get no timer
	 * slack, and it runs as soon as it is woken where it may be given a
	 * real-time policy (root, or RLIMIT_RTPRIO; otherwise it stays as
	 * it was). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	struct sched_param fifo = { .sched_priority = 1 };
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo);
	pid_t held_pid = 0; /* the process of the threads held */
	while (!atomic_load(&rh->quit)) {
		uint32_t req = atomic_load_explicit(&hd->req, memory_order_acquire); /* pairs with the agent's release */
		if (req == seen) {
			struct timespec t = { 0, 50 * 1000 * 1000 };
			syscall(SYS_futex, &hd->req, FUTEX_WAIT, req, &t, NULL, 0);
			continue;
		}
		for (size_t i = 0; i < held_cnt; i++) /* a release, or a new hold: the last one goes */
			release_one(held_pid, &held[i], (req & 1) ? 0 : hd->pcs[i]);
		held_cnt = 0;
		if (req & 1) {
			int status = 0;
			uint32_t n = hd->cnt < SHM_HOLD_MAX ? hd->cnt : SHM_HOLD_MAX;
			/* Read once a request: record_hold_retarget may change it
			 * between two. */
			held_pid = atomic_load(&rh->pid);
			if (hd->pid != held_pid)
				status = -EPERM;
			for (uint32_t i = 0; i < n && !status; i++) {
				pid_t tid = hd->tids[i];
				if (tid == held_pid) {
					status = -EPERM;
					break;
				}
				if (!thread_of(held_pid, tid)) {
					/* Gone since the agent looked (or never one of
					 * its threads): nothing to hold. */
					hd->pcs[i] = 0;
					held[held_cnt++].tid = 0;
					continue;
				}
				int e = hold_interrupt(&held[held_cnt], tid);
				if (e == -ESRCH) {
					hd->pcs[i] = 0; /* gone: nothing to hold */
					held[held_cnt++].tid = 0;
					continue;
				}
				if (e) {
					status = e;
					break;
				}
				held_cnt++;
			}
			/* Asked not to wait: each stops on its own, and is
			 * waited for at its release. */
			for (size_t i = 0; i < held_cnt && !status && !hd->no_wait; i++) {
				if (!held[i].tid)
					continue;
				int e = hold_wait(&held[i]);
				if (e == -ESRCH) {
					hd->pcs[i] = 0;
					continue;
				}
				if (e)
					status = e;
				else
					hd->pcs[i] = held[i].regs.rip;
			}
			if (status) {
				/* One asked to stop is let go once stopped (a
				 * detach needs a stopped tracee): release_one waits. */
				for (size_t i = 0; i < held_cnt; i++)
					release_one(held_pid, &held[i], 0);
				held_cnt = 0;
			}
			hd->status = status;
		}
		seen = req;
		atomic_store_explicit(&hd->done, req, memory_order_release); /* pairs with the agent's acquire */
		syscall(SYS_futex, &hd->done, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	for (size_t i = 0; i < held_cnt; i++)
		release_one(held_pid, &held[i], 0);
	atomic_store(&hd->served_by, 0);
	return NULL;
}

int record_hold_start(struct record_hold *rh, struct shm_header *shm, pid_t pid)
{
	sigset_t all, old;

	memset(rh, 0, sizeof(*rh));
	rh->shm = shm;
	atomic_store(&rh->pid, pid);
	/* The thread takes none of needle record's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&rh->thread, NULL, serve, rh);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	rh->started = !err;
	/* Serving before the agent can ask: it takes a hold service that is
	 * not there for one that will never be, and fails its batch. */
	for (int i = 0; !err && i < 100000 && !atomic_load(&shm->hold.served_by); i++) {
		struct timespec t = { 0, 10 * 1000 };
		nanosleep(&t, NULL);
	}
	return -err;
}

void record_hold_retarget(struct record_hold *rh, pid_t pid)
{
	atomic_store(&rh->pid, pid);
}

void record_hold_stop(struct record_hold *rh)
{
	if (!rh->started)
		return;
	atomic_store(&rh->quit, 1);
	syscall(SYS_futex, &rh->shm->hold.req, FUTEX_WAKE, 1, NULL, NULL, 0);
	pthread_join(rh->thread, NULL);
	rh->started = 0;
}
