/* site_table.c - storage and lookup of sites (see site_table.h).
 *
 * Writers (discovery) run under the agent's control mutex; readers may be
 * any thread, including one inside the SIGTRAP handler, so the address
 * index is replaced, never changed, and an old one is freed only when no
 * search can still be in it: searches count themselves in index_searches
 * (a Dekker pair with the replacement, see site_table_reindex).  A
 * program that dlopens and dlcloses in a loop while recorded replaces the
 * index at every load and unload. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sites/site_table.h"

#define SITE_CHUNK_SHIFT 12
#define SITE_CHUNK (1u << SITE_CHUNK_SHIFT)
#define SITE_MAX_CHUNKS 512 /* 2M sites: site ids fit the 21 bits of trace events */

struct site_index {
	size_t cnt;
	struct site *sites[];
};

static struct site *chunks[SITE_MAX_CHUNKS];
static _Atomic uint32_t site_cnt;
static _Atomic(struct site_index *) by_addr;
static _Atomic(struct site_index *) by_name;
/* Searches of by_addr in progress, and the replaced indexes not yet freed
 * (beyond RETIRED_MAX, one is left allocated rather than freed early). */
static _Atomic int index_searches;
#define RETIRED_MAX 64
static struct site_index *retired[RETIRED_MAX];
static int retired_cnt;

struct site *site_table_add(const struct site *proto)
{
	uint32_t id = atomic_load_explicit(&site_cnt, memory_order_relaxed);
	uint32_t chunk = id >> SITE_CHUNK_SHIFT;

	if (chunk >= SITE_MAX_CHUNKS)
		return NULL;
	if (!chunks[chunk] && !(chunks[chunk] = calloc(SITE_CHUNK, sizeof(struct site))))
		return NULL;
	struct site *s = &chunks[chunk][id & (SITE_CHUNK - 1)];
	*s = *proto;
	s->func.site_id = id;
	atomic_store_explicit(&site_cnt, id + 1, memory_order_release);
	return s;
}

void site_table_truncate(uint32_t count)
{
	if (count < atomic_load_explicit(&site_cnt, memory_order_relaxed))
		atomic_store_explicit(&site_cnt, count, memory_order_release);
}

struct site *site_table_get(uint32_t id)
{
	if (id >= atomic_load_explicit(&site_cnt, memory_order_acquire))
		return NULL;
	return &chunks[id >> SITE_CHUNK_SHIFT][id & (SITE_CHUNK - 1)];
}

uint32_t site_table_count(void)
{
	return atomic_load_explicit(&site_cnt, memory_order_acquire);
}

static int cmp_addr(const void *a, const void *b)
{
	const struct site *x = *(struct site *const *)a, *y = *(struct site *const *)b;
	return x->func.site_addr < y->func.site_addr ? -1 : x->func.site_addr > y->func.site_addr;
}

static int cmp_name(const void *a, const void *b)
{
	const struct site *x = *(struct site *const *)a, *y = *(struct site *const *)b;
	int c = strcmp(x->func.name, y->func.name);
	return c ? c : (x->func.site_addr < y->func.site_addr ? -1 : x->func.site_addr > y->func.site_addr);
}

/* Exit sites, by the array their object made (under the control mutex). */
struct exit_array {
	struct site *v;
	uint32_t n;
};
static struct exit_array *exit_arrays;
static size_t exit_array_cnt;
static size_t exit_site_cnt;

int site_table_add_exits(struct site *v, uint32_t n)
{
	struct exit_array *a = realloc(exit_arrays, (exit_array_cnt + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	exit_arrays = a;
	a[exit_array_cnt++] = (struct exit_array){ v, n };
	exit_site_cnt += n;
	return 0;
}

static struct site_index *index_build(int (*cmp)(const void *, const void *), int with_exits)
{
	uint32_t n = site_table_count();
	size_t cap = n + (with_exits ? exit_site_cnt : 0);
	struct site_index *idx = malloc(sizeof(*idx) + cap * sizeof(idx->sites[0]));

	if (!idx)
		return NULL;
	idx->cnt = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct site *s = site_table_get(i);
		/* An unloaded object's addresses may be reused by the next one. */
		if (!s->gone)
			idx->sites[idx->cnt++] = s;
	}
	for (size_t i = 0; with_exits && i < exit_array_cnt; i++)
		for (uint32_t j = 0; j < exit_arrays[i].n; j++)
			if (!exit_arrays[i].v[j].gone)
				idx->sites[idx->cnt++] = &exit_arrays[i].v[j];
	qsort(idx->sites, idx->cnt, sizeof(idx->sites[0]), cmp);
	return idx;
}

/* A fork's child has one thread: a search that another thread of the
 * parent was making never ends there, and must not hold the old indexes
 * forever. */
static void fork_child(void)
{
	atomic_store(&index_searches, 0);
}

int site_table_reindex(void)
{
	static int atfork_set;
	if (!atfork_set)
		atfork_set = !pthread_atfork(NULL, NULL, fork_child);

	struct site_index *a = index_build(cmp_addr, 1), *n = index_build(cmp_name, 0);

	if (!a || !n) {
		free(a);
		free(n);
		return -ENOMEM;
	}
	/* Nothing async reads the name index; it is replaced under the mutex. */
	free(atomic_exchange(&by_name, n));
	/* The exchange and the load of index_searches are sequentially
	 * consistent, as are a search's increment and its load of by_addr
	 * (site_table_find_addr): if the load here sees no search, any search
	 * that starts later reads the new index, so no search can hold an
	 * old one.  Otherwise the old one waits for a later round. */
	struct site_index *old = atomic_exchange(&by_addr, a);
	if (old && retired_cnt < RETIRED_MAX)
		retired[retired_cnt++] = old;
	if (!atomic_load(&index_searches)) {
		for (int i = 0; i < retired_cnt; i++)
			free(retired[i]);
		retired_cnt = 0;
	}
	return 0;
}

struct site *site_table_find_addr(uint64_t addr)
{
	struct site *found = NULL;

	/* Pairs with site_table_reindex: counted before the index is read
	 * (a locked add, a full barrier), released once done with it. */
	atomic_fetch_add(&index_searches, 1);
	struct site_index *idx = atomic_load(&by_addr);
	size_t lo = 0, hi = idx ? idx->cnt : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct site *s = idx->sites[mid];
		if (s->func.site_addr == addr) {
			found = s;
			break;
		}
		if (s->func.site_addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	atomic_fetch_sub_explicit(&index_searches, 1, memory_order_release);
	return found;
}

struct site *site_table_find_func(uint64_t func_ip)
{
	/* A site sits at the symbol or 4 bytes after it (endbr64). */
	struct site *s = site_table_find_addr(func_ip);
	if (!s)
		s = site_table_find_addr(func_ip + 4);
	return s && !site_is_exit(s) && s->func.ip == func_ip ? s : NULL;
}

struct site *const *site_table_name_range(const char *name, size_t *cnt)
{
	struct site_index *idx = atomic_load_explicit(&by_name, memory_order_acquire);
	size_t lo = 0, hi = idx ? idx->cnt : 0, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(idx->sites[mid]->func.name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; idx && end < idx->cnt && !strcmp(idx->sites[end]->func.name, name); end++)
		;
	*cnt = end - lo;
	return idx ? &idx->sites[lo] : NULL;
}
