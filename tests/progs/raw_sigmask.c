/* raw_sigmask GOFILE - a thread blocks SIGTRAP with a raw rt_sigprocmask
 * system call (no C library wrapper sees it) and calls traced functions
 * until GOFILE exists, while `needle ctl` changes filters. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *go;

__attribute__((noinline)) long masked_work(long x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long other_work(long x)
{
	__asm__ volatile("");
	return x + 2;
}

static void *worker(void *arg)
{
	uint64_t set = 1ull << (SIGTRAP - 1);
	struct stat st;
	long sum = 0;

	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, sizeof(set));
	while (stat(go, &st))
		for (int i = 0; i < 1000; i++)
			sum += masked_work(i) + other_work(i);
	*(long *)arg = sum > 0;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	long ok = 0;

	if (argc < 2)
		return 2;
	go = argv[1];
	pthread_create(&t, NULL, worker, &ok);
	pthread_join(t, NULL);
	printf("worker done\n");
	(void)ok;
	return 0;
}
