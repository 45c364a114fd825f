/* thread_state.c - the pool of per-thread states (see thread_state.h).
 *
 * The whole pool is reserved up front with MAP_NORESERVE: an array of
 * states and, beside it, one shadow stack per state.  Nothing is committed
 * until touched, so a thread's first traced call takes a state with one
 * atomic operation and no system call, no lock and no allocation: the
 * kernel backs the pages it touches.  States are never unmapped, so the
 * RCU writer can walk every state that ever existed without racing a
 * free.  Returned states go on a Treiber stack whose head packs a 32-bit
 * tag with the index, which defeats ABA without a double-width CAS; reuse
 * is LIFO, which keeps the resident pages few when threads come and go.
 * A state whose shadow stack went deep gives those pages back when its
 * thread exits (madvise, on the exit path, not the call path). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "thread_state.h"

#define MAX_STATES_DEFAULT (1u << 20) /* concurrent traced threads */
#define SHADOW_DEFAULT (256 * 1024)
#define SHADOW_KEEP (16 * 1024)       /* resident shadow kept across reuse */

__thread struct thread_state *needle_thread __attribute__((tls_model("initial-exec")));

static struct thread_state *states;
static uint8_t *shadows;
static uint32_t max_states;
static _Atomic uint32_t states_used; /* never-used states start here */
static _Atomic uint64_t free_head;   /* (tag << 32) | (index + 1); 0 = empty */
static _Atomic uint64_t threads_refused;
static pthread_key_t exit_key;
static size_t shadow_bytes = SHADOW_DEFAULT;

void (*thread_state_frames_hook)(struct thread_state *ts);
void (*thread_state_exit_hook)(struct thread_state *ts);
void (*thread_state_mask_hook)(struct thread_state *ts);

static void free_push(struct thread_state *ts)
{
	uint64_t head = atomic_load(&free_head), next;
	do {
		ts->next_free = head & 0xffffffffu;
		next = ((head >> 32) + 1) << 32 | (ts->index + 1);
	} while (!atomic_compare_exchange_weak(&free_head, &head, next));
}

static struct thread_state *free_pop(void)
{
	uint64_t head = atomic_load(&free_head), next;
	struct thread_state *ts;
	do {
		uint32_t idx = head & 0xffffffffu;
		if (!idx)
			return NULL;
		ts = &states[idx - 1];
		/* ts->next_free may be stale if another thread popped ts meanwhile;
		 * the tag makes that CAS fail. */
		next = ((head >> 32) + 1) << 32 | (ts->next_free & 0xffffffffu);
	} while (!atomic_compare_exchange_weak(&free_head, &head, next));
	return ts;
}

static void thread_exit(void *arg)
{
	struct thread_state *ts = arg;

	if (thread_state_frames_hook && ts->shadow_top)
		thread_state_frames_hook(ts);
	if (thread_state_exit_hook)
		thread_state_exit_hook(ts);
	if (thread_state_mask_hook)
		thread_state_mask_hook(ts);
	/* Frames still hijacked on this thread never return now. */
	ts->shadow_top = 0;
	if (ts->shadow_high > SHADOW_KEEP)
		madvise(ts->shadow + SHADOW_KEEP, ts->shadow_high - SHADOW_KEEP, MADV_DONTNEED);
	ts->shadow_high = 0;
	atomic_store(&ts->rcu_word, 0);
	needle_thread = THREAD_STATE_GONE;
	free_push(ts);
}

struct thread_state *thread_state_acquire(void)
{
	struct thread_state *ts;

	if (needle_thread == THREAD_STATE_GONE || !states)
		return NULL;
	if (!(ts = free_pop())) {
		uint32_t idx = atomic_fetch_add(&states_used, 1);
		if (idx >= max_states) {
			atomic_store(&states_used, max_states);
			atomic_fetch_add(&threads_refused, 1);
			return NULL;
		}
		ts = &states[idx];
		ts->index = idx;
		ts->shadow = shadows + (size_t)idx * shadow_bytes;
		ts->shadow_cap = shadow_bytes;
	}
	/* pthread_setspecific on a low key index writes into the thread's
	 * descriptor: no allocation, no syscall. */
	pthread_setspecific(exit_key, ts);
	needle_thread = ts;
	return ts;
}

static void after_fork_child(void)
{
	/* Only the forking thread survives: every other state is orphaned.
	 * Clear their RCU words so that grace periods do not wait on them. */
	uint32_t n = atomic_load(&states_used);
	for (uint32_t i = 0; i < n; i++)
		if (&states[i] != needle_thread)
			atomic_store(&states[i].rcu_word, 0);
}

static void *reserve(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int thread_state_init(void)
{
	const char *env = getenv("NEEDLE_SHADOW_BYTES");
	if (env && atoi(env) >= 4096)
		shadow_bytes = ((size_t)atoi(env) + 4095) & ~(size_t)4095;
	env = getenv("NEEDLE_MAX_THREADS");
	max_states = env && atoi(env) > 0 ? (uint32_t)atoi(env) : MAX_STATES_DEFAULT;
	/* An address-space limit (ulimit -v) may refuse the reservation:
	 * settle for fewer threads. */
	for (; max_states >= 64; max_states /= 2) {
		states = reserve((size_t)max_states * sizeof(*states));
		shadows = states ? reserve((size_t)max_states * shadow_bytes) : NULL;
		if (shadows)
			break;
		if (states)
			munmap(states, (size_t)max_states * sizeof(*states));
		states = NULL;
	}
	if (!states)
		return -ENOMEM;
	if (pthread_key_create(&exit_key, thread_exit))
		return -EAGAIN;
	pthread_atfork(NULL, NULL, after_fork_child);
	return 0;
}

void thread_state_for_each(void (*fn)(struct thread_state *ts, void *arg), void *arg)
{
	uint32_t n = atomic_load(&states_used);
	for (uint32_t i = 0; i < n; i++)
		fn(&states[i], arg);
}

uint64_t thread_state_refused(void)
{
	return atomic_load(&threads_refused);
}
