/* hold_client.c - the agent's side of holding threads from outside: the
 * requests of struct shm_hold (common/shm_layout.h), served by needle
 * record's hold thread with ptrace, offered to the patch layer as its
 * thread_hold_ops (agent/base/thread_hold.h).
 *
 * Invariants:
 *  - Runs while other threads of the process may be stopped at the stop
 *    signal, holding any lock: no allocation, no lock, no print; only
 *    stores to the shared header and futex calls.
 *  - A request's fields are written before req is release-stored, and
 *    needle record's answer is read after done is acquire-loaded.
 *  - A hold is never left behind: a request given up on (needle record
 *    too slow or gone) is followed by a release request at once, which
 *    needle record serves whenever it gets to it (it serves the newest).
 *  - Nobody waits for a release; the next hold waits for it first, so
 *    needle record never sees a hold overtake the release before it.
 *  - The ops are offered only while the buffer is mapped (hold_client_
 *    attach / hold_client_detach around the recording). */
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/base/thread_hold.h"
#include "agent/record/hold_client.h"
#include "common/shm_layout.h"

_Static_assert(THREAD_HOLD_MAX == SHM_HOLD_MAX, "one request holds a batch's threads");

static struct shm_hold *hold_area;

/* Wait (2 s at most) until needle record has answered request req. */
static int wait_done(struct shm_hold *h, uint32_t req)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		uint32_t done = atomic_load_explicit(&h->done, memory_order_acquire);
		if (done == req)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms >= 2000 || !atomic_load(&h->served_by))
			return -ETIMEDOUT;
		struct timespec t = { 0, 20 * 1000 * 1000 };
		/* Shared futex: needle record's wake comes from another process. */
		syscall(SYS_futex, &h->done, FUTEX_WAIT, done, &t, NULL, 0);
	}
}

static uint32_t post(struct shm_hold *h)
{
	uint32_t req = atomic_load_explicit(&h->req, memory_order_relaxed) + 1;
	atomic_store_explicit(&h->req, req, memory_order_release); /* pairs with needle record's acquire */
	syscall(SYS_futex, &h->req, FUTEX_WAKE, 1, NULL, NULL, 0);
	return req;
}

/* What the last request was, and whether it has been answered: a hold
 * begins only once the previous request (a release, which nobody waits
 * for) is done. */
static int settle(struct shm_hold *h)
{
	uint32_t req = atomic_load_explicit(&h->req, memory_order_relaxed);
	if (atomic_load_explicit(&h->done, memory_order_acquire) != req && wait_done(h, req))
		return -ETIMEDOUT;
	if (req & 1)
		return wait_done(h, post(h)); /* a hold given up on: released first */
	return 0;
}

static void release(const int *tids, size_t n, const uint64_t *pcs)
{
	struct shm_hold *h = hold_area;
	(void)tids;
	memcpy(h->pcs, pcs, n * sizeof(*pcs));
	post(h); /* even: release, answered before the next hold begins */
}

static int hold_begin(const int *tids, size_t n)
{
	struct shm_hold *h = hold_area;

	if (!h || !atomic_load(&h->served_by) || n > SHM_HOLD_MAX || settle(h))
		return -EDEADLK;
	h->pid = (int32_t)getpid();
	h->cnt = (uint32_t)n;
	h->status = 0;
	h->no_wait = 1; /* thread_stop.c waits for the stops it needs */
	memcpy(h->tids, tids, n * sizeof(*tids));
	memset(h->pcs, 0, sizeof(h->pcs));
	post(h); /* odd: hold */
	return 0;
}

static int hold_end(uint64_t *pcs, size_t n)
{
	struct shm_hold *h = hold_area;
	int err = wait_done(h, atomic_load_explicit(&h->req, memory_order_relaxed));
	if (!err)
		err = h->status;
	if (err) {
		post(h); /* even: whatever was held goes */
		return err < 0 ? err : -EDEADLK;
	}
	memcpy(pcs, h->pcs, n * sizeof(*pcs));
	return 0;
}

static const struct thread_hold_ops ops = { hold_begin, hold_end, release };

void hold_client_attach(struct shm_header *shm)
{
	hold_area = &shm->hold;
	thread_hold_offer(&ops);
}

void hold_client_detach(void)
{
	thread_hold_offer(NULL);
	hold_area = NULL;
}
