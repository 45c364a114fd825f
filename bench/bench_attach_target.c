/* bench_attach_target - a process to attach to: one thread calls 10,000
 * generated functions (bench_0 .. bench_9999) round and round, four sleep
 * in poll and nanosleep, until stdin closes.  For `needle record -p` and
 * `bpftrace -p` side by side (bench/run.sh). */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define FUNCS 10000
extern long (*const bench_table[FUNCS])(long);
static _Atomic int done;
static volatile long sink;

static void *caller(void *arg)
{
	(void)arg;
	long s = 0;
	while (!done)
		for (int i = 0; i < FUNCS; i++)
			s += bench_table[i](i);
	sink = s;
	return NULL;
}

static void *sleeper(void *arg)
{
	while (!done) {
		if (arg) {
			struct timespec t = { 0, 5 * 1000 * 1000 };
			nanosleep(&t, NULL);
		} else {
			poll(NULL, 0, 5);
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t t[5];
	char c;

	pthread_create(&t[0], NULL, caller, NULL);
	for (int i = 1; i < 5; i++)
		pthread_create(&t[i], NULL, sleeper, i % 2 ? &t : NULL);
	while (read(0, &c, 1) > 0)
		;
	done = 1;
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	return 0;
}
