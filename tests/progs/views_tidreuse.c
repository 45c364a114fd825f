/* views_tidreuse [reuse] - two threads one after the other, each making
 * 1,000 traced calls.  With "reuse", the second thread is given the first
 * one's thread id: after the first ends, /proc/sys/kernel/ns_last_pid is
 * set just below its id (this needs its own pid namespace and the right to
 * write that file: unshare --pid --fork --mount-proc, as root).  Set
 * VIEWS_TIDREUSE_DEBUG to see the two ids on stderr.  Prints
 * "same" or "different" for the two ids. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) long inner(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

__attribute__((noinline)) long outer(long x)
{
	long s = inner(x) + inner(x + 1);
	__asm__ volatile("" : "+r"(s));
	return s;
}

static int set_last_pid(pid_t last)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	if (!f || fprintf(f, "%d", (int)last) < 0 || fclose(f)) {
		perror("ns_last_pid");
		return -1;
	}
	return 0;
}

static void *body(void *arg)
{
	long s = 0;
	for (long i = 0; i < 1000; i++)
		s += outer(i);
	*(pid_t *)arg = gettid();
	return (void *)s;
}

int main(int argc, char **argv)
{
	pthread_t t;
	pid_t first = 0, second = 0;

	pthread_create(&t, NULL, body, &first);
	pthread_join(t, NULL);
	if (argc > 1 && !strcmp(argv[1], "reuse")) {
		/* The kernel frees a thread's id a little after pthread_join
		 * returns.  Probe with a child process that exits at once (it
		 * makes no traced call) until the id comes back, then ask for
		 * it again for the thread. */
		for (int i = 0; i < 1000; i++) {
			if (set_last_pid(first - 1))
				return 3;
			pid_t probe = fork();
			if (probe == 0)
				_exit(0);
			waitpid(probe, NULL, 0);
			if (probe == first)
				break;
			usleep(1000);
		}
		if (set_last_pid(first - 1))
			return 3;
	}
	pthread_create(&t, NULL, body, &second);
	pthread_join(t, NULL);
	printf("%s\n", first == second ? "same" : "different");
	if (getenv("VIEWS_TIDREUSE_DEBUG"))
		fprintf(stderr, "tids %d %d\n", (int)first, (int)second);
	return 0;
}
