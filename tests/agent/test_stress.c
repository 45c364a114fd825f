/* test_stress - 4 threads call 1,200 distinct functions in tight loops
 * (with patchable entries; test_stress_reloc: without, as relocated sites)
 * while the main thread attaches and detaches a link on all of them 1,000
 * times.  A second link, attached to 100 of the functions for the whole
 * run, must see exactly the calls the workers made to them; every call
 * must return what it returns untraced; and in windows where the churning
 * link is stable, its counts must be exact too. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "harness.h"
#include "needle.h"

/* The relocated variant builds 10,000 functions and fewer rounds. */
#ifndef FUNCS
#define FUNCS 1200
#endif
#define STABLE_FUNCS 100
#define WORKERS 4
#ifndef ROUNDS
#define ROUNDS 1000
#endif
#define WINDOW_EVERY 100
#define WINDOW_PASSES 3

/* What stress_<i>(arg) returns (gen_funcs.sh; mul3 for relocated sites). */
#ifndef STRESS_EXPECT
#define STRESS_EXPECT(arg, i) ((arg) + (i))
#endif
/* The function index that a return value carries in its high half. */
#ifndef STRESS_INDEX
#define STRESS_INDEX(ret) ((ret) >> 32)
#endif

extern long (*const stress_table[FUNCS])(long);

static _Atomic long stable_entries[STABLE_FUNCS], stable_exits[STABLE_FUNCS];
static _Atomic long churn_entries, churn_exits;
static _Atomic int stop;
static _Atomic long wrong_results;
/* Window protocol: main bumps window_gen; each worker makes WINDOW_PASSES
 * passes over all functions, then bumps window_done. */
static _Atomic int window_gen, window_done;

struct worker {
	pthread_t thread;
	long calls[STABLE_FUNCS];
};

static int stable_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)data;
	*cookie = ctx->func->site_id;
	long i = (long)needle_arg(ctx, 0) >> 32;
	stable_entries[i]++;
	return 0;
}

static void stable_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)data;
	if (cookie == ctx->func->site_id)
		stable_exits[(long)STRESS_INDEX((long)needle_retval(ctx))]++;
}

static int churn_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	churn_entries++;
	return 0;
}

static void churn_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	churn_exits++;
}

static void one_pass(struct worker *w)
{
	for (long i = 0; i < FUNCS; i++) {
		/* The high half carries the function index for the stable handler. */
		long arg = (i << 32) | (i & 0xff);
		if (stress_table[i](arg) != STRESS_EXPECT(arg, i))
			wrong_results++;
		if (i < STABLE_FUNCS)
			w->calls[i]++;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int seen = 0;

	while (!atomic_load(&stop)) {
		int gen = atomic_load(&window_gen);
		if (gen != seen) {
			for (int p = 0; p < WINDOW_PASSES; p++)
				one_pass(w);
			seen = gen;
			atomic_fetch_add(&window_done, 1);
			while (atomic_load(&window_gen) == gen && !atomic_load(&stop))
				;
			continue;
		}
		one_pass(w);
	}
	return NULL;
}

int main(void)
{
	static struct worker workers[WORKERS];
	const char *stable_pat[STABLE_FUNCS];
	static char names[STABLE_FUNCS][32];
	const char *churn_pat[] = { "stress_*" };
	struct needle_link *stable = NULL, *churn = NULL;
	int attach_failures = 0, window_mismatch = 0;

	for (int i = 0; i < STABLE_FUNCS; i++) {
		snprintf(names[i], sizeof(names[i]), "stress_%d", i);
		stable_pat[i] = names[i];
	}
	struct needle_attach_opts sopts = {
		.sz = sizeof(sopts), .patterns = stable_pat, .pattern_cnt = STABLE_FUNCS,
		.entry = stable_entry, .exit = stable_exit,
	};
	CHECK_EQ(needle_attach(&sopts, &stable), STABLE_FUNCS, "stable link on 100 functions");

	for (int i = 0; i < WORKERS; i++)
		pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);

	struct needle_attach_opts copts = {
		.sz = sizeof(copts), .patterns = churn_pat, .pattern_cnt = 1,
		.entry = churn_entry, .exit = churn_exit,
	};
	for (int round = 0; round < ROUNDS; round++) {
		int n = needle_attach(&copts, &churn);
		if (n != FUNCS) {
			attach_failures++;
			continue;
		}
		if (round % WINDOW_EVERY == 0) {
			/* Workers are mid-pass: wait for a fresh window in which
			 * each makes exactly WINDOW_PASSES passes. */
			atomic_store(&window_done, 0);
			atomic_fetch_add(&window_gen, 1);
			while (atomic_load(&window_done) < WORKERS)
				;
			/* All workers are parked now: counts are stable. */
			long base_e = churn_entries, base_x = churn_exits;
			atomic_store(&window_done, 0);
			atomic_fetch_add(&window_gen, 1);
			while (atomic_load(&window_done) < WORKERS)
				;
			long de = churn_entries - base_e, dx = churn_exits - base_x;
			if (de != (long)WORKERS * WINDOW_PASSES * FUNCS || dx != de)
				window_mismatch++;
		}
		if (needle_link_detach(churn))
			attach_failures++;
		needle_link_destroy(churn);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(workers[i].thread, NULL);

	CHECK_EQ(attach_failures, 0, "%d attach/detach rounds of %d functions with %d threads running", ROUNDS, FUNCS,
		 WORKERS);
	CHECK_EQ(window_mismatch, 0, "churning link exact in stable windows (%d windows)", ROUNDS / WINDOW_EVERY);
	CHECK_EQ(wrong_results, 0, "every traced call returned its untraced result");
	long missing_e = 0, missing_x = 0, total = 0;
	for (int i = 0; i < STABLE_FUNCS; i++) {
		long calls = 0;
		for (int w = 0; w < WORKERS; w++)
			calls += workers[w].calls[i];
		total += calls;
		missing_e += calls - stable_entries[i];
		missing_x += calls - stable_exits[i];
	}
	CHECK(total > 0, "workers made %ld calls to the stable functions", total);
	CHECK_EQ(missing_e, 0, "stable link saw every entry despite the churn");
	CHECK_EQ(missing_x, 0, "stable link saw every exit despite the churn");
	CHECK_EQ(needle_link_detach(stable), 0, "stable link detaches");
	needle_link_destroy(stable);

	struct needle_stats st = { .sz = sizeof(st) };
	needle_get_stats(&st);
	CHECK_EQ(st.sites_enabled, 0, "no site left enabled");
	return harness_exit();
}
