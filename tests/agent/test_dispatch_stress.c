/* test_dispatch_stress - RCU on the dispatch path: 4 threads hit 1,000
 * sites while the main thread attaches and detaches consumers 10,000
 * times.  Each consumer's handlers count into memory allocated for it
 * alone, which is freed (and, under AddressSanitizer, poisoned) the moment
 * its detach returns: a handler that ran after its detach returned would
 * be a use after free.  A second consumer stays attached throughout and
 * must count exactly; so must each churning consumer in windows where the
 * workers make a known number of calls. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "needle.h"

#define FUNCS 1000
#define WORKERS 4
#define ROUNDS 10000
#define WINDOW_EVERY 1000

extern long (*const dstress_table[FUNCS])(long);

struct counter {
	_Atomic long entries, exits;
	long canary;
};

static _Atomic int stop, window_gen, window_done;
static _Atomic long stable_entries;
static long worker_calls[WORKERS];

static int count_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	struct counter *c = data;
	(void)ctx;
	*cookie = (uint64_t)c->canary;
	atomic_fetch_add_explicit(&c->entries, 1, memory_order_relaxed);
	return 0;
}

static void count_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	struct counter *c = data;
	(void)ctx;
	if (cookie == (uint64_t)c->canary)
		atomic_fetch_add_explicit(&c->exits, 1, memory_order_relaxed);
}

static int stable_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	atomic_fetch_add_explicit(&stable_entries, 1, memory_order_relaxed);
	return 0;
}

static void pass_all(long *calls)
{
	for (long i = 0; i < FUNCS; i++)
		dstress_table[i](i);
	*calls += FUNCS;
}

static void *worker(void *arg)
{
	long *calls = arg;
	int seen = 0;
	while (!atomic_load(&stop)) {
		int gen = atomic_load(&window_gen);
		if (gen != seen) {
			pass_all(calls);
			seen = gen;
			atomic_fetch_add(&window_done, 1);
			while (atomic_load(&window_gen) == gen && !atomic_load(&stop))
				;
			continue;
		}
		pass_all(calls);
	}
	return NULL;
}

static struct needle_link *attach(needle_entry_fn entry, needle_exit_fn exit, void *data)
{
	const char *pat[] = { "dstress_*" };
	struct needle_link *link = NULL;
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pat, .pattern_cnt = 1,
					.entry = entry, .exit = exit, .user_data = data };
	return needle_attach(&o, &link) == FUNCS ? link : NULL;
}

int main(void)
{
	pthread_t t[WORKERS];
	struct needle_link *stable = attach(stable_entry, NULL, NULL);
	long failures = 0, window_bad = 0, nosync_rounds = 0;

	CHECK(stable != NULL, "stable consumer on 1,000 sites");
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, &worker_calls[i]);
	for (int round = 0; round < ROUNDS; round++) {
		struct counter *c = calloc(1, sizeof(*c));
		c->canary = round + 1;
		struct needle_link *link = attach(count_entry, count_exit, c);
		if (!link) {
			failures++;
			free(c);
			continue;
		}
		if (round % WINDOW_EVERY == 0) {
			/* Workers mid-pass: start a fresh window of one pass each. */
			atomic_store(&window_done, 0);
			atomic_fetch_add(&window_gen, 1);
			while (atomic_load(&window_done) < WORKERS)
				;
			long e0 = c->entries, x0 = c->exits;
			atomic_store(&window_done, 0);
			atomic_fetch_add(&window_gen, 1);
			while (atomic_load(&window_done) < WORKERS)
				;
			window_bad += c->entries - e0 != WORKERS * FUNCS || c->exits - x0 != WORKERS * FUNCS;
		}
		if (round % 2) {
			failures += needle_link_detach(link) != 0;
		} else {
			/* detach_nosync, then one sync for it */
			failures += needle_link_detach_nosync(link) != 0;
			failures += needle_sync() != 0;
			nosync_rounds++;
		}
		needle_link_destroy(link);
		/* No handler of this consumer may run from here on. */
		memset(c, 0xa5, sizeof(*c));
		free(c);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	long calls = 0;
	for (int i = 0; i < WORKERS; i++)
		calls += worker_calls[i];
	CHECK_EQ(failures, 0, "%d attach/detach rounds (%ld with detach_nosync + sync)", ROUNDS, nosync_rounds);
	CHECK_EQ(window_bad, 0, "churning consumers exact in %d stable windows", ROUNDS / WINDOW_EVERY);
	CHECK_EQ(stable_entries, calls, "the stable consumer saw every one of %ld calls", calls);
	needle_link_destroy(stable);
	return harness_exit();
}
