/* xray_prog [loop] - built with clang -fxray-instrument (every function
 * gets XRay's entry and exit sleds, nothing else): two threads each run
 * x_mid 1,000 times, which calls x_leaf once and x_fib(12) (465 calls of
 * x_fib) once.  Prints the sums and the call counts it made, so that a
 * trace can be checked exactly.  With "loop", runs until killed with
 * SIGTERM, for needle record -p. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ROUNDS 1000

static volatile sig_atomic_t stop;

__attribute__((noinline)) long x_leaf(long x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

long x_fib(long n);
/* Called through a pointer, so that clang cannot turn one of the two
 * recursive calls into a loop: every call of the count below happens. */
static long (*volatile fib_ptr)(long) = x_fib;

__attribute__((noinline)) long x_fib(long n)
{
	return n < 2 ? n : fib_ptr(n - 1) + fib_ptr(n - 2);
}

__attribute__((noinline)) long x_mid(long i)
{
	return x_leaf(i) + x_fib(12);
}

static void *worker(void *arg)
{
	long *sum = arg;
	for (long i = 0; i < ROUNDS; i++)
		*sum += x_mid(i);
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "loop")) {
		signal(SIGTERM, on_term);
		long s = 0, n = 0;
		while (!stop) {
			struct timespec d = { 0, 1000000 };
			s += x_mid(n++ % 100);
			nanosleep(&d, NULL);
		}
		printf("loop done %ld\n", s > 0 ? 1L : 0L);
		return 0;
	}
	pthread_t t[2];
	long sums[2] = { 0, 0 };
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, &sums[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("sums %ld %ld\n", sums[0], sums[1]);
	printf("calls x_mid %d x_leaf %d x_fib %d\n", 2 * ROUNDS, 2 * ROUNDS, 2 * ROUNDS * 465);
	return 0;
}
