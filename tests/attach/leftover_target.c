/* leftover_target - a process for test_attach_leftovers.sh: what needle
 * record -p leaves in it, and how its end is told.  Commands, one a line
 * on stdin:
 *
 *   say TEXT   "TEXT" on stdout and "said TEXT" on stderr
 *   work N     N calls of leftover_work (a traced function); prints the sum
 *   mmap K     K mappings of 640 MiB (untouched), all held at once, then
 *              unmapped: prints how many the kernel gave
 *   block      a thread that blocks SIGTRAP and every real-time signal
 *              (needle's stop signal among them), but not all signals:
 *              needle cannot patch while it runs
 *   unblock    that thread ends
 *   segv       a store through a null pointer
 *   exit N     exit(N)
 *
 * A second thread calls leftover_work all along, so that a recording
 * sees calls whatever the main thread does. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) long leftover_work(long x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

static _Atomic int unblock;
static pthread_t blocker;

static void *blocking(void *arg)
{
	sigset_t set;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		sigaddset(&set, s);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	while (!atomic_load(&unblock)) {
		struct timespec t = { 0, 5 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	return NULL;
}

static void *background(void *arg)
{
	volatile long sink = 0;

	(void)arg;
	for (;;) {
		for (int i = 0; i < 1000; i++)
			sink += leftover_work(i);
		struct timespec t = { 0, 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	return NULL;
}

int main(void)
{
	char line[256];
	pthread_t bg;

	setvbuf(stdout, NULL, _IOLBF, 0);
	fprintf(stderr, "leftover_target up\n");
	pthread_create(&bg, NULL, background, NULL);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "say ", 4)) {
			printf("%s\n", line + 4);
			fprintf(stderr, "said %s\n", line + 4);
		} else if (!strncmp(line, "work ", 5)) {
			long n = atol(line + 5), sum = 0;
			for (long i = 0; i < n; i++)
				sum += leftover_work(i);
			printf("work %ld %ld\n", n, sum);
		} else if (!strncmp(line, "mmap ", 5)) {
			int k = atoi(line + 5), got = 0;
			size_t len = 640ul << 20;
			void **maps = calloc((size_t)k, sizeof(*maps));
			for (int i = 0; i < k; i++) {
				maps[i] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				got += maps[i] != MAP_FAILED;
			}
			for (int i = 0; i < k; i++)
				if (maps[i] != MAP_FAILED)
					munmap(maps[i], len);
			free(maps);
			printf("mmap %d/%d\n", got, k);
		} else if (!strcmp(line, "block")) {
			atomic_store(&unblock, 0);
			pthread_create(&blocker, NULL, blocking, NULL);
			printf("blocking\n");
		} else if (!strcmp(line, "unblock")) {
			atomic_store(&unblock, 1);
			pthread_join(blocker, NULL);
			printf("unblocked\n");
		} else if (!strcmp(line, "mainblock") || !strcmp(line, "mainunblock")) {
			/* The first thread: needle record holds other threads
			 * that block every signal with ptrace, never this one. */
			sigset_t set;
			sigemptyset(&set);
			sigaddset(&set, SIGTRAP);
			for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
				sigaddset(&set, s);
			pthread_sigmask(line[4] == 'b' ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
			printf("%s\n", line[4] == 'b' ? "blocking" : "unblocked");
		} else if (!strcmp(line, "segv")) {
			*(volatile int *)0 = 1;
		} else if (!strncmp(line, "exit ", 5)) {
			exit(atoi(line + 5));
		}
	}
	return 0;
}
