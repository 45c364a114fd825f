/* test_site_table - site storage and its address and name indexes
 * (src/agent/sites/site_table.c), compiled into this program: random
 * addresses and names (the same static function name in several
 * "modules"), lookups of every site and of every address between two
 * sites, endbr64 sites, sites of unloaded objects left out of both
 * indexes and their addresses reused, and truncation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "agent/sites/site_table.h"

static uint64_t rng_state = 0x853c49e6748fea9bull;
static uint64_t rng(void)
{
	return harness_xorshift(&rng_state);
}

/* Stand-ins for loaded objects: only their addresses are used. */
static char modules[8];
#define MODULE(i) ((struct module *)&modules[i])

#define NAMES 6000 /* some names have no site, some one, some several */
static char names[NAMES][24];

struct expect {
	struct site *s;
	uint64_t addr, ip;
	const char *name;
	int gone;
};

#define N_SITES 10000 /* more than one chunk of 4096 sites */
static struct expect ex[N_SITES + 2100];
static size_t ex_cnt;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static struct site *add(uint64_t addr, int endbr, const char *name, int module)
{
	struct site proto;
	memset(&proto, 0, sizeof(proto));
	proto.func.site_addr = addr;
	proto.func.ip = endbr ? addr - 4 : addr;
	proto.func.name = name;
	proto.func.site_id = 0xdeadbeef; /* the table assigns it */
	proto.module = MODULE(module);
	proto.form = (uint8_t)(endbr + 1);
	struct site *s = site_table_add(&proto);
	if (s) {
		ex[ex_cnt++] = (struct expect){ s, addr, proto.func.ip, name, 0 };
	}
	return s;
}

struct named {
	const char *name;
	uint64_t addr;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->addr < y->addr ? -1 : x->addr > y->addr);
}

static struct named by_name[N_SITES + 2100];

static uint64_t sorted[N_SITES + 2100];

/* Every live site found by address and by function; every address
 * between two live sites (and around them) finds nothing; every name
 * gives exactly its live sites in address order; gone sites nowhere. */
static void check_indexes(const char *when)
{
	size_t live = 0, found = 0, by_func = 0, gone_hidden = 0, gone = 0;
	for (size_t i = 0; i < ex_cnt; i++) {
		struct site *s = ex[i].s;
		if (ex[i].gone) {
			gone++;
			/* Its address may be taken by a live site of a newer object. */
			struct site *f = site_table_find_addr(ex[i].addr);
			gone_hidden += f != s;
			continue;
		}
		live++;
		found += site_table_find_addr(ex[i].addr) == s;
		by_func += site_table_find_func(ex[i].ip) == s;
		sorted[live - 1] = ex[i].addr;
	}
	CHECK(found == live, "%s: site_table_find_addr finds each of the %zu live sites (%zu)", when, live, found);
	CHECK(by_func == live, "%s: site_table_find_func finds each by its symbol address, endbr64 or not (%zu)", when,
	      by_func);
	CHECK(gone_hidden == gone, "%s: none of the %zu gone sites is found by address", when, gone);

	qsort(sorted, live, sizeof(sorted[0]), cmp_u64);
	size_t between = 0, between_hits = 0, func_hits = 0;
	for (size_t i = 0; i + 1 < live; i++) {
		/* Every byte strictly between two sites, up to 40 of them, and a
		 * random one further on. */
		uint64_t gap = sorted[i + 1] - sorted[i];
		for (uint64_t a = sorted[i] + 1; a < sorted[i + 1] && a < sorted[i] + 40; a++, between++) {
			between_hits += site_table_find_addr(a) != NULL;
			/* No function starts there either (a site 4 bytes further
			 * belongs to the function at its own ip, which is this
			 * address only for an endbr64 site). */
			struct site *f = site_table_find_func(a);
			func_hits += f != NULL && f->func.ip != a;
		}
		if (gap > 2) {
			uint64_t a = sorted[i] + 1 + rng() % (gap - 1);
			between++;
			between_hits += site_table_find_addr(a) != NULL;
		}
	}
	uint64_t outside[] = { 0, 1, sorted[0] - 1, sorted[live - 1] + 1, UINT64_MAX, UINT64_MAX - 4 };
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++, between++)
		between_hits += site_table_find_addr(outside[i]) != NULL;
	CHECK(between_hits == 0, "%s: %zu addresses between and around the sites find nothing", when, between);
	CHECK(func_hits == 0, "%s: find_func never returns a site whose function starts elsewhere", when);

	/* Names: the model's live sites sorted by (name, address); names[]
	 * is in strcmp order, so each name's sites are the next run. */
	size_t nn = 0;
	for (size_t i = 0; i < ex_cnt; i++)
		if (!ex[i].gone)
			by_name[nn++] = (struct named){ ex[i].name, ex[i].addr };
	qsort(by_name, nn, sizeof(by_name[0]), cmp_named);
	size_t name_bad = 0, order_bad = 0, none = 0, one = 0, multi = 0, at = 0;
	for (size_t k = 0; k < NAMES; k++) {
		while (at < nn && strcmp(by_name[at].name, names[k]) < 0)
			at++;
		size_t n = 0;
		while (at + n < nn && !strcmp(by_name[at + n].name, names[k]))
			n++;
		size_t cnt = 12345;
		struct site *const *r = site_table_name_range(names[k], &cnt);
		none += n == 0;
		one += n == 1;
		multi += n > 1;
		if (cnt != n) {
			name_bad++;
			continue;
		}
		for (size_t i = 0; i < cnt; i++) {
			if (strcmp(r[i]->func.name, names[k]) || r[i]->gone)
				name_bad++;
			if (r[i]->func.site_addr != by_name[at + i].addr)
				order_bad++;
		}
		at += n;
	}
	CHECK(name_bad == 0,
	      "%s: site_table_name_range gives exactly the live sites of each of %d names (%zu with none, %zu with one, %zu with several)",
	      when, NAMES, none, one, multi);
	CHECK(order_bad == 0, "%s: sites of one name come in address order", when);

	/* Names that are not there: before the first, after the last, a
	 * prefix and an extension of a real one. */
	const char *absent[] = { "", "!", "~~~~", "fn_00", "fn_000x", "fn_0001_", "gn" };
	size_t absent_bad = 0;
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
		size_t cnt = 99;
		site_table_name_range(absent[i], &cnt);
		absent_bad += cnt != 0;
	}
	CHECK(absent_bad == 0, "%s: names that no site has give no sites", when);
}

int main(void)
{
	size_t cnt = 7;
	CHECK(site_table_find_addr(0x1000) == NULL && site_table_find_func(0x1000) == NULL,
	      "an empty table finds nothing by address");
	CHECK(site_table_name_range("main", &cnt) == NULL && cnt == 0, "an empty table finds nothing by name");
	CHECK(site_table_count() == 0 && site_table_get(0) == NULL, "an empty table has no site 0");

	for (int i = 0; i < NAMES; i++)
		snprintf(names[i], sizeof(names[i]), "fn_%04d", i);

	/* Random distinct addresses 16 bytes apart at least, in 4 objects
	 * far from each other; names drawn with repeats, so that names occur
	 * in several objects and several times in one. */
	static uint64_t addrs[N_SITES];
	for (size_t i = 0; i < N_SITES; i++) {
		uint64_t base = 0x400000ull + (uint64_t)(i % 4) * 0x7f0000000000ull;
		addrs[i] = base + (rng() % (1u << 28)) * 16;
	}
	qsort(addrs, N_SITES, sizeof(addrs[0]), cmp_u64);
	size_t uniq = 0;
	for (size_t i = 0; i < N_SITES; i++)
		if (!uniq || addrs[i] != addrs[uniq - 1])
			addrs[uniq++] = addrs[i];
	/* Shuffle: sites are added in discovery order, not address order. */
	for (size_t i = uniq; i-- > 1;) {
		size_t j = rng() % (i + 1);
		uint64_t t = addrs[i];
		addrs[i] = addrs[j];
		addrs[j] = t;
	}

	size_t id_bad = 0, get_bad = 0;
	for (size_t i = 0; i < uniq; i++) {
		int endbr = rng() % 3 == 0;
		int module = (int)((addrs[i] - 0x400000ull) / 0x7f0000000000ull);
		struct site *s = add(addrs[i], endbr, names[rng() % NAMES], module);
		if (!s || s->func.site_id != i)
			id_bad++;
		else if (site_table_get((uint32_t)i) != s)
			get_bad++;
	}
	CHECK(id_bad == 0, "site_table_add assigns ids 0..%zu in order", uniq - 1);
	CHECK(get_bad == 0, "site_table_get(id) is the site added with that id");
	CHECK_EQ(site_table_count(), uniq, "the count is the number of sites added");
	CHECK(site_table_get((uint32_t)uniq) == NULL, "no site past the count");
	CHECK(site_table_find_addr(ex[0].addr) == NULL, "sites added are not found before a reindex");

	size_t content_bad = 0;
	for (size_t i = 0; i < ex_cnt; i++) {
		struct site *s = ex[i].s;
		content_bad += s->func.site_addr != ex[i].addr || s->func.ip != ex[i].ip || s->func.name != ex[i].name ||
			       s->func.site_id != i || s->gone;
	}
	CHECK(content_bad == 0, "every site keeps what it was added with, across chunks (pointers never move)");

	CHECK_EQ(site_table_reindex(), 0, "reindex");
	check_indexes("first round");

	/* Name index pointers are stable until the next reindex. */
	size_t c1;
	struct site *const *r1 = site_table_name_range(names[3], &c1);
	size_t c2;
	CHECK(site_table_name_range(names[3], &c2) == r1 && c1 == c2, "the same name gives the same range until a reindex");

	/* An object is unloaded: its sites are gone. */
	size_t gone = 0;
	for (size_t i = 0; i < ex_cnt; i++) {
		if (ex[i].s->module == MODULE(2)) {
			ex[i].s->gone = 1;
			ex[i].gone = 1;
			gone++;
		}
	}
	CHECK(gone > 0, "module 2 has %zu sites, now gone", gone);
	CHECK_EQ(site_table_reindex(), 0, "reindex after the unload");
	check_indexes("after an unload");

	/* Another object loaded at the same addresses: its sites are new,
	 * with other names and some with endbr64 where the old had none. */
	size_t reused_bad = 0, added = 0;
	size_t before = ex_cnt;
	for (size_t i = 0; i < before && added < 2000; i++) {
		if (!ex[i].gone || rng() % 2)
			continue;
		struct site *s = add(ex[i].addr, (int)(rng() % 2), names[rng() % NAMES], 5);
		added++;
		reused_bad += !s || s == ex[i].s;
	}
	CHECK(reused_bad == 0 && added > 0, "%zu sites added at addresses of gone sites are new sites", added);
	CHECK_EQ(site_table_reindex(), 0, "reindex after the new object");
	check_indexes("after a load at reused addresses");

	/* Truncate: a failed discovery forgets the sites it added. */
	uint32_t count = site_table_count();
	struct site *t1 = add(0x10, 0, "truncated_a", 6);
	add(0x20, 0, "truncated_b", 6);
	CHECK_EQ(site_table_count(), count + 2, "two more sites");
	site_table_truncate(count);
	ex_cnt -= 2;
	CHECK(site_table_count() == count && site_table_get(count) == NULL && site_table_get(count + 1) == NULL,
	      "truncate takes the count back: the new ids are gone");
	site_table_truncate(count + 100);
	CHECK_EQ(site_table_count(), count, "truncating to more than the count changes nothing");
	struct site *t2 = add(0x30, 1, "after_truncate", 6);
	CHECK(t2 == t1 && t2->func.site_id == count && t2->func.site_addr == 0x30 && !strcmp(t2->func.name, "after_truncate"),
	      "the next site takes the first forgotten id and its storage, with its own contents");
	CHECK_EQ(site_table_reindex(), 0, "reindex after truncation");
	size_t c;
	CHECK(site_table_find_addr(0x10) == NULL && site_table_find_addr(0x20) == NULL && site_table_find_addr(0x30) == t2,
	      "forgotten sites are in no index; the one added after is");
	site_table_name_range("truncated_a", &c);
	CHECK_EQ(c, 0, "a forgotten site's name is in no index");
	CHECK(site_table_find_func(0x2c) == t2 && site_table_find_func(0x30) == NULL,
	      "an endbr64 site is found from its symbol (site - 4), not from the site address");
	check_indexes("after truncation");
	return harness_exit();
}
