/* overwrite.c - the overwrite rings of needle record --snapshot.
 *
 * The buffer's chunks are shared by every thread, as when streaming; in
 * snapshot mode nobody drains them, so once the free list is empty a
 * thread that fills its chunk writes over a full one: its own oldest, so
 * that each thread keeps its own recent past however busy the others
 * are (a per-thread ring), or, while it holds less than its share
 * (chunks / threads seen), the oldest full chunk of all (how a thread
 * that starts late gets room).  Memory stays the buffer's, whatever the
 * number of threads.
 *
 * Invariants:
 *  - Who may write over a full chunk is decided by one compare-and-swap
 *    of its generation, from the even value seen when it was listed or
 *    found to the next, odd one (shm_layout.h): two threads never both
 *    win, and a chunk taken and published again has a new generation, so
 *    a stale entry of a list can never win it back (no ABA).
 *  - A thread's list of full chunks (oldest first) is linked through
 *    next_of[], one slot per chunk, private to the recorder: an entry is
 *    (generation << 32 | index + 1).  A slot is written only by the
 *    thread that owns the chunk, and read only after winning the chunk's
 *    compare-and-swap, so a link is read only while it is its writer's.
 *    A thread that finds its oldest chunk taken by another drops its
 *    list (those chunks stay in the buffer, and in snapshots, until
 *    someone takes them over).
 *  - No system call, no lock, no allocation on these paths (the program
 *    must not notice the recording); stealing scans every chunk header,
 *    which happens only while a thread holds less than its share. */
#include <stdatomic.h>
#include <stdlib.h>

#include "agent/record/overwrite.h"
#include "common/shm_layout.h"

static _Atomic uint64_t *next_of;

int overwrite_init(struct shm_header *h)
{
	if (!h->snapshot_mode)
		return 0;
	free((void *)next_of);
	next_of = calloc(h->chunk_count, sizeof(*next_of));
	return next_of ? 0 : -1;
}

static inline uint64_t entry_of(uint32_t idx, uint32_t gen)
{
	return (uint64_t)gen << 32 | (idx + 1u);
}

void overwrite_published(struct overwrite_list *l, uint32_t idx, uint32_t gen)
{
	uint64_t e = entry_of(idx, gen);

	atomic_store_explicit(&next_of[idx], 0, memory_order_relaxed);
	if (l->tail)
		atomic_store_explicit(&next_of[(uint32_t)l->tail - 1], e, memory_order_relaxed);
	else
		l->head = e;
	l->tail = e;
	l->cnt++;
}

/* Win chunk e (gen even -> odd).  1 if won. */
static int win(struct shm_header *h, uint64_t e)
{
	struct shm_chunk *c = shm_chunk_at(h, (uint32_t)e - 1);
	uint32_t gen = (uint32_t)(e >> 32);

	/* Acquire: what the last writer of the chunk did is done. */
	return atomic_compare_exchange_strong_explicit(&c->gen, &gen, gen + 1, memory_order_acquire,
						       memory_order_relaxed);
}

static int64_t take_own(struct overwrite_list *l, struct shm_header *h)
{
	while (l->head) {
		uint64_t e = l->head;
		if (!win(h, e)) {
			/* Taken by another thread: the links past it are not ours
			 * to follow. */
			l->head = l->tail = 0;
			l->cnt = 0;
			return -1;
		}
		l->head = atomic_load_explicit(&next_of[(uint32_t)e - 1], memory_order_relaxed);
		if (!l->head)
			l->tail = 0;
		l->cnt--;
		return (int64_t)(uint32_t)e - 1;
	}
	return -1;
}

/* The oldest full chunk of any thread (smallest base), won. */
static int64_t steal_oldest(struct shm_header *h)
{
	for (int tries = 0; tries < 4; tries++) {
		uint64_t best = 0, best_base = UINT64_MAX;
		for (uint32_t i = 0; i < h->chunk_count; i++) {
			struct shm_chunk *c = shm_chunk_at(h, i);
			uint32_t gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
			if ((gen & 1) || atomic_load_explicit(&c->state, memory_order_relaxed) != CHUNK_FULL)
				continue;
			if (c->base < best_base) {
				best_base = c->base;
				best = entry_of(i, gen);
			}
		}
		if (!best)
			return -1;
		if (win(h, best))
			return (int64_t)(uint32_t)best - 1;
	}
	return -1;
}

int64_t overwrite_take(struct overwrite_list *l, struct shm_header *h)
{
	uint32_t threads = atomic_load_explicit(&h->thread_serial, memory_order_relaxed);
	uint32_t share = h->chunk_count / (threads ? threads : 1);
	int64_t idx = -1;

	if (l->cnt < share)
		idx = steal_oldest(h);
	if (idx < 0)
		idx = take_own(l, h);
	if (idx < 0)
		idx = steal_oldest(h);
	return idx;
}
