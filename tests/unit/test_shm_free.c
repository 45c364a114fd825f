/* test_shm_free - the shared buffer's free queue of chunks (shm_free_push
 * / shm_free_pop in src/common/shm_layout.h): one pusher, many poppers.
 * FIFO order and exact counters on one thread, against a model queue;
 * then one pusher (needle record's drain) and threads popping (the
 * producers) while an owner table, claimed with an atomic exchange,
 * catches any chunk handed to two threads at once or lost, with the
 * queue run empty and wrapped around many times, and every chunk
 * accounted for at the end. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "common/shm_layout.h"

#define CHUNK_SIZE 256u

static struct shm_header *buffer_new(uint32_t count)
{
	uint64_t total = shm_chunks_offset(count) + (uint64_t)count * CHUNK_SIZE;
	struct shm_header *h = aligned_alloc(4096, (total + 4095) & ~4095ull);
	if (!h)
		return NULL;
	memset(h, 0, total);
	h->magic = SHM_MAGIC;
	h->version = SHM_VERSION;
	h->chunk_size = CHUNK_SIZE;
	h->chunk_count = count;
	h->total_size = total;
	return h;
}

static uint64_t pushed(struct shm_header *h)
{
	return atomic_load(&h->free_tail);
}

static uint64_t popped(struct shm_header *h)
{
	return atomic_load(&h->free_head);
}

static void single_thread(void)
{
	enum { N = 37 };
	struct shm_header *h = buffer_new(N);

	CHECK_EQ(shm_free_pop(h), -1, "an empty free queue pops -1");
	CHECK_EQ(popped(h), 0, "a failed pop leaves the head alone");

	for (uint32_t i = 0; i < N; i++) {
		atomic_store(&shm_chunk_at(h, i)->state, CHUNK_OWNED);
		shm_free_push(h, i);
	}
	int free_state = 0;
	for (uint32_t i = 0; i < N; i++)
		free_state += atomic_load(&shm_chunk_at(h, i)->state) == CHUNK_FREE;
	CHECK_EQ(free_state, N, "a pushed chunk is marked free");
	CHECK_EQ(pushed(h), N, "every push counts once");

	int order_ok = 1;
	for (uint32_t i = 0; i < N; i++)
		order_ok &= shm_free_pop(h) == (int64_t)i;
	CHECK(order_ok, "pops return the chunks in the order of their pushes (FIFO: the chunk freed longest ago)");
	CHECK_EQ(shm_free_pop(h), -1, "the queue is empty after popping every chunk");
	CHECK_EQ(popped(h), N, "every successful pop counts once, a failed one does not");

	/* Random interleaving against a model queue, wrapping the ring
	 * thousands of times. */
	int64_t model[N];
	size_t mhead = 0, mtail = 0;
	uint8_t held[N];
	memset(held, 1, sizeof(held));
	uint64_t x = 88172645463325252ull;
	int bad = 0;
	uint32_t pushes = 0, pops = 0;
	for (int step = 0; step < 200000; step++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x % 2 && mtail - mhead < N) {
			/* Push some chunk the test holds. */
			uint32_t idx = (uint32_t)(x >> 8) % N;
			while (!held[idx])
				idx = (idx + 1) % N;
			held[idx] = 0;
			shm_free_push(h, idx);
			model[mtail++ % N] = idx;
			pushes++;
		} else {
			int64_t got = shm_free_pop(h);
			int64_t want = mtail > mhead ? model[mhead++ % N] : -1;
			bad += got != want;
			if (got >= 0) {
				held[got] = 1;
				pops++;
			}
		}
	}
	CHECK_EQ(bad, 0, "200000 random pushes and pops agree with a model queue");
	CHECK_EQ(pushed(h), N + pushes, "the tail counts every push");
	CHECK_EQ(popped(h), N + pops, "the head counts every successful pop");
	free(h);
}

/* ---- concurrent ---- */

enum { THREADS = 4, ITERATIONS = 1000000, STRESS_CHUNKS = 6, HOLD_MAX = 3 };
#define RETURNED UINT32_MAX /* owner[]: given back, for the pusher to free */

struct stress {
	struct shm_header *h;
	_Atomic uint32_t owner[STRESS_CHUNKS]; /* 0 free, RETURNED, else thread number + 1 */
	_Atomic uint64_t double_owned, wrong_release, corrupted, bad_index;
	_Atomic int go, workers_left;
};

struct worker {
	struct stress *s;
	uint32_t id;
	uint64_t pops, empties;
	pthread_t thread;
};

/* A producer: takes chunks, writes them, gives them back (as it would
 * publish them to the ring for the reader). */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	uint32_t me = w->id + 1;
	int64_t held[HOLD_MAX];
	size_t n = 0;
	uint64_t x = 0x2545F4914F6CDD1Dull * me;

	while (!atomic_load(&s->go))
		;
	/* ITERATIONS tries, and on until this thread has popped
	 * STRESS_CHUNKS chunks: on a loaded machine the pusher may not have
	 * run during a thread's tries, and what the test counts must not
	 * hang on the scheduler (the pusher runs until every thread ends). */
	for (uint32_t i = 0; i < ITERATIONS || w->pops < STRESS_CHUNKS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* Hold up to HOLD_MAX chunks, so that the queue runs empty and
		 * the threads race for its last chunk. */
		if (n < HOLD_MAX && (n == 0 || x % 3)) {
			int64_t idx = shm_free_pop(s->h);
			if (idx < 0) {
				w->empties++;
			} else if (idx >= STRESS_CHUNKS) {
				atomic_fetch_add(&s->bad_index, 1);
			} else {
				w->pops++;
				uint32_t prev = atomic_exchange(&s->owner[idx], me);
				if (prev)
					atomic_fetch_add(&s->double_owned, 1);
				/* Write the chunk as an owner would. */
				struct shm_chunk *c = shm_chunk_at(s->h, (uint32_t)idx);
				c->tid = me;
				c->seq = i;
				held[n++] = idx;
			}
		}
		if (n && (n == HOLD_MAX || !(x % 3))) {
			size_t k = (x >> 16) % n;
			int64_t idx = held[k];
			held[k] = held[--n];
			struct shm_chunk *c = shm_chunk_at(s->h, (uint32_t)idx);
			if (c->tid != me)
				atomic_fetch_add(&s->corrupted, 1);
			if (atomic_exchange(&s->owner[idx], RETURNED) != me)
				atomic_fetch_add(&s->wrong_release, 1);
		}
	}
	while (n) {
		int64_t idx = held[--n];
		if (atomic_exchange(&s->owner[idx], RETURNED) != me)
			atomic_fetch_add(&s->wrong_release, 1);
	}
	atomic_fetch_sub(&s->workers_left, 1);
	return NULL;
}

/* The reader: the only pusher, freeing what the producers gave back. */
static uint64_t pusher_run(struct stress *s)
{
	uint64_t pushes = 0;
	for (;;) {
		int last = !atomic_load(&s->workers_left);
		for (uint32_t i = 0; i < STRESS_CHUNKS; i++) {
			uint32_t want = RETURNED;
			if (atomic_compare_exchange_strong(&s->owner[i], &want, 0)) {
				shm_free_push(s->h, i);
				pushes++;
			}
		}
		if (last)
			return pushes;
	}
}

static void concurrent(void)
{
	struct stress *s = calloc(1, sizeof(*s));
	struct worker w[THREADS];

	s->h = buffer_new(STRESS_CHUNKS);
	for (uint32_t i = 0; i < STRESS_CHUNKS; i++)
		shm_free_push(s->h, i);
	atomic_store(&s->workers_left, THREADS);
	for (uint32_t i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .s = s, .id = i };
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
			printf("FAIL: pthread_create\n");
			exit(1);
		}
	}
	atomic_store(&s->go, 1);
	uint64_t pushes = pusher_run(s);
	uint64_t pops = 0, empties = 0;
	for (uint32_t i = 0; i < THREADS; i++) {
		pthread_join(w[i].thread, NULL);
		pops += w[i].pops;
		empties += w[i].empties;
	}
	printf("      %d threads x %d iterations: %llu pops, %llu found the queue empty\n", THREADS, ITERATIONS,
	       (unsigned long long)pops, (unsigned long long)empties);
	CHECK_EQ(atomic_load(&s->bad_index), 0, "no pop returns an index outside the buffer");
	CHECK_EQ(atomic_load(&s->double_owned), 0, "no chunk is ever held by two threads at once");
	CHECK_EQ(atomic_load(&s->wrong_release), 0, "every chunk given back was owned by the thread giving it");
	CHECK_EQ(atomic_load(&s->corrupted), 0, "no chunk header was written by another thread while held");
	CHECK(pops >= THREADS * (uint64_t)STRESS_CHUNKS, "the threads popped chunks (%llu)", (unsigned long long)pops);
	CHECK_EQ(pushes, pops, "every chunk popped was given back and pushed again");
	CHECK(empties > 0, "the queue ran empty under the threads (%llu times)", (unsigned long long)empties);

	/* Every chunk is back, exactly once. */
	int seen[STRESS_CHUNKS] = { 0 };
	int64_t idx;
	size_t n = 0;
	int bad = 0;
	while ((idx = shm_free_pop(s->h)) >= 0 && n <= STRESS_CHUNKS) {
		n++;
		if (idx >= STRESS_CHUNKS || seen[idx]++)
			bad++;
	}
	CHECK(n == STRESS_CHUNKS && !bad && idx == -1, "all %d chunks are in the free queue at the end, once each (%zu)",
	      STRESS_CHUNKS, n);
	CHECK_EQ(popped(s->h), pops + STRESS_CHUNKS, "the head counts every pop made by every thread");
	CHECK_EQ(pushed(s->h), pushes + STRESS_CHUNKS, "the tail counts every push");
	free(s->h);
	free(s);
}

int main(void)
{
	single_thread();
	concurrent();
	return harness_exit();
}
