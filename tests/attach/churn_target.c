/* churn_target - threads and children that come and go while needle
 * attaches and detaches (tests/attach/test_attach_churn.sh).
 *
 *   churn_target PLAIN BLOCKING SPAWNERS
 *
 * PLAIN threads each create and join, again and again, a thread that
 * calls churn_work; BLOCKING threads do the same with SIGTRAP blocked,
 * so that their threads begin with it blocked; SPAWNERS run /bin/true
 * with posix_spawn again and again.  A new thread begins in the C
 * library with every signal blocked, and so does a spawned child until
 * its exec, in the same memory: code a patch batch rewrites (with
 * --sites=all, the C library's own functions) runs there, where an int3
 * kills the process.
 *
 * Prints "ready" once every thread runs; at the end of its input, stops,
 * joins and prints "errors E" (every check that failed is described on
 * stderr) and exits with 1 if E is not 0.  Nothing else goes to stdout. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
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

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: churn_target PLAIN BLOCKING SPAWNERS\n");
		return 2;
	}
	int plain = atoi(argv[1]), blocking = atoi(argv[2]), spawners = atoi(argv[3]);
	int n = plain + blocking + spawners;
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	char line[64];

	for (int i = 0; i < n; i++) {
		void *(*fn)(void *) = i < plain + blocking ? creator : spawner;
		if (pthread_create(&t[i], NULL, fn, (void *)(long)(i >= plain && i < plain + blocking)))
			return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	atomic_store(&stopping, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("errors %d\n", atomic_load(&errors));
	return atomic_load(&errors) != 0;
}
