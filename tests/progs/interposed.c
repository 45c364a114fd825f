/* interposed.c - calls to the functions libneedle interposes (signal,
 * sigaction, sigprocmask, pthread_sigmask, pthread_create, backtrace),
 * each of which must be a line of the graph like any library call
 * (tests/record/test_interposed.sh).  Prints what it did, so that the
 * output with and without tracing can be compared. */
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define THREADS 3

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	got += sig == SIGUSR1;
}

NOINLINE static int work(int n)
{
	return n * 2 + (int)(getpid() & 0);
}

static void *worker(void *arg)
{
	return (void *)(long)work((int)(long)arg);
}

NOINLINE static int frames(void)
{
	void *pcs[16];
	return backtrace(pcs, 16) > 1;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t set;
	pthread_t t[THREADS];
	long sum = 0;

	signal(SIGUSR2, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	raise(SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++) {
		void *v;
		pthread_join(t[i], &v);
		sum += (long)v;
	}
	printf("signal %d, sum %ld, backtrace %d\n", (int)got, sum, frames());
	return 0;
}
