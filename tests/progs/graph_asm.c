/* graph_asm.c - calls for the recorder's assembly path
 * (tests/record/test_direct.sh): 4 threads, each making a known number of
 * calls at two depths and a chain of tail calls (ga_tail jumps to
 * ga_tail_mid, which jumps to ga_tail_leaf: built at -O2, the test checks
 * the jumps are there), then, when libneedle is in the process, how many
 * calls its direct path took in C (needle_stats.direct_c_entries) and its
 * full path dispatched (full_path_entries) on stderr: the assembly path
 * takes all but a site's first, tail calls too. */
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

NOINLINE unsigned long ga_tail_leaf(volatile unsigned long *sink, unsigned long v)
{
	*sink += v;
	return v ^ 5;
}

NOINLINE unsigned long ga_tail_mid(volatile unsigned long *sink, unsigned long v)
{
	*sink += 1;
	return ga_tail_leaf(sink, v + 1);
}

NOINLINE unsigned long ga_tail(volatile unsigned long *sink, unsigned long v)
{
	return ga_tail_mid(sink, v * 2);
}

NOINLINE void *ga_thread(void *arg)
{
	volatile unsigned long sink = 0;
	unsigned long acc = (unsigned long)arg;

	for (unsigned long i = 0; i < CALLS; i++) {
		ga_leaf(&sink, i);
		acc += ga_mid(&sink, i);
		acc += ga_tail(&sink, i);
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
		fprintf(stderr, "direct_c_entries %llu\nfull_path_entries %llu\n", (unsigned long long)st.direct_c_entries,
			(unsigned long long)st.full_path_entries);
	return 0;
}
