/* test_stop_lost - a stop signal a tracer takes at its delivery stop and
 * never passes on (another needle record -p borrowing the thread at that
 * moment did this) must not hang the patch batch that sent it: the thread
 * is signalled again, stops, and the batch completes.  The worker blocks
 * SIGTRAP, so that the batch stops threads; a forked tracer seizes it and
 * swallows the first stop signal it sees.  Without the resend, attach
 * never returns (the alarm fails the test). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "needle.h"

__attribute__((noinline)) long busy_fn(long x)
{
	__asm__ volatile("");
	return x + 1;
}

static _Atomic int stop_worker;
static _Atomic pid_t worker_tid;
static _Atomic long calls, wrong, entries;

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	entries++;
	return 0;
}

static void *worker(void *arg)
{
	sigset_t set;
	(void)arg;

	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	worker_tid = (pid_t)syscall(SYS_gettid);
	while (!atomic_load(&stop_worker)) {
		if (busy_fn(calls) != calls + 1)
			wrong++;
		calls++;
	}
	return NULL;
}

/* The tracer: seize tid, swallow the first delivery of sig, pass on any
 * other signal, let go.  Writes 's' once seized, then 'x' once it
 * swallowed one, to fd. */
static void tracer(pid_t tid, int sig, int fd)
{
	int status;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		_exit(2);
	if (write(fd, "s", 1) != 1)
		_exit(2);
	for (;;) {
		if (waitpid(tid, &status, __WALL) != tid)
			_exit(3);
		if (!WIFSTOPPED(status))
			_exit(4);
		int got = WSTOPSIG(status);
		if ((status >> 16) == 0 && got == sig) {
			/* Swallowed: the thread goes on without it. */
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			if (write(fd, "x", 1) != 1)
				_exit(2);
			break;
		}
		ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)((status >> 16) == 0 ? got : 0));
	}
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	while (waitpid(tid, &status, __WALL) == tid && WIFSTOPPED(status) && (status >> 16) != PTRACE_EVENT_STOP)
		ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)WSTOPSIG(status));
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	_exit(0);
}

static void hung(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: the batch never completed: a swallowed stop signal hung it\n";
	if (write(1, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to say */
	}
	_exit(1);
}

int main(void)
{
	pthread_t t;
	struct needle_link *link = NULL;
	const char *pat[] = { "busy_fn" };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = pat, .pattern_cnt = 1, .entry = on_entry,
	};
	int p[2];
	char c;

	pthread_create(&t, NULL, worker, NULL);
	while (!worker_tid || calls < 1000)
		;
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	CHECK_EQ(pipe(p), 0, "(a pipe)");
	pid_t child = fork();
	if (child == 0) {
		close(p[0]);
		tracer(worker_tid, needle_stop_signal(), p[1]);
	}
	close(p[1]);
	CHECK(read(p[0], &c, 1) == 1 && c == 's', "the tracer seized the worker");

	signal(SIGALRM, hung);
	alarm(30);
	CHECK_EQ(needle_attach(&opts, &link), 1, "attach completes though the worker's stop signal was swallowed");
	alarm(0);
	CHECK(read(p[0], &c, 1) == 1 && c == 'x', "the tracer swallowed a stop signal");
	int status = -1;
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the tracer let the worker go (status %d)", status);

	long before = calls;
	while (calls < before + 100000)
		;
	alarm(30);
	CHECK_EQ(needle_link_detach(link), 0, "detach");
	alarm(0);
	needle_link_destroy(link);
	CHECK(entries >= 100000, "the worker's calls were traced (%ld)", (long)entries);
	stop_worker = 1;
	pthread_join(t, NULL);
	CHECK_EQ(wrong, 0, "the worker's calls returned correct results");
	return harness_exit();
}
