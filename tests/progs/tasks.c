/* tasks - a known tree of processes and threads, for graph --task and the
 * trace's TASKS records:
 *   tasks (main thread) starts thread "worker1" and joins it, then forks
 *   "child", which starts thread "worker2", joins it, forks "grandchild"
 *   and waits for it; main waits for child.
 * Every thread calls work() once, so that each has events.  Prints each
 * task's role, tid, pid and ppid, one line each, in the order they run.
 * tasks semi: the two threads are named "w;1" and "w;2" instead. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) long work(long x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

static void say(const char *role)
{
	printf("%s %d %d %d\n", role, gettid(), getpid(), getppid());
	fflush(stdout);
}

static void *worker(void *name)
{
	prctl(PR_SET_NAME, name);
	say(name);
	work(1);
	return NULL;
}

static void thread(const char *name)
{
	pthread_t t;
	if (pthread_create(&t, NULL, worker, (void *)name) == 0)
		pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	int semi = argc > 1 && !strcmp(argv[1], "semi");
	say("tasks");
	work(0);
	thread(semi ? "w;1" : "worker1");
	pid_t c = fork();
	if (c == 0) {
		prctl(PR_SET_NAME, "child");
		say("child");
		work(2);
		thread(semi ? "w;2" : "worker2");
		pid_t g = fork();
		if (g == 0) {
			prctl(PR_SET_NAME, "grandchild");
			say("grandchild");
			work(3);
			return 0;
		}
		waitpid(g, NULL, 0);
		return 0;
	}
	waitpid(c, NULL, 0);
	return 0;
}
