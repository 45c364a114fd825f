/* thread_state.c - the pool of per-thread states (see thread_state.h).
 *
 * States are carved from slabs that are never freed, so the RCU writer can
 * walk every state that ever existed without racing a free.  The free list
 * is a Treiber stack whose head packs a 32-bit tag with the index, which
 * defeats ABA without a double-width CAS.  Shadow stacks are reserved with
 * MAP_NORESERVE: a thread only pays for the pages its call depth touches. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "thread_state.h"

#define SLAB_STATES 64
#define MAX_SLABS 8192 /* 524,288 live threads */
#define SHADOW_DEFAULT (256 * 1024)

__thread struct thread_state *needle_thread __attribute__((tls_model("initial-exec")));

static struct thread_state *slabs[MAX_SLABS];
static _Atomic uint32_t slab_cnt;
static _Atomic uint64_t free_head; /* (tag << 32) | (index + 1); 0 = empty */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static size_t shadow_bytes = SHADOW_DEFAULT;

static struct thread_state *state_at(uint32_t index)
{
	return &slabs[index / SLAB_STATES][index % SLAB_STATES];
}

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
		ts = state_at(idx - 1);
		/* ts->next_free may be stale if another thread popped ts meanwhile;
		 * the tag makes that CAS fail. */
		next = ((head >> 32) + 1) << 32 | (ts->next_free & 0xffffffffu);
	} while (!atomic_compare_exchange_weak(&free_head, &head, next));
	return ts;
}

static int pool_grow(void)
{
	int err = 0;

	pthread_mutex_lock(&grow_lock);
	if (atomic_load(&free_head) & 0xffffffffu)
		goto out; /* another thread refilled it */
	uint32_t n = atomic_load(&slab_cnt);
	if (n == MAX_SLABS) {
		err = -ENOSPC;
		goto out;
	}
	struct thread_state *slab = mmap(NULL, SLAB_STATES * sizeof(*slab), PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *shadow = mmap(NULL, SLAB_STATES * shadow_bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (slab == MAP_FAILED || shadow == MAP_FAILED) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < SLAB_STATES; i++) {
		slab[i].index = n * SLAB_STATES + i;
		slab[i].shadow = shadow + i * shadow_bytes;
		slab[i].shadow_cap = shadow_bytes;
	}
	slabs[n] = slab;
	atomic_store(&slab_cnt, n + 1);
	for (uint32_t i = SLAB_STATES; i-- > 0;)
		free_push(&slab[i]);
out:
	pthread_mutex_unlock(&grow_lock);
	return err;
}

void (*thread_state_frames_hook)(struct thread_state *ts);
void (*thread_state_exit_hook)(struct thread_state *ts);

static void thread_exit(void *arg)
{
	struct thread_state *ts = arg;

	if (thread_state_frames_hook && ts->shadow_top)
		thread_state_frames_hook(ts);
	if (thread_state_exit_hook)
		thread_state_exit_hook(ts);

	/* Frames still hijacked on this thread never return now. */
	ts->shadow_top = 0;
	atomic_store(&ts->rcu_word, 0);
	needle_thread = THREAD_STATE_GONE;
	free_push(ts);
}

struct thread_state *thread_state_acquire(void)
{
	struct thread_state *ts;

	if (needle_thread == THREAD_STATE_GONE)
		return NULL;
	while (!(ts = free_pop()))
		if (pool_grow())
			return NULL;
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
	uint32_t n = atomic_load(&slab_cnt);
	for (uint32_t s = 0; s < n; s++)
		for (uint32_t i = 0; i < SLAB_STATES; i++)
			if (&slabs[s][i] != needle_thread)
				atomic_store(&slabs[s][i].rcu_word, 0);
}

int thread_state_init(void)
{
	const char *env = getenv("NEEDLE_SHADOW_BYTES");
	if (env && atoi(env) >= 4096)
		shadow_bytes = ((size_t)atoi(env) + 4095) & ~(size_t)4095;
	if (pthread_key_create(&exit_key, thread_exit))
		return -EAGAIN;
	pthread_atfork(NULL, NULL, after_fork_child);
	return 0;
}

void thread_state_for_each(void (*fn)(struct thread_state *ts, void *arg), void *arg)
{
	uint32_t n = atomic_load(&slab_cnt);
	for (uint32_t s = 0; s < n; s++)
		for (uint32_t i = 0; i < SLAB_STATES; i++)
			fn(&slabs[s][i], arg);
}
