/* code_map.c - the executable spans of every loaded object (code_map.h).
 * Built from dl_iterate_phdr, whose callback only copies spans (it runs
 * under the loader's lock), then sorted, cut by the modules' foreign
 * ranges and published. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "agent/base/phdr_walk.h"
#include "agent/sites/code_map.h"
#include "agent/sites/module.h"

#define PAGE 4096ull

_Atomic(const struct code_map *) code_map_current;

/* The loader's lookup, where the C library has it (2.35 on); looked up at
 * the first rebuild, never inside a handler. */
static int (*_Atomic find_object)(void *, struct dl_find_object *);

/* Replaced maps waiting for a grace period.  Beyond RETIRED_MAX one is
 * left allocated rather than freed early. */
#define RETIRED_MAX 64
static const struct code_map *retired[RETIRED_MAX];
static int retired_cnt;

struct span_list {
	struct code_range *v;
	size_t cnt, cap;
	int err;
	unsigned long long adds, subs; /* the loader's counts of loads and unloads */
};

/* The counts the current map was built at: an unchanged pair means the
 * same objects are loaded, and the map stands. */
static unsigned long long built_adds, built_subs;
static size_t built_foreign;

static void span_add(struct span_list *l, uint64_t lo, uint64_t hi)
{
	if (l->err || lo >= hi)
		return;
	if (l->cnt == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct code_range *v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			l->err = -ENOMEM;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->cnt++] = (struct code_range){ lo, hi };
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct span_list *l = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		l->adds = info->dlpi_adds;
		l->subs = info->dlpi_subs;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		span_add(l, lo & ~(PAGE - 1), (lo + ph->p_memsz + PAGE - 1) & ~(PAGE - 1));
	}
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct code_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int code_map_rebuild(void)
{
	struct span_list l = { 0 };

	agent_dl_iterate_phdr(collect, &l);
	size_t foreign = 0;
	for (struct module *m = module_list(); m; m = m->next)
		foreign += m->foreign_lo < m->foreign_hi;
	if (l.err) {
		free(l.v);
		return l.err;
	}
	if (atomic_load_explicit(&code_map_current, memory_order_relaxed) && l.adds == built_adds &&
	    l.subs == built_subs && foreign == built_foreign) {
		free(l.v);
		return 0;
	}
	if (l.cnt)
		qsort(l.v, l.cnt, sizeof(l.v[0]), range_cmp);
	/* Each foreign range splits at most one span in two, and is
	 * listed after the spans. */
	struct code_map *map = malloc(sizeof(*map) + (l.cnt + 2 * foreign + 1) * sizeof(map->v[0]));
	if (!map) {
		free(l.v);
		return -ENOMEM;
	}
	map->cnt = 0;
	map->foreign_cnt = 0;
	for (size_t i = 0; i < l.cnt; i++) {
		/* Overlapping spans (an object mapped twice) merge. */
		if (map->cnt && l.v[i].lo <= map->v[map->cnt - 1].hi) {
			if (l.v[i].hi > map->v[map->cnt - 1].hi)
				map->v[map->cnt - 1].hi = l.v[i].hi;
			continue;
		}
		map->v[map->cnt++] = l.v[i];
	}
	free(l.v);
	for (struct module *m = module_list(); m; m = m->next) {
		if (m->foreign_lo >= m->foreign_hi)
			continue;
		for (size_t i = 0; i < map->cnt; i++) {
			struct code_range r = map->v[i];
			if (m->foreign_lo >= r.hi || m->foreign_hi <= r.lo)
				continue;
			if (m->foreign_lo > r.lo && m->foreign_hi < r.hi) {
				memmove(&map->v[i + 2], &map->v[i + 1], (map->cnt - i - 1) * sizeof(r));
				map->v[i].hi = m->foreign_lo;
				map->v[i + 1] = (struct code_range){ m->foreign_hi, r.hi };
				map->cnt++;
			} else if (m->foreign_lo > r.lo) {
				map->v[i].hi = m->foreign_lo;
			} else if (m->foreign_hi < r.hi) {
				map->v[i].lo = m->foreign_hi;
			} else {
				map->v[i].lo = map->v[i].hi; /* empty: never holds */
			}
			break;
		}
	}
	for (struct module *m = module_list(); m; m = m->next)
		if (m->foreign_lo < m->foreign_hi)
			map->v[map->cnt + map->foreign_cnt++] = (struct code_range){ m->foreign_lo, m->foreign_hi };
	if (!find_object)
		find_object = (int (*)(void *, struct dl_find_object *))dlsym(RTLD_DEFAULT, "_dl_find_object");
	built_adds = l.adds;
	built_subs = l.subs;
	built_foreign = foreign;
	const struct code_map *old = atomic_exchange_explicit(&code_map_current, map, memory_order_acq_rel);
	if (old && retired_cnt < RETIRED_MAX)
		retired[retired_cnt++] = old;
	return 0;
}

void code_map_reclaim(void)
{
	for (int i = 0; i < retired_cnt; i++)
		free((void *)retired[i]);
	retired_cnt = 0;
}

/* A miss of the map: a foreign range (never hookable), code generated at
 * run time, or an object loaded since the map was built.  Paid by calls
 * whose return leads outside their callee's object and the map. */
int code_map_hookable(uint64_t addr)
{
	const struct code_map *m = atomic_load_explicit(&code_map_current, memory_order_acquire);
	if (!m)
		return 0;
	for (size_t i = 0; i < m->foreign_cnt; i++)
		if (addr >= m->v[m->cnt + i].lo && addr < m->v[m->cnt + i].hi)
			return 0;
	if (code_map_holds(addr))
		return 1;
	int (*find)(void *, struct dl_find_object *) = atomic_load_explicit(&find_object, memory_order_relaxed);
	struct dl_find_object r;
	return find && !find((void *)(uintptr_t)addr, &r);
}
