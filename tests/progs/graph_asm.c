/* graph_asm.c - calls for the recorder's assembly path
 * (tests/record/test_direct.sh): 4 threads, each making a known number of
 * calls at two depths, then, when libneedle is in the process, how many
 * calls its direct path took in C (needle_stats.direct_c_entries) on
 * stderr: the assembly path takes all but a site's first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "needle.h"

#define NOINLINE __attribute__((noinline))
#define THREADS 4
#define CALLS 50000

NOINLINE void ga_leaf(volatile unsigned long *sink, unsigned long v)
{
	*sink += v;
}

NOINLINE unsigned long ga_mid(volatile unsigned long *sink, unsigned long v)
{
	for (unsigned long i = 0; i < 4; i++)
		ga_leaf(sink, v + i);
	return v * 3;
}

NOINLINE void *ga_thread(void *arg)
{
	volatile unsigned long sink = 0;
	unsigned long acc = (unsigned long)arg;

	for (unsigned long i = 0; i < CALLS; i++) {
		ga_leaf(&sink, i);
		acc += ga_mid(&sink, i);
	}
	return (void *)(acc + sink);
}

int main(void)
{
	pthread_t t[THREADS];
	unsigned long sum = 0;

	for (unsigned long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, ga_thread, (void *)i);
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		sum += (unsigned long)r;
	}
	printf("%lu\n", sum);
	int (*get)(struct needle_stats *) = (int (*)(struct needle_stats *))dlsym(RTLD_DEFAULT, "needle_get_stats");
	struct needle_stats st;
	memset(&st, 0, sizeof(st));
	st.sz = sizeof(st);
	if (get && !get(&st))
		fprintf(stderr, "direct_c_entries %llu\n", (unsigned long long)st.direct_c_entries);
	return 0;
}
