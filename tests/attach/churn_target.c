/* churn_target - threads and children that come and go while needle
 * attaches and detaches (tests/attach/test_attach_churn.sh).
 *
 *   churn_target [--plain N] [--blocking N] [--spawners N] [--slow-ms MS]
 *                [--togglers N] [--fill-creators N] [--forkers N]
 *
 * --plain threads each create and join, again and again, a thread that
 * calls churn_work; --blocking threads do the same with SIGTRAP blocked,
 * so that their threads begin with it blocked; --spawners run /bin/true
 * with posix_spawn again and again; with --slow-ms, one more thread, with
 * every signal blocked, vforks a child that sleeps MS before it execs
 * /bin/true, again and again.  --togglers block SIGTRAP, call churn_work,
 * unblock it and call it again, in a loop; --fill-creators block every
 * signal, create a detached thread (which begins with every signal
 * blocked, unblocks them and calls churn_work) and restore their mask,
 * as jemalloc and many servers do; --forkers fork children that block
 * every signal with sigprocmask and exit.  A new thread begins in the C
 * library with every signal blocked, and so does a spawned child until
 * its exec, in the same memory: code a patch batch rewrites (with
 * --sites=all, the C library's own functions) runs there, where an int3
 * kills the process; a mask change or a fork in the middle of a batch
 * must not slip past it, nor hang.
 *
 * A line "timer" on stdin makes a SIGEV_THREAD timer (every 200 us)
 * whose notify function calls churn_work and checks that it sees every
 * signal blocked, as glibc runs it; prints "timer made".
 *
 * Prints "ready" once every thread runs; at the end of its input, stops,
 * joins and prints "errors E" (every check that failed is described on
 * stderr) and exits with 1 if E is not 0.  Nothing else goes to stdout. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static atomic_int stopping, errors;

static void error(const char *what, long got, long want)
{
	fprintf(stderr, "churn_target: %s: %ld, not %ld\n", what, got, want);
	atomic_fetch_add(&errors, 1);
}

__attribute__((noinline)) long churn_work(long i)
{
	__asm__ volatile("" ::: "memory");
	return i * 3 + 1;
}

/* A short-lived thread: its calls, checked; its mask, checked against
 * its creator's. */
static void *short_lived(void *arg)
{
	long blocking = (long)arg, sum = 0;
	sigset_t mask;

	for (long i = 0; i < 200; i++)
		sum += churn_work(i);
	if (sum != 200 * 199 / 2 * 3 + 200)
		error("a short-lived thread's sum", sum, 200 * 199 / 2 * 3 + 200);
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	if (sigismember(&mask, SIGTRAP) != blocking)
		error("a short-lived thread blocks SIGTRAP", sigismember(&mask, SIGTRAP), blocking);
	return arg;
}

static void *creator(void *arg)
{
	long blocking = (long)arg;

	if (blocking) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGTRAP);
		pthread_sigmask(SIG_BLOCK, &s, NULL);
	}
	while (!atomic_load(&stopping)) {
		pthread_t t;
		void *ret;
		int r = pthread_create(&t, NULL, short_lived, arg);
		if (r) {
			error("pthread_create", r, 0);
			break;
		}
		pthread_join(t, &ret);
		if (ret != arg)
			error("a short-lived thread's result", (long)ret, blocking);
	}
	return NULL;
}

static void *spawner(void *arg)
{
	char *argv[] = { "true", NULL };

	while (!atomic_load(&stopping)) {
		pid_t pid;
		int status, r = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ);
		if (r) {
			error("posix_spawn", r, 0);
			break;
		}
		if (waitpid(pid, &status, 0) != pid)
			error("waitpid", -1, pid);
		else if (status != 0)
			error("a spawned child's status", status, 0);
	}
	return arg;
}

/* The parent sleeps in vfork with every signal blocked for as long as
 * its child does: a thread no signal stops, and whose child runs in its
 * memory. */
static void *slow_spawner(void *arg)
{
	long ms = (long)arg;
	char *argv[] = { "true", NULL };
	sigset_t all, old;

	sigfillset(&all);
	while (!atomic_load(&stopping)) {
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pid_t pid = vfork();
		if (pid == 0) {
			struct timespec t = { ms / 1000, ms % 1000 * 1000000 };
			syscall(SYS_nanosleep, &t, NULL);
			execve("/bin/true", argv, environ);
			_exit(127);
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		int status;
		if (pid < 0)
			error("vfork", -1, 0);
		else if (waitpid(pid, &status, 0) != pid)
			error("waitpid", -1, pid);
		else if (status != 0)
			error("a vforked child's status", status, 0);
	}
	return NULL;
}

static void *toggler(void *arg)
{
	sigset_t trap;

	sigemptyset(&trap);
	sigaddset(&trap, SIGTRAP);
	while (!atomic_load(&stopping)) {
		long sum = 0;
		pthread_sigmask(SIG_BLOCK, &trap, NULL);
		for (long i = 0; i < 10; i++)
			sum += churn_work(i);
		pthread_sigmask(SIG_UNBLOCK, &trap, NULL);
		for (long i = 0; i < 10; i++)
			sum += churn_work(i);
		if (sum != 2 * (10 * 9 / 2 * 3 + 10))
			error("a toggler's sum", sum, 2 * (10 * 9 / 2 * 3 + 10));
	}
	return arg;
}

static atomic_long fill_done;

static void *fill_child(void *arg)
{
	sigset_t none;
	long sum = 0;

	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	for (long i = 0; i < 50; i++)
		sum += churn_work(i);
	if (sum != 50 * 49 / 2 * 3 + 50)
		error("a detached thread's sum", sum, 50 * 49 / 2 * 3 + 50);
	atomic_fetch_add(&fill_done, 1);
	return arg;
}

static void *fill_creator(void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	long made = 0;

	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (!atomic_load(&stopping)) {
		pthread_t t;
		pthread_sigmask(SIG_SETMASK, &all, &old);
		int r = pthread_create(&t, &attr, fill_child, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (r) {
			error("pthread_create (detached)", r, 0);
			break;
		}
		/* Not too far ahead of them. */
		while (++made - atomic_load(&fill_done) > 8 && !atomic_load(&stopping))
			usleep(100);
	}
	return arg;
}

static void *forker(void *arg)
{
	while (!atomic_load(&stopping)) {
		pid_t pid = fork();
		if (pid == 0) {
			sigset_t all;
			sigfillset(&all);
			sigprocmask(SIG_SETMASK, &all, NULL);
			_exit(0);
		}
		if (pid < 0) {
			error("fork", -1, 0);
			break;
		}
		/* Waited for 5 s at most, by polling: a child that hangs is
		 * said, and killed. */
		int status = -1;
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (t = t0; t.tv_sec - t0.tv_sec < 5; clock_gettime(CLOCK_MONOTONIC, &t)) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				break;
			sched_yield();
		}
		if (status == -1) {
			error("a forked child hung, pid", pid, 0);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		} else if (status != 0) {
			error("a forked child's status", status, 0);
		}
	}
	return arg;
}

static atomic_long timer_calls;

static void timer_notify(union sigval v)
{
	sigset_t m;
	long sum = 0;

	pthread_sigmask(SIG_BLOCK, NULL, &m);
	if (sigismember(&m, SIGTRAP) != 1 || sigismember(&m, SIGUSR1) != 1 || sigismember(&m, SIGRTMAX - 2) != 1)
		error("a timer's notify function sees SIGTRAP, SIGUSR1 or SIGRTMAX-2 unblocked", 1, 0);
	for (long i = 0; i < 10; i++)
		sum += churn_work(i);
	/* Every signal blocked around some work, and the mask put back: a
	 * library's usual way. */
	sigset_t all, saved;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	for (long i = 10; i < 15; i++)
		sum += churn_work(i);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (sigismember(&saved, SIGTRAP) != 1 || sigismember(&saved, SIGRTMAX - 2) != 1)
		error("a timer's notify function saved a mask without SIGTRAP or SIGRTMAX-2", 1, 0);
	for (long i = 15; i < 20; i++)
		sum += churn_work(i);
	if (sum != 20 * 19 / 2 * 3 + 20)
		error("a timer's sum", sum, 20 * 19 / 2 * 3 + 20);
	atomic_fetch_add(&timer_calls, v.sival_int);
}

static void make_timer(void)
{
	struct sigevent ev = { 0 };
	struct itimerspec every = { { 0, 200000 }, { 0, 200000 } };
	timer_t t;

	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = timer_notify;
	ev.sigev_value.sival_int = 1;
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) || timer_settime(t, 0, &every, NULL))
		error("timer_create", -1, 0);
	printf("timer made\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "--plain", "--blocking", "--spawners", "--slow-ms",
					     "--togglers", "--fill-creators", "--forkers" };
	void *(*const roles[])(void *) = { creator, creator, spawner, slow_spawner, toggler, fill_creator, forker };
	long count[7] = { 0 };
	int n = 0;

	for (int a = 1; a < argc; a += 2) {
		int k = 0;
		while (k < 7 && strcmp(argv[a], names[k]))
			k++;
		if (k == 7 || a + 1 >= argc) {
			fprintf(stderr, "usage: churn_target [--plain N] [--blocking N] [--spawners N] [--slow-ms MS] "
					"[--togglers N] [--fill-creators N] [--forkers N]\n");
			return 2;
		}
		count[k] = atol(argv[a + 1]);
	}
	pthread_t t[256];
	char line[64];
	for (int k = 0; k < 7; k++) {
		/* --slow-ms is one thread; the argument of the others is their
		 * count; a creator's argument says whether it blocks SIGTRAP,
		 * the slow spawner's is its child's sleep. */
		long threads = k == 3 ? count[k] > 0 : count[k];
		for (long i = 0; i < threads && n < 256; i++)
			if (pthread_create(&t[n++], NULL, roles[k], (void *)(k == 3 ? count[k] : k == 1)))
				return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		if (!strcmp(line, "timer\n"))
			make_timer();
	atomic_store(&stopping, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("errors %d\n", atomic_load(&errors));
	return atomic_load(&errors) != 0;
}
