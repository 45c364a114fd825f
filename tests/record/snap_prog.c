/* snap_prog [crash|spin] - a request loop for the flight recorder's tests:
 * 4 threads each handle ROUNDS requests (handler calls parse and reply);
 * thread 2's request SLOW_AT is slow (handler calls slow_part, which
 * sleeps SLOW_MS).  Prints what it did, so a snapshot can be checked.
 * With "crash", thread 0 dies of SIGSEGV in crash_here after its
 * request CRASH_AT, while the others still run. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define THREADS 4
#define ROUNDS 100000
#define SLOW_AT 50000
#define SLOW_MS 100
#define CRASH_AT 30000

static int crash_mode, spin_mode;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) long parse(long x)
{
	__asm__ volatile("");
	return x * 7 + 3;
}

__attribute__((noinline)) long reply(long x)
{
	__asm__ volatile("");
	return x ^ 0x55;
}

__attribute__((noinline)) void slow_part(void)
{
	struct timespec d = { 0, SLOW_MS * 1000000L };
	nanosleep(&d, NULL);
}

__attribute__((noinline)) void crash_here(volatile int *p)
{
	*p = 1;
}

__attribute__((noinline)) long handler(long thread, long i)
{
	long v = parse(i);
	if (thread == 2 && i == SLOW_AT)
		slow_part();
	return reply(v);
}

static void *worker(void *arg)
{
	long t = (long)arg, s = 0;
	if (spin_mode) {
		for (long i = 0; !stop; i++)
			s += handler(t, i % SLOW_AT);
		return (void *)(s & 1);
	}
	for (long i = 0; i < ROUNDS; i++) {
		s += handler(t, i);
		if (crash_mode && t == 0 && i == CRASH_AT)
			crash_here(NULL);
	}
	return (void *)s;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	long sum = 0;

	crash_mode = argc > 1 && !strcmp(argv[1], "crash");
	spin_mode = argc > 1 && !strcmp(argv[1], "spin");
	if (spin_mode)
		signal(SIGTERM, on_term);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		sum += (long)r;
	}
	if (spin_mode)
		printf("spun in %d threads until SIGTERM\n", THREADS);
	else
		printf("handled %d requests in %d threads, sum %ld; slow: thread 2 request %d (%d ms)\n",
		       THREADS * ROUNDS, THREADS, sum, SLOW_AT, SLOW_MS);
	return 0;
}
