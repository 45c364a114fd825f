/* threads T N - T threads each call work() N times; work() calls step()
 * twice.  Deterministic call counts for comparing reader modes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long per_thread;

__attribute__((noinline)) long step(long x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

__attribute__((noinline)) long work(long x)
{
	return step(x) ^ step(x + 1);
}

static void *thread_main(void *arg)
{
	long s = 0;
	for (long i = 0; i < per_thread; i++)
		s += work(i);
	*(long *)arg = s;
	return NULL;
}

int main(int argc, char **argv)
{
	int t = argc > 1 ? atoi(argv[1]) : 4;
	per_thread = argc > 2 ? atol(argv[2]) : 100000;
	pthread_t th[64];
	long sums[64], total = 0;

	if (t < 1 || t > 64)
		return 2;
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, thread_main, &sums[i]);
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		total += sums[i];
	}
	printf("total %ld\n", total);
	return 0;
}
