/* bench_kernel getpid N | switch N - the cost of --kernel per event, timed
 * inside the program (ns_per_call on stderr):
 *   getpid  N getpid system calls in one traced call: ns per system call
 *   switch  two threads hand a token back and forth N times through a
 *           pair of pipes (on one CPU under taskset: each hand-over is a
 *           context switch): ns per switch */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long rounds;
static int ping[2], pong[2];

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

__attribute__((noinline)) long bench_getpid(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += syscall(SYS_getpid);
	return s;
}

static void *partner(void *arg)
{
	char c;
	(void)arg;
	for (long i = 0; i < rounds; i++)
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			break;
	return NULL;
}

__attribute__((noinline)) void bench_switch(long n)
{
	char c = 'x';
	for (long i = 0; i < n; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			break;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[2]);
	double t0, t1;
	if (!strcmp(argv[1], "getpid")) {
		t0 = now_ns();
		long s = bench_getpid(n);
		t1 = now_ns();
		fprintf(stderr, "ns_per_call %.3f\n", (t1 - t0) / n);
		return s == 0;
	}
	pthread_t t;
	rounds = n;
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, partner, NULL))
		return 1;
	t0 = now_ns();
	bench_switch(n);
	t1 = now_ns();
	pthread_join(t, NULL);
	/* Two switches per round: to the partner and back. */
	fprintf(stderr, "ns_per_call %.3f\n", (t1 - t0) / (2.0 * n));
	return 0;
}
