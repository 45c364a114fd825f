/* control_lock.h - the control mutex that serializes everything that
 * changes sites, links or patches, and the once-only start-up that every
 * taker of it waits for.
 *
 * The start-up itself lives at the top of the agent (agent.c), which
 * registers it from libneedle's constructor; this lower layer only runs
 * it once, so that every layer can take the mutex without including the
 * top one. */
#ifndef NEEDLE_CONTROL_LOCK_H
#define NEEDLE_CONTROL_LOCK_H

/* Non-zero while the calling thread runs the agent's own work: under the
 * control mutex (patching, discovery), in a thread of the agent's
 * (needle-ctl, needle-attach), in thread-exit callbacks, or taking its
 * thread state.  Dispatch then lets every traced call through untraced:
 * the functions the agent calls (the C library's, once relocated) must
 * not be recorded as the program's, nor recurse into the agent. */
extern __thread unsigned needle_agent_busy __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The calling thread is one of the agent's own: it never traces. */
void control_mark_agent_thread(void);

/* Set the start-up function (agent.c's constructor, before anything
 * else): the first control_lock() runs it, once. */
void control_lock_register(void (*init)(void));
/* Set it and run it now, once. */
void control_lock_startup(void (*init)(void));

/* Record the start-up's result: 0, or a negative errno that every later
 * control_lock() returns. */
void control_lock_set_error(int err);

/* Wait for start-up and take the control mutex.  Returns 0, or the
 * negative errno of a failed start-up (mutex not taken), or -EAGAIN
 * before libneedle's constructor has run. */
int control_lock(void);
void control_unlock(void);

/* For start-up itself and dlclose: the mutex without the start-up check. */
void control_lock_raw(void);
/* The mutex, if it comes within timeout_ms (0, or -EDEADLK): for a forked
 * child's release, where the copy may be held by a thread the fork left
 * behind (no atfork handler takes it). */
int control_lock_try(unsigned timeout_ms);

#endif
