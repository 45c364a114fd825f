/* phdr_walk.c - the agent's walks over the loaded objects, kept apart
 * from the program's forks.
 *
 * dl_iterate_phdr holds the loader's write lock (_dl_load_write_lock)
 * for the whole walk, and the C library (glibc 2.36, Debian 12) does not
 * reset that lock in a fork's child: a child forked while a thread of
 * the agent walked starts with it held by a thread it does not have, and
 * deadlocks at its first dlopen.  nginx's workers, forked while needle
 * record -p discovered the master's objects, hung for good in initgroups
 * (dlopen of an NSS module).
 *
 * Invariants:
 *  - Every walk of the agent holds walk_lock, and a pthread_atfork
 *    prepare handler takes it: a fork waits for a walk under way, and no
 *    walk starts until the fork is done (its parent handler releases the
 *    lock, its child handler gives the child a fresh one).
 *  - The callbacks only copy (into memory they may allocate), so a fork
 *    waits for microseconds; none of them forks or takes walk_lock.  An
 *    allocator whose own prepare handler ran first (registered later)
 *    may hold the lock a callback's malloc waits for: the fork's wait
 *    is bounded for that too.  A fork
 *    from a signal handler that interrupted a walk on its own thread
 *    would wait for itself: the prepare handler gives up after 200 ms
 *    (the child then runs the risk it ran before).
 *  - A walk waits 100 ms at most for a fork, then walks without the
 *    lock: with -p the agent's prepare handler runs before the
 *    program's, so a forking thread may hold walk_lock while it waits
 *    for a lock of the program's that the walking thread holds (taken
 *    around a dlopen, after which the agent walks). */
#include <pthread.h>
#include <time.h>

#include "agent/base/phdr_walk.h"

static pthread_mutex_t walk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Whether each fork under way on this thread took walk_lock, a bit per
 * depth: the forking thread's own (two threads may fork at once), and a
 * fork from a signal handler that interrupted another's prepare handler
 * is one level deeper. */
static __thread unsigned fork_depth __attribute__((tls_model("initial-exec")));
static __thread unsigned fork_took __attribute__((tls_model("initial-exec")));

static void before_fork(void)
{
	unsigned bit = 1u << (fork_depth++ & 31);
	fork_took &= ~bit;
	for (int i = 0; i < 2000; i++) {
		if (!pthread_mutex_trylock(&walk_lock)) {
			fork_took |= bit;
			return;
		}
		struct timespec t = { 0, 100 * 1000 };
		nanosleep(&t, NULL);
	}
}

static void after_fork_parent(void)
{
	unsigned bit = 1u << (--fork_depth & 31);
	if (fork_took & bit)
		pthread_mutex_unlock(&walk_lock);
	fork_took &= ~bit;
}

static void after_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	walk_lock = fresh;
	fork_depth = fork_took = 0;
}

static void register_atfork(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

int agent_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	pthread_once(&atfork_once, register_atfork);
	int locked = 0;
	for (int i = 0; i < 1000 && !(locked = !pthread_mutex_trylock(&walk_lock)); i++) {
		struct timespec t = { 0, 100 * 1000 };
		nanosleep(&t, NULL);
	}
	int ret = dl_iterate_phdr(cb, data);
	if (locked)
		pthread_mutex_unlock(&walk_lock);
	return ret;
}
