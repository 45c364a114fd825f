/* agent.c - libneedle's start-up (see agent.h).
 *
 * The constructor discovers sites as soon as libneedle is loaded, so that
 * gcc's multi-NOP sites and -pg's fentry calls are rewritten while the
 * process usually has a single thread; everything else waits for the
 * first API call.  Start-up failures are reported once and returned by
 * every later call. */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "agent.h"
#include "core_sync.h"
#include "interpose.h"
#include "log.h"
#include "module.h"
#include "needle.h"
#include "rcu.h"
#include "sigmask_watch.h"
#include "recorder.h"
#include "thread_state.h"
#include "trampoline.h"

static pthread_mutex_t control = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_error;

static void agent_init(void)
{
	int err;

	interpose_init();
	err = thread_state_init();

	dispatch_init();
	sigmask_watch_init();
	thread_state_mask_hook = sigmask_watch_thread_exit;
	if (!err)
		err = rcu_init();
	if (!err)
		err = core_sync_init();
	/* When `needle record` asked for a trace and the agent or the
	 * recorder cannot do its part, the reason goes to needle record
	 * through the buffer's metadata, and the program runs on, untraced:
	 * a tracer that fails must not stop the program.  A recorder failure
	 * leaves the C API working. */
	if (!err) {
		pthread_mutex_lock(&control);
		err = module_refresh();
		if (err >= 0) {
			int rerr = recorder_start_from_env();
			/* The request itself cannot be met (no patchable entry,
			 * filters that match nothing): end the program before
			 * main rather than let it run untraced by mistake. */
			if (rerr == -ENOEXEC || rerr == -ENOENT)
				_exit(126);
			err = 0;
		}
		pthread_mutex_unlock(&control);
	}
	if (err)
		recorder_report_failure(err);
	init_error = err;
}

__attribute__((constructor)) static void agent_load(void)
{
	pthread_once(&once, agent_init);
}

/* An object unloaded by dlclose takes its sites with it.  The real dlclose
 * runs under the control mutex, so that no patch batch writes into the
 * object while it is unmapped; then its sites leave the indexes
 * (module_forget_unloaded).  Lock order: control mutex, then the loader's
 * lock, as in discovery.  A destructor that calls dlclose runs inside the
 * outer call, which holds the mutex already. */
static __thread int in_dlclose;

NEEDLE_API int dlclose(void *handle)
{
	int (*real)(void *) = interpose_next(IP_DLCLOSE);

	pthread_once(&once, agent_init);
	if (init_error || in_dlclose)
		return real(handle);
	pthread_mutex_lock(&control);
	in_dlclose = 1;
	int r = real(handle);
	in_dlclose = 0;
	int saved = errno;
	int gone = module_forget_unloaded();
	if (gone < 0)
		pr_warn("cannot forget the sites of an unloaded object (%d)\n", gone);
	pthread_mutex_unlock(&control);
	errno = saved;
	return r;
}

int agent_lock(void)
{
	pthread_once(&once, agent_init);
	if (init_error)
		return init_error;
	pthread_mutex_lock(&control);
	return 0;
}

void agent_unlock(void)
{
	pthread_mutex_unlock(&control);
}
