/* control_lock.c - see control_lock.h. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "agent/base/control_lock.h"

/* Recursive: the real dlclose runs under it (agent.c), and a destructor
 * of the object being unloaded may call the API (a tool's plugin
 * destroying its links). */
static pthread_mutex_t control = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
__thread unsigned needle_agent_busy __attribute__((tls_model("initial-exec"), visibility("hidden")));

void control_mark_agent_thread(void)
{
	needle_agent_busy = 1u << 30; /* never back to 0 */
}
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void (*startup)(void);
static _Atomic int started;
static int startup_error;

static void run_startup(void)
{
	if (startup)
		startup();
	atomic_store(&started, 1);
}

void control_lock_register(void (*init)(void))
{
	startup = init;
}

void control_lock_startup(void (*init)(void))
{
	startup = init;
	pthread_once(&once, run_startup);
}

void control_lock_set_error(int err)
{
	startup_error = err;
}

int control_lock(void)
{
	/* Waits if start-up is running in another thread. */
	if (startup)
		pthread_once(&once, run_startup);
	if (!atomic_load(&started))
		return -EAGAIN;
	if (startup_error)
		return startup_error;
	pthread_mutex_lock(&control);
	needle_agent_busy++;
	return 0;
}

void control_unlock(void)
{
	needle_agent_busy--;
	pthread_mutex_unlock(&control);
}

void control_lock_raw(void)
{
	pthread_mutex_lock(&control);
	needle_agent_busy++;
}

int control_lock_try(unsigned timeout_ms)
{
	for (unsigned waited = 0; pthread_mutex_trylock(&control); waited += 5) {
		if (waited >= timeout_ms)
			return -EDEADLK;
		struct timespec t = { 0, 5 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	needle_agent_busy++;
	return 0;
}
