/* views_deep THREADS ITERATIONS DEPTH - each thread runs ITERATIONS times
 * descend(DEPTH), a recursion DEPTH calls deep in which every level also
 * calls leaf(): 2 * DEPTH calls per iteration.  The deepest recorded
 * nesting is thread_main > descend x DEPTH > leaf, DEPTH + 2 calls
 * (depth DEPTH + 1 counted from 0).  After its first traced call each
 * thread names itself deep-N, so that only chunks taken later carry that
 * name. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long iterations;
static int depth;

__attribute__((noinline)) long leaf(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

__attribute__((noinline)) long descend(int d)
{
	long s = leaf(d);
	if (d > 1)
		s += descend(d - 1);
	/* Not a tail call: every level stays a real frame. */
	__asm__ volatile("" : "+r"(s));
	return s;
}

__attribute__((noinline)) void *thread_main(void *arg)
{
	char name[16];
	long s = leaf(0);

	snprintf(name, sizeof(name), "deep-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	for (long i = 0; i < iterations; i++)
		s += descend(depth);
	return (void *)s;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t th[256];
	long total = 0;

	iterations = argc > 2 ? atol(argv[2]) : 1000;
	depth = argc > 3 ? atoi(argv[3]) : 10;
	if (threads < 1 || threads > 256 || depth < 1)
		return 2;
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)(long)i);
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(th[i], &r);
		total += (long)r;
	}
	printf("total %ld\n", total);
	return 0;
}
