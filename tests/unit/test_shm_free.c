/* test_shm_free - the shared buffer's free list of chunks (shm_free_push /
 * shm_free_pop in src/common/shm_layout.h), a Treiber stack with an ABA
 * tag: LIFO order and exact tags on one thread, then threads popping and
 * pushing concurrently while an owner table (claimed with an atomic
 * exchange) catches any chunk handed to two threads at once, and every
 * chunk accounted for at the end.
 *
 * An ABA race (a pop suspended between reading the head and its CAS
 * while the same chunk is popped and pushed back) needs a preemption in
 * a window of a few instructions, so the concurrent run finds a missing
 * tag only now and then; the exact tag counts (one increment per push
 * and per successful pop, on one thread and summed over all threads) are
 * what fail every time when the tag is lost. */
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

static uint32_t head_tag(struct shm_header *h)
{
	return (uint32_t)(atomic_load(&h->free_head) >> 32);
}

static void single_thread(void)
{
	enum { N = 37 };
	struct shm_header *h = buffer_new(N);

	CHECK_EQ(shm_free_pop(h), -1, "an empty free list pops -1");
	CHECK_EQ(atomic_load(&h->free_head), 0, "a failed pop leaves the head alone");

	for (uint32_t i = 0; i < N; i++) {
		atomic_store(&shm_chunk_at(h, i)->state, CHUNK_OWNED);
		shm_free_push(h, i);
	}
	int free_state = 0;
	for (uint32_t i = 0; i < N; i++)
		free_state += atomic_load(&shm_chunk_at(h, i)->state) == CHUNK_FREE;
	CHECK_EQ(free_state, N, "a pushed chunk is marked free");
	CHECK_EQ(head_tag(h), N, "every push bumps the tag once");

	int order_ok = 1;
	for (uint32_t i = N; i-- > 0;)
		order_ok &= shm_free_pop(h) == (int64_t)i;
	CHECK(order_ok, "pops return the chunks in reverse order of their pushes (LIFO)");
	CHECK_EQ(shm_free_pop(h), -1, "the list is empty after popping every chunk");
	CHECK_EQ(head_tag(h), 2 * N, "every successful pop bumps the tag once, a failed one does not");
	CHECK_EQ(atomic_load(&h->free_head) & 0xffffffffu, 0, "the empty head holds no index");

	/* Random interleaving against a model stack. */
	int64_t model[N];
	size_t depth = 0;
	uint8_t held[N];
	memset(held, 1, sizeof(held));
	uint64_t x = 88172645463325252ull;
	int bad = 0;
	uint32_t ops = 0;
	for (int step = 0; step < 200000; step++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x % 2 && depth < N) {
			/* Push some chunk the test holds. */
			uint32_t idx = (uint32_t)(x >> 8) % N;
			while (!held[idx])
				idx = (idx + 1) % N;
			held[idx] = 0;
			shm_free_push(h, idx);
			model[depth++] = idx;
			ops++;
		} else {
			int64_t got = shm_free_pop(h);
			int64_t want = depth ? model[--depth] : -1;
			bad += got != want;
			if (got >= 0) {
				held[got] = 1;
				ops++;
			}
		}
	}
	CHECK_EQ(bad, 0, "200000 random pushes and pops agree with a model stack");
	CHECK_EQ(head_tag(h), 2 * N + ops, "the tag counts every push and successful pop");
	free(h);
}

/* ---- concurrent ---- */

enum { THREADS = 4, ITERATIONS = 1000000, STRESS_CHUNKS = 6, HOLD_MAX = 3 };

struct stress {
	struct shm_header *h;
	_Atomic uint32_t owner[STRESS_CHUNKS]; /* 0 free, else thread number + 1 */
	_Atomic uint64_t double_owned, wrong_release, corrupted, bad_index;
	_Atomic int go;
};

struct worker {
	struct stress *s;
	uint32_t id;
	uint64_t pops, empties;
	pthread_t thread;
};

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
	for (uint32_t i = 0; i < ITERATIONS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* Hold up to HOLD_MAX chunks, so that the list runs empty and
		 * the same chunk comes back to the head often (ABA). */
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
			if (atomic_exchange(&s->owner[idx], 0) != me)
				atomic_fetch_add(&s->wrong_release, 1);
			shm_free_push(s->h, (uint32_t)idx);
		}
	}
	while (n) {
		int64_t idx = held[--n];
		if (atomic_exchange(&s->owner[idx], 0) != me)
			atomic_fetch_add(&s->wrong_release, 1);
		shm_free_push(s->h, (uint32_t)idx);
	}
	return NULL;
}

static void concurrent(void)
{
	struct stress *s = calloc(1, sizeof(*s));
	struct worker w[THREADS];

	s->h = buffer_new(STRESS_CHUNKS);
	for (uint32_t i = STRESS_CHUNKS; i-- > 0;)
		shm_free_push(s->h, i);
	for (uint32_t i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .s = s, .id = i };
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
			printf("FAIL: pthread_create\n");
			exit(1);
		}
	}
	atomic_store(&s->go, 1);
	uint64_t pops = 0, empties = 0;
	for (uint32_t i = 0; i < THREADS; i++) {
		pthread_join(w[i].thread, NULL);
		pops += w[i].pops;
		empties += w[i].empties;
	}
	printf("      %d threads x %d iterations: %llu pops, %llu found the list empty\n", THREADS, ITERATIONS,
	       (unsigned long long)pops, (unsigned long long)empties);
	CHECK_EQ(atomic_load(&s->bad_index), 0, "no pop returns an index outside the buffer");
	CHECK_EQ(atomic_load(&s->double_owned), 0, "no chunk is ever held by two threads at once");
	CHECK_EQ(atomic_load(&s->wrong_release), 0, "every chunk pushed back was owned by the pusher");
	CHECK_EQ(atomic_load(&s->corrupted), 0, "no chunk header was written by another thread while held");
	CHECK(pops >= THREADS, "the threads popped chunks (%llu)", (unsigned long long)pops);

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
	CHECK(n == STRESS_CHUNKS && !bad && idx == -1, "all %d chunks are on the free list at the end, once each (%zu)",
	      STRESS_CHUNKS, n);
	CHECK_EQ(head_tag(s->h), STRESS_CHUNKS + 2 * pops + STRESS_CHUNKS,
		 "the tag counts every push and pop made by every thread");
	free(s->h);
	free(s);
}

int main(void)
{
	single_thread();
	concurrent();
	return harness_exit();
}
