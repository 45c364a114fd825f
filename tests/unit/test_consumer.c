/* test_consumer - consumer slots, ops and immutable consumer lists
 * (src/agent/dispatch/consumer.c), compiled into this program.
 *
 * The program is linked with --wrap for malloc, calloc, realloc and free,
 * so every allocation consumer.c makes goes through the wrappers below:
 * they keep the set of live blocks (a free of anything else is counted as
 * bad), log what is freed while a window is open (to compare what
 * consumer_list_reclaim frees with what was retired), and can make the
 * next allocations fail. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dispatch/consumer.h"
#include "harness.h"

/* consumer_create with no extras, remembering why it failed. */
static int last_create_err;
static struct consumer *create_(needle_entry_fn entry, needle_exit_fn exit, void *user_data)
{
	return consumer_create(entry, exit, user_data, NULL, &last_create_err);
}

/* ---- allocation tracking ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

#define LIVE_BITS 18
#define LIVE_CAP (1u << LIVE_BITS)
static uintptr_t live[LIVE_CAP];
static size_t live_cnt;
static size_t bad_frees;
static int fail_allocs; /* the next n allocations fail */

#define LOG_CAP 65536
static uintptr_t freed_log[LOG_CAP];
static size_t freed_cnt;
static int logging;

static size_t live_hash(uintptr_t p)
{
	return (size_t)(((uint64_t)p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - LIVE_BITS));
}

static long live_find(uintptr_t p)
{
	for (size_t i = live_hash(p); live[i]; i = (i + 1) & (LIVE_CAP - 1))
		if (live[i] == p)
			return (long)i;
	return -1;
}

static void live_add(void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	size_t i = live_hash(p);
	while (live[i])
		i = (i + 1) & (LIVE_CAP - 1);
	live[i] = p;
	live_cnt++;
}

/* Linear probing with backward-shift deletion: no tombstones. */
static int live_del(void *ptr)
{
	long at = live_find((uintptr_t)ptr);
	if (at < 0)
		return 0;
	size_t i = (size_t)at, j = i;
	live[i] = 0;
	for (;;) {
		j = (j + 1) & (LIVE_CAP - 1);
		if (!live[j])
			break;
		size_t k = live_hash(live[j]);
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			live[i] = live[j];
			live[j] = 0;
			i = j;
		}
	}
	live_cnt--;
	return 1;
}

static int is_live(const void *p)
{
	return live_find((uintptr_t)p) >= 0;
}

void *__wrap_malloc(size_t n)
{
	if (fail_allocs) {
		fail_allocs--;
		return NULL;
	}
	void *p = __real_malloc(n);
	if (p)
		live_add(p);
	return p;
}

void *__wrap_calloc(size_t n, size_t sz)
{
	if (fail_allocs) {
		fail_allocs--;
		return NULL;
	}
	void *p = __real_calloc(n, sz);
	if (p)
		live_add(p);
	return p;
}

void *__wrap_realloc(void *old, size_t n)
{
	if (fail_allocs) {
		fail_allocs--;
		return NULL;
	}
	if (old && !is_live(old))
		bad_frees++;
	void *p = __real_realloc(old, n);
	if (p) {
		if (old)
			live_del(old);
		live_add(p);
	}
	return p;
}

void __wrap_free(void *p)
{
	if (!p)
		return;
	if (!live_del(p)) {
		bad_frees++; /* double free, or never allocated here */
		return;
	}
	if (logging && freed_cnt < LOG_CAP)
		freed_log[freed_cnt++] = (uintptr_t)p;
	__real_free(p);
}

static void log_start(void)
{
	freed_cnt = 0;
	logging = 1;
}

static void log_stop(void)
{
	logging = 0;
}

static int logged(const void *p)
{
	for (size_t i = 0; i < freed_cnt; i++)
		if (freed_log[i] == (uintptr_t)p)
			return 1;
	return 0;
}

/* ---- handlers (only their addresses matter) ---- */

static int e1(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx, (void)cookie, (void)data;
	return 0;
}
static int e2(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx, (void)cookie, (void)data;
	return 1;
}
static void x1(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)ctx, (void)cookie, (void)data;
}
static void x2(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)ctx, (void)cookie, (void)data;
	x1(ctx, cookie, data);
}

static uint32_t slot_of(const struct consumer *c)
{
	return (uint32_t)(c - consumer_table);
}

static uint32_t gen(const struct consumer *c)
{
	return atomic_load((_Atomic uint32_t *)&c->generation);
}

static const struct consumer_ops *ops_of(const struct consumer *c)
{
	return atomic_load((_Atomic(const struct consumer_ops *) *)&c->ops);
}

/* ---- ops ---- */

static uint32_t ops_distinct; /* distinct pairs requested so far */

static void test_ops(void)
{
	size_t live0 = live_cnt;
	const struct consumer_ops *a = consumer_ops_get(e1, x1, 0, NULL, NULL);
	const struct consumer_ops *b = consumer_ops_get(e1, x2, 0, NULL, NULL);
	const struct consumer_ops *c = consumer_ops_get(e2, x1, 0, NULL, NULL);
	const struct consumer_ops *d = consumer_ops_get(e1, NULL, 0, NULL, NULL);
	const struct consumer_ops *e = consumer_ops_get(NULL, x1, 0, NULL, NULL);
	const struct consumer_ops *f = consumer_ops_get(NULL, NULL, 0, NULL, NULL);
	const struct consumer_ops *all[] = { a, b, c, d, e, f };
	ops_distinct = 6;

	int distinct = 1, indexed = 1;
	for (size_t i = 0; i < 6; i++) {
		indexed &= consumer_ops_index(all[i]) == i;
		for (size_t j = 0; j < i; j++)
			distinct &= all[i] != all[j];
	}
	CHECK(distinct, "six different (entry, exit) pairs get six different ops");
	CHECK(indexed, "ops are numbered 0..5 in the order their pairs were first asked for");
	CHECK(a->entry == e1 && a->exit == x1 && b->exit == x2 && c->entry == e2 && !d->exit && !e->entry && !f->entry &&
		      !f->exit,
	      "each ops holds exactly its pair");

	int same = 1;
	for (int round = 0; round < 100; round++) {
		same &= consumer_ops_get(e1, x1, 0, NULL, NULL) == a && consumer_ops_get(e1, x2, 0, NULL, NULL) == b && consumer_ops_get(e2, x1, 0, NULL, NULL) == c &&
			consumer_ops_get(e1, NULL, 0, NULL, NULL) == d && consumer_ops_get(NULL, x1, 0, NULL, NULL) == e &&
			consumer_ops_get(NULL, NULL, 0, NULL, NULL) == f;
	}
	CHECK(same, "asking again for a pair returns its ops (600 requests)");
	const struct consumer_ops *g = consumer_ops_get(e2, x2, 0, NULL, NULL);
	ops_distinct++;
	CHECK_EQ(consumer_ops_index(g), 6, "the next new pair takes index 6: repeats did not grow the table");
	CHECK_EQ(live_cnt, live0, "ops take no heap allocation");
}

/* ---- create, set_ops ---- */

static void test_create(void)
{
	int tag;
	size_t live0 = live_cnt;
	struct consumer *c = create_(e1, x1, &tag);

	CHECK(c != NULL, "consumer_create returns a consumer");
	CHECK_EQ(slot_of(c), 0, "the first consumer takes slot 0");
	CHECK_EQ(c->slot, slot_of(c), "c->slot is its index in consumer_table");
	CHECK_EQ(gen(c), 1, "a fresh slot's first generation is 1 (odd: live)");
	CHECK(ops_of(c) == consumer_ops_get(e1, x1, 0, NULL, NULL), "its ops are the shared ops of its pair");
	CHECK(c->user_data == &tag, "user_data is kept");
	CHECK(c->solo && c->solo->cnt == 1 && c->solo->shared == 1 && c->solo->items[0] == c,
	      "its solo list holds it alone and is marked shared");
	CHECK(live_cnt == live0 + 1 && is_live(c->solo), "create allocates exactly the solo list");

	struct consumer *d = create_(e1, x1, NULL);
	CHECK_EQ(slot_of(d), 1, "the second consumer takes slot 1");
	CHECK(ops_of(d) == ops_of(c), "consumers with the same handlers share one ops");

	uint32_t before = ops_distinct;
	CHECK_EQ(consumer_set_ops(d, e2, x2), 0, "consumer_set_ops succeeds");
	CHECK(ops_of(d) == consumer_ops_get(e2, x2, 0, NULL, NULL) && ops_of(d)->entry == e2 && ops_of(d)->exit == x2,
	      "set_ops installs the shared ops of the new pair");
	CHECK(ops_of(c) == consumer_ops_get(e1, x1, 0, NULL, NULL), "another consumer's ops are untouched");
	CHECK_EQ(consumer_set_ops(d, e1, x1), 0, "set_ops back to the first pair");
	CHECK(ops_of(d) == ops_of(c), "back to the very same ops pointer");
	CHECK_EQ(consumer_ops_index(consumer_ops_get(e2, NULL, 0, NULL, NULL)), before,
		 "switching between known pairs added no ops (the next new pair takes index %u)", before);
	ops_distinct++;
	CHECK_EQ(gen(d), 1, "set_ops does not touch the generation");

	consumer_retire(c);
	consumer_retire(d);
	log_start();
	struct consumer_list *cs = c->solo, *ds = d->solo;
	consumer_destroy(c);
	consumer_destroy(d);
	log_stop();
	CHECK(freed_cnt == 2 && logged(cs) && logged(ds) && !c->solo && !d->solo,
	      "destroy frees exactly the solo lists");
	CHECK_EQ(live_cnt, live0, "nothing is left allocated");
}

/* ---- lists against a model ---- */

#define NC 8
#define NS 16
#define EXPECT_CAP 4096

struct model_site {
	struct consumer_list *list;
	struct consumer *v[NC];
	uint32_t n;
};

static const struct consumer_list *expected_retired[EXPECT_CAP];
static size_t expected_cnt;

static int list_matches(const struct model_site *s)
{
	const struct consumer_list *l = s->list;
	if (!s->n)
		return l == NULL;
	if (s->n == 1)
		return l == s->v[0]->solo && l->shared == 1 && l->cnt == 1 && l->items[0] == s->v[0];
	if (!l || l->shared || l->cnt != s->n)
		return 0;
	for (uint32_t i = 0; i < s->n; i++)
		if (l->items[i] != s->v[i])
			return 0;
	return is_live(l);
}

static int reclaim_and_check(void)
{
	int ok = consumer_list_retired_count() == expected_cnt;
	log_start();
	consumer_list_reclaim();
	log_stop();
	ok &= freed_cnt == expected_cnt && consumer_list_retired_count() == 0;
	for (size_t i = 0; i < expected_cnt; i++)
		ok &= logged(expected_retired[i]);
	expected_cnt = 0;
	return ok;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Replace the site's list, as a link does: publish the new one, retire
 * the old one. */
static void replace(struct model_site *s, struct consumer_list *nl)
{
	struct consumer_list *old = s->list;
	s->list = nl;
	if (old == nl)
		return;
	size_t before = consumer_list_retired_count();
	consumer_list_retire(old);
	if (old && !old->shared)
		expected_retired[expected_cnt++] = old;
	if (consumer_list_retired_count() != before + (old && !old->shared))
		bad_frees += 1000; /* shows as a failure below */
}

static void test_lists(void)
{
	struct consumer *cons[NC];
	struct model_site sites[NS];
	int mismatches = 0, reclaim_bad = 0, alloc_bad = 0, leak_bad = 0, err_bad = 0;
	size_t ops = 0, reclaims = 0, seqs = 0;

	for (int i = 0; i < NC; i++)
		cons[i] = create_(i % 2 ? e1 : e2, x1, NULL);
	/* Warm up the retired array (its one realloc is not a list). */
	{
		struct model_site s = { 0 };
		s.list = consumer_list_add(cons[0]->solo, cons[1]);
		replace(&s, NULL);
		reclaim_bad += !reclaim_and_check();
	}
	size_t live0 = live_cnt;

	for (uint64_t seed = 1; seed <= 300; seed++, seqs++) {
		rng_state = seed * 0x9E3779B97F4A7C15ull | 1;
		memset(sites, 0, sizeof(sites));
		int steps = 50 + (int)(rng() % 400);
		for (int step = 0; step < steps; step++, ops++) {
			struct model_site *s = &sites[rng() % NS];
			struct consumer *c = cons[rng() % NC];
			uint32_t at = s->n;
			for (uint32_t i = 0; i < s->n; i++)
				if (s->v[i] == c)
					at = i;
			size_t live_before = live_cnt;
			uint64_t r = rng() % 10;
			if (at == s->n && r < 7) {
				struct consumer_list *nl = consumer_list_add(s->list, c);
				s->v[s->n++] = c;
				/* Only a list of two or more is a new allocation. */
				alloc_bad += live_cnt != live_before + (s->n >= 2);
				replace(s, nl);
			} else {
				/* Remove c (or, when it is not there, nothing changes). */
				int err = 1;
				struct consumer_list *nl = consumer_list_remove(s->list, c, &err);
				err_bad += err != 0;
				if (at < s->n) {
					memmove(&s->v[at], &s->v[at + 1], (s->n - at - 1) * sizeof(s->v[0]));
					s->n--;
				}
				replace(s, nl);
			}
			mismatches += !list_matches(s);
			if (expected_cnt > EXPECT_CAP - 8 || rng() % 25 == 0) {
				reclaim_bad += !reclaim_and_check();
				reclaims++;
			}
		}
		/* Every list still published is live (or a solo), none freed. */
		for (int i = 0; i < NS; i++)
			mismatches += !list_matches(&sites[i]);
		/* Empty every site in a random order of consumers. */
		for (int i = 0; i < NS; i++) {
			while (sites[i].n) {
				int err = 1;
				struct consumer *c = sites[i].v[rng() % sites[i].n];
				uint32_t at = 0;
				while (sites[i].v[at] != c)
					at++;
				struct consumer_list *nl = consumer_list_remove(sites[i].list, c, &err);
				err_bad += err != 0;
				memmove(&sites[i].v[at], &sites[i].v[at + 1], (sites[i].n - at - 1) * sizeof(c));
				sites[i].n--;
				replace(&sites[i], nl);
				mismatches += !list_matches(&sites[i]);
			}
		}
		reclaim_bad += !reclaim_and_check();
		reclaims++;
		leak_bad += live_cnt != live0;
	}
	printf("      %zu random sequences, %zu list operations, %zu reclaims\n", seqs, ops, reclaims);
	CHECK_EQ(mismatches, 0, "every list holds the model's consumers in attach order (solo list for one, NULL for none)");
	CHECK_EQ(alloc_bad, 0, "adding allocates one list only when the result holds two or more");
	CHECK_EQ(err_bad, 0, "consumer_list_remove reports no error");
	CHECK_EQ(reclaim_bad, 0, "reclaim frees exactly the lists retired since the last one, never a solo list");
	CHECK_EQ(leak_bad, 0, "after each sequence the heap holds what it held before it (no list leaked)");
	CHECK_EQ(bad_frees, 0, "no double free, no free of a block not allocated");

	/* Solo lists given to retire explicitly are not taken. */
	size_t before = consumer_list_retired_count();
	consumer_list_retire(cons[0]->solo);
	consumer_list_retire(NULL);
	CHECK_EQ(consumer_list_retired_count(), before, "retiring a solo list or NULL is a no-op");
	log_start();
	consumer_list_reclaim();
	log_stop();
	CHECK(freed_cnt == 0 && is_live(cons[0]->solo), "reclaim then frees nothing: the solo list lives on");

	/* Removing a consumer that is not there from a solo list keeps it. */
	int err = 1;
	CHECK(consumer_list_remove(cons[0]->solo, cons[1], &err) == cons[0]->solo && err == 0,
	      "removing an absent consumer from a solo list returns that solo list");
	CHECK(consumer_list_remove(NULL, cons[1], &err) == NULL && err == 0, "removing from no list gives no list");
	CHECK(consumer_list_add(NULL, cons[2]) == cons[2]->solo, "adding to no list gives the solo list");

	for (int i = 0; i < NC; i++) {
		consumer_retire(cons[i]);
		consumer_destroy(cons[i]);
	}
}

/* ---- generations and slot reuse ---- */

static void test_slots(void)
{
	size_t live0 = live_cnt;
	/* The NC + 2 slots used so far are free (destroyed); take them all back
	 * first, so that the next ones are fresh. */
	struct consumer *old[NC + 2];
	int reused_ok = 1;
	for (int i = 0; i < NC + 2; i++) {
		old[i] = create_(e1, x1, NULL);
		reused_ok &= old[i] && slot_of(old[i]) < NC + 2 && (gen(old[i]) & 1);
	}
	CHECK(reused_ok, "destroyed slots are handed out again before fresh ones, with odd generations");

	struct consumer *a = create_(e1, x1, NULL);
	uint32_t sa = slot_of(a), ga = gen(a);
	CHECK(sa == NC + 2 && ga == 1, "a fresh slot (%u) starts at generation 1", sa);
	consumer_retire(a);
	CHECK_EQ(gen(a), 2, "retire makes the generation even");

	struct consumer *b = create_(e1, x1, NULL);
	CHECK(b != a && slot_of(b) == sa + 1, "a retired, not yet destroyed slot is not reused (got slot %u)",
	      slot_of(b));

	struct consumer_list *as = a->solo;
	log_start();
	consumer_destroy(a);
	log_stop();
	CHECK(freed_cnt == 1 && logged(as), "destroy frees the solo list and nothing else");

	struct consumer *c = create_(e2, x2, NULL);
	CHECK(c == a, "after destroy the slot is reused (slot %u)", slot_of(c));
	CHECK_EQ(gen(c), 3, "the reused slot's generation is odd again and newer (3)");
	CHECK(ops_of(c) == consumer_ops_get(e2, x2, 0, NULL, NULL) && c->solo && c->solo->items[0] == c && is_live(c->solo),
	      "the reused slot has its new handlers and a new solo list");

	/* Slots come back last destroyed, first reused. */
	consumer_retire(b);
	consumer_retire(c);
	consumer_destroy(b);
	consumer_destroy(c);
	struct consumer *d = create_(e1, x1, NULL), *e = create_(e1, x1, NULL);
	CHECK(d == c && e == b, "destroyed slots are reused last in, first out");

	/* Many cycles on one slot: odd while live, even once retired. */
	int parity_ok = 1;
	uint32_t s = slot_of(d), last = gen(d);
	for (int i = 0; i < 1000; i++) {
		consumer_retire(d);
		parity_ok &= gen(d) == last + 1 && !(gen(d) & 1);
		consumer_destroy(d);
		d = create_(e1, x1, NULL);
		parity_ok &= slot_of(d) == s && gen(d) == last + 2 && (gen(d) & 1);
		last = gen(d);
	}
	CHECK(parity_ok, "1000 create/retire/destroy cycles on one slot: generation +1 each step, odd live, even retired");

	consumer_retire(d);
	consumer_retire(e);
	consumer_destroy(d);
	consumer_destroy(e);
	for (int i = 0; i < NC + 2; i++) {
		consumer_retire(old[i]);
		consumer_destroy(old[i]);
	}
	CHECK_EQ(live_cnt, live0, "no solo list left behind");
	CHECK_EQ(bad_frees, 0, "no bad free");
}

/* ---- allocation failures ---- */

static void test_failures(void)
{
	size_t live0 = live_cnt;
	struct consumer *a = create_(e1, x1, NULL), *b = create_(e1, x1, NULL),
			*c = create_(e1, x1, NULL);
	uint32_t next_slot;
	{
		struct consumer *probe = create_(e1, x1, NULL);
		next_slot = slot_of(probe);
		consumer_retire(probe);
		consumer_destroy(probe);
	}
	uint32_t g = consumer_table[next_slot].generation;

	fail_allocs = 1;
	struct consumer *f = create_(e1, x1, NULL);
	CHECK(f == NULL && !consumer_table_full(), "create fails when its solo list cannot be allocated (not 'full')");
	CHECK_EQ(consumer_table[next_slot].generation, g, "the failed create left the slot's generation alone");
	f = create_(e1, x1, NULL);
	CHECK(f && slot_of(f) == next_slot, "the slot of the failed create is the next one handed out");

	struct consumer_list *ab = consumer_list_add(a->solo, b);
	size_t live1 = live_cnt;
	fail_allocs = 1;
	CHECK(consumer_list_add(ab, c) == NULL && live_cnt == live1, "add returns NULL when it cannot allocate");
	fail_allocs = 1;
	CHECK(consumer_list_add(NULL, c) == c->solo, "add to an empty site needs no allocation");
	fail_allocs = 0;
	struct consumer_list *abc = consumer_list_add(ab, c);
	int err = 0;
	fail_allocs = 1;
	CHECK(consumer_list_remove(abc, b, &err) == abc && err == -ENOMEM,
	      "remove returns the old list and -ENOMEM when it cannot allocate");
	fail_allocs = 1;
	CHECK(consumer_list_remove(ab, b, &err) == a->solo && err == 0,
	      "remove down to one consumer needs no allocation (its solo list)");
	fail_allocs = 0;

	/* The retired array full and unable to grow: the list is kept (leaked),
	 * never freed early.  Retire lists with the next allocation armed to
	 * fail until one is not recorded: that retire needed to grow the array. */
	static struct consumer_list *recorded[70000];
	size_t n = 0;
	struct consumer_list *extra = NULL;
	int armed_ok = 1;
	while (n < 70000) {
		struct consumer_list *l = consumer_list_add(ab, c);
		size_t before = consumer_list_retired_count();
		fail_allocs = 1;
		consumer_list_retire(l);
		if (consumer_list_retired_count() == before) {
			armed_ok &= fail_allocs == 0; /* the failed allocation was the realloc */
			extra = l;
			break;
		}
		armed_ok &= fail_allocs == 1; /* no allocation while there was room */
		fail_allocs = 0;
		recorded[n++] = l;
	}
	fail_allocs = 0;
	CHECK(extra && armed_ok && n >= 256 && !(n & (n - 1)),
	      "the retired array fills at a power of two (%zu) and only then tries to grow", n);
	log_start();
	consumer_list_reclaim();
	log_stop();
	int all = freed_cnt == n;
	for (size_t i = 0; i < n; i++)
		all &= logged(recorded[i]);
	CHECK(all && extra && !logged(extra) && is_live(extra),
	      "reclaim frees the %zu recorded lists and not the one it could not record", n);
	free(extra);

	consumer_list_retire(abc);
	consumer_list_retire(ab);
	consumer_list_reclaim();
	struct consumer *all_c[] = { a, b, c, f };
	for (size_t i = 0; i < 4; i++) {
		consumer_retire(all_c[i]);
		consumer_destroy(all_c[i]);
	}
	CHECK_EQ(live_cnt, live0, "the failures leaked nothing");
	CHECK_EQ(bad_frees, 0, "no bad free");
}

/* ---- full tables ---- */

static struct consumer *every[CONSUMER_MAX];

static void test_full(void)
{
	size_t live0 = live_cnt;
	size_t n = 0;
	CHECK(!consumer_table_full(), "the table is not full to begin with");
	while (n < CONSUMER_MAX && (every[n] = create_(e1, x1, NULL)))
		n++;
	CHECK_EQ(n, CONSUMER_MAX, "exactly CONSUMER_MAX consumers can live at once");
	int distinct = 1;
	static uint8_t seen[CONSUMER_MAX];
	for (size_t i = 0; i < n; i++)
		distinct &= !seen[slot_of(every[i])]++;
	CHECK(distinct, "each has a slot of its own");
	CHECK(create_(e1, x1, NULL) == NULL && consumer_table_full(), "one more fails, and the table says full");

	uint32_t victim = 12345, victim_slot = slot_of(every[victim]);
	consumer_retire(every[victim]);
	consumer_destroy(every[victim]);
	CHECK(!consumer_table_full(), "a destroyed slot makes room");
	every[victim] = create_(e2, x1, NULL);
	CHECK(every[victim] && slot_of(every[victim]) == victim_slot, "and the next create takes it");
	CHECK(consumer_table_full(), "full again");
	for (size_t i = 0; i < n; i++) {
		consumer_retire(every[i]);
		consumer_destroy(every[i]);
	}
	CHECK(!consumer_table_full() && live_cnt == live0, "all destroyed: not full, every solo list freed");

	/* The ops table: CONSUMER_OPS_MAX distinct pairs, then NULL. */
	struct consumer *c = create_(e1, x1, NULL);
	const struct consumer_ops *before = ops_of(c);
	size_t got = 0;
	for (uintptr_t i = 0; i < CONSUMER_OPS_MAX + 10; i++) {
		needle_entry_fn fe = (needle_entry_fn)(0x100000 + i * 16);
		if (consumer_ops_get(fe, x2, 0, NULL, NULL))
			got++;
	}
	CHECK_EQ(got, CONSUMER_OPS_MAX - ops_distinct, "the ops table takes exactly CONSUMER_OPS_MAX pairs in all");
	CHECK(consumer_ops_get(e1, x1, 0, NULL, NULL) == before, "a known pair is still found when the table is full");
	needle_entry_fn unknown = (needle_entry_fn)(uintptr_t)0x7000000;
	CHECK_EQ(consumer_set_ops(c, unknown, x1), -ENOSPC, "set_ops to a new pair fails with -ENOSPC");
	CHECK(ops_of(c) == before, "and leaves the consumer's ops as they were");
	CHECK_EQ(consumer_set_ops(c, e2, x2), 0, "set_ops to a known pair still works");
	CHECK(create_(unknown, x1, NULL) == NULL, "create with a new pair fails");
	consumer_retire(c);
	consumer_destroy(c);
	CHECK_EQ(live_cnt, live0, "nothing left allocated");
	CHECK_EQ(bad_frees, 0, "no bad free");
}

int main(void)
{
	test_ops();
	test_create();
	test_lists();
	test_slots();
	test_failures();
	test_full();
	return harness_exit();
}
