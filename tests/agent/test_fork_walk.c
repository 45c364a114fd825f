/* test_fork_walk - a fork of the program while the agent walks the loaded
 * objects (dl_iterate_phdr, which holds the loader's write lock) must not
 * leave the child with that lock held: glibc 2.36 does not reset it in a
 * child, whose first dlopen of a new object then waits for good (nginx's
 * workers, forked while needle record -p discovered the master's objects,
 * hung in initgroups).  A thread refreshes libneedle's view of the
 * objects (a walk each time) without pause while the main thread forks
 * children that each dlopen an object not yet loaded; every child must
 * exit within 5 s. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "needle.h"

#define FORKS 400

static _Atomic int done;
static _Atomic long walks;

static void *walker(void *arg)
{
	(void)arg;
	while (!atomic_load(&done))
		if (needle_refresh() >= 0)
			atomic_fetch_add(&walks, 1);
	return NULL;
}

/* 1 when child exited 0 within 5 s; else it is killed. */
static int child_ended(pid_t child)
{
	for (int i = 0; i < 5000; i++) {
		int status;
		pid_t r = waitpid(child, &status, WNOHANG);
		if (r == child)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0;
		struct timespec t = { 0, 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}

int main(void)
{
	pthread_t t;
	int hung = 0, during = 0;

	CHECK(needle_refresh() >= 0, "libneedle sees the loaded objects");
	pthread_create(&t, NULL, walker, NULL);
	for (int i = 0; i < FORKS && hung < 3; i++) {
		long before = atomic_load(&walks);
		pid_t child = fork();
		if (child == 0) {
			/* A new object: the loader adds it to its list under the
			 * write lock. */
			void *h = dlopen(DL_LIB, RTLD_NOW);
			_exit(h ? 0 : 2);
		}
		hung += !child_ended(child);
		during += atomic_load(&walks) > before;
	}
	atomic_store(&done, 1);
	pthread_join(t, NULL);
	CHECK(during > FORKS / 4, "the forks came while the walks went on (%d of %d)", during, FORKS);
	CHECK(hung == 0, "every child's dlopen returned and it exited (%d hung)", hung);
	return harness_exit();
}
