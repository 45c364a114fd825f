/* sigmask_watch.c - knows, without reading /proc, whether any thread may
 * block SIGTRAP (an int3 would then kill the process, see patch_batch.c).
 *
 * The program changes signal masks through pthread_sigmask and sigprocmask,
 * which libneedle interposes: after each change the calling thread's
 * thread_state records whether SIGTRAP is blocked, and a global count of
 * such threads is kept.  A new thread inherits its creator's mask, so
 * pthread_create is interposed too.  Masks changed by raw system calls
 * are not seen; neither are threads that existed before libneedle was
 * loaded, so if there were others then, every batch checks /proc instead.
 * This keeps a patch batch O(1) in the number of threads. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "interpose.h"
#include "needle.h"
#include "sigmask_watch.h"
#include "task_list.h"
#include "thread_state.h"

static _Atomic int blockers;
static int check_always;

static void set_blocking(struct thread_state *ts, int blocks)
{
	if (ts && blocks != ts->blocks_sigtrap) {
		ts->blocks_sigtrap = (uint8_t)blocks;
		atomic_fetch_add(&blockers, blocks ? 1 : -1);
	}
}

static void note_mask(const sigset_t *now)
{
	set_blocking(thread_state_get(), sigismember(now, SIGTRAP) == 1);
}

NEEDLE_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	static void *real;
	sigset_t before, now;
	int (*fn)(int, const sigset_t *, sigset_t *) = interpose_next(&real, "pthread_sigmask");
	int r = fn(how, set, old ? old : &before);

	if (!r && set) {
		now = old ? *old : before;
		if (how == SIG_SETMASK)
			now = *set;
		else if (how == SIG_BLOCK)
			sigorset(&now, &now, set);
		else if (how == SIG_UNBLOCK)
			for (int sig = 1; sig < NSIG; sig++)
				if (sigismember(set, sig) == 1)
					sigdelset(&now, sig);
		note_mask(&now);
	}
	return r;
}

NEEDLE_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	/* In a threaded process sigprocmask acts on the calling thread. */
	int r = pthread_sigmask(how, set, old);
	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *start_blocking(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	set_blocking(thread_state_get(), 1);
	return s.fn(s.arg);
}

NEEDLE_API int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static void *real;
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		interpose_next(&real, "pthread_create");
	struct thread_state *ts = needle_thread;

	if ((uintptr_t)ts > 1 && ts->blocks_sigtrap) {
		/* The new thread starts with our mask: SIGTRAP blocked. */
		struct start *s = malloc(sizeof(*s));
		if (s) {
			s->fn = fn;
			s->arg = arg;
			int r = create(thread, attr, start_blocking, s);
			if (r)
				free(s);
			return r;
		}
		check_always = 1;
	}
	return create(thread, attr, fn, arg);
}

void sigmask_watch_thread_exit(struct thread_state *ts)
{
	set_blocking(ts, 0);
}

void sigmask_watch_init(void)
{
	long n = task_count();
	if (n != 1)
		check_always = 1;
}

int sigmask_may_block_sigtrap(void)
{
	return check_always || atomic_load(&blockers) > 0;
}
