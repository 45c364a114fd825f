/* blocker - threads that block every signal, as a runtime's helpers do
 * (jemalloc's background thread, libuv and V8 workers): one spins through
 * blk_work(), one sleeps in short futex and epoll_wait timeouts, checking
 * that each returns exactly what it would untraced (no EINTR: neither
 * thread ever takes a signal).  The main thread waits for "quit" on
 * stdin, then prints the errors seen; a line "mark" makes it call
 * blk_mark() once, so that a trace can be cut at known points. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int quit;
static atomic_long errors, work_calls;

__attribute__((noinline)) long blk_work(long x)
{
	__asm__ volatile("");
	return x * 5 + 2;
}

__attribute__((noinline)) int blk_mark(int n)
{
	__asm__ volatile("");
	return n;
}

/* Threads whose mask is their creator's by now: pthread_create starts a
 * thread with every signal blocked, 32 and 33 included, and gives it
 * its creator's mask before its function runs. */
static _Atomic int started;

static void *spinner(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	for (long i = 0; !atomic_load_explicit(&quit, memory_order_relaxed); i++) {
		if (blk_work(i) != i * 5 + 2)
			atomic_fetch_add(&errors, 1);
		atomic_fetch_add_explicit(&work_calls, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	static int word;
	int ep = epoll_create1(0);
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&quit)) {
		struct timespec t = { 0, 10 * 1000 * 1000 };
		long r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &t, NULL, 0);
		if (r != -1 || errno != ETIMEDOUT) {
			fprintf(stderr, "futex returned %ld errno %s\n", r, strerror(errno));
			atomic_fetch_add(&errors, 1);
		}
		struct epoll_event ev;
		int n = epoll_wait(ep, &ev, 1, 10);
		if (n != 0) {
			fprintf(stderr, "epoll_wait returned %d errno %s\n", n, strerror(errno));
			atomic_fetch_add(&errors, 1);
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	sigset_t all, old;
	char line[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Created with every signal blocked: they keep that mask. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_create(&t[0], NULL, spinner, NULL);
	pthread_create(&t[1], NULL, sleeper, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (atomic_load(&started) < 2)
		usleep(1000);
	printf("ready\n");
	int marks = 0;
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "quit", 4)) {
		if (!strncmp(line, "mark", 4))
			printf("mark %d\n", blk_mark(++marks));
	}
	atomic_store(&quit, 1);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("errors %ld busy %d\n", atomic_load(&errors), atomic_load(&work_calls) > 0);
	return 0;
}
