/* module.c - the registry of loaded objects (see module.h).  Objects are
 * found with dl_iterate_phdr; the callback only copies what it needs,
 * because it runs under the loader's lock, and discovery happens after. */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/base/phdr_walk.h"
#include "agent/base/log.h"
#include "needle.h"
#include "agent/sites/code_map.h"
#include "agent/sites/module.h"
#include "agent/sites/site_discover.h"
#include "agent/sites/site_names.h"
#include "agent/sites/site_table.h"

#define PAGE 4096ull

static struct module *modules;

struct module *module_list(void)
{
	return modules;
}

const struct module_span *module_exec_span(uint64_t addr)
{
	for (struct module *m = modules; m; m = m->next)
		for (int i = 0; i < m->exec_cnt; i++)
			if (addr >= m->exec[i].lo && addr < m->exec[i].hi)
				return &m->exec[i];
	return NULL;
}

struct object_list {
	struct module *v;
	size_t cnt, cap;
	size_t left;  /* new objects not taken (module_discover_take) */
	int err;
};

/* Read under the control mutex by discovery; set by the session thread
 * that starts an attach, which holds it or runs before any discovery. */
static _Atomic int take_policy = MODULE_TAKE_ALL;
static size_t left_for_later;

void module_discover_take(enum module_take take)
{
	atomic_store_explicit(&take_policy, (int)take, memory_order_relaxed);
}

size_t module_left_for_later(void)
{
	return left_for_later;
}

/* Whether the policy takes the object named path (the program: "") now,
 * the list holding `taken` objects so far. */
static int taken_now(const char *path, size_t taken)
{
	const char *base = strrchr(path, '/');
	switch (atomic_load_explicit(&take_policy, memory_order_relaxed)) {
	case MODULE_TAKE_PROGRAM_AND_LIBC:
		return !*path || (base && !strncmp(base + 1, "libc.so", 7));
	case MODULE_TAKE_ONE:
		return taken == 0;
	case MODULE_TAKE_NONE:
		return 0;
	default:
		return 1;
	}
}

static int known(uint64_t bias, const char *path)
{
	for (struct module *m = modules; m; m = m->next)
		if (m->bias == bias && !strcmp(m->path, path))
			return 1;
	return 0;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_list *list = arg;
	struct module obj;
	char exe[PATH_MAX];
	const char *name = info->dlpi_name;
	uint64_t self = (uint64_t)(uintptr_t)module_discover_new;
	int is_self = 0;
	(void)size;

	memset(&obj, 0, sizeof(obj));
	obj.bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && obj.load_cnt < MODULE_MAX_LOAD) {
			uint64_t lo = info->dlpi_addr + ph->p_vaddr;
			obj.load[obj.load_cnt++] = (struct module_span){
				lo, lo + ph->p_memsz,
				(ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0) |
					(ph->p_flags & PF_X ? PROT_EXEC : 0) };
		}
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || obj.exec_cnt == MODULE_MAX_EXEC)
			continue;
		struct module_span *s = &obj.exec[obj.exec_cnt++];
		s->lo = (info->dlpi_addr + ph->p_vaddr) & ~(PAGE - 1);
		s->hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + PAGE - 1) & ~(PAGE - 1);
		s->prot = PROT_EXEC | (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0);
		/* libneedle itself: only its interposers are sites
		 * (NEEDLE_INTERPOSER_SITE), the one list of entries its
		 * code has (site_discover.c never relocates it).  They stand
		 * for C library functions, so they are sites when libraries'
		 * functions are (relocated kinds), and not otherwise. */
		if (self >= s->lo && self < s->hi) {
			if (!(site_discover_get_kinds() & SITE_KINDS_RELOCATED))
				return 0;
			is_self = 1;
		}
	}
	if (!obj.exec_cnt || strstr(name, "linux-vdso") || strstr(name, "linux-gate"))
		return 0;
	int take = is_self || taken_now(name, list->cnt);
	if (!*name) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return 0;
		exe[n] = 0;
		name = exe;
	}
	if (known(obj.bias, name))
		return 0;
	if (!take) {
		list->left++;
		return 0;
	}
	if (!(obj.path = strdup(name))) {
		list->err = -ENOMEM;
		return 1;
	}
	if (list->cnt == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 16;
		struct module *v = realloc(list->v, cap * sizeof(*v));
		if (!v) {
			free(obj.path);
			list->err = -ENOMEM;
			return 1;
		}
		list->v = v;
		list->cap = cap;
	}
	list->v[list->cnt++] = obj;
	return 0;
}

struct loaded_list {
	struct module *m;
	int found;
};

static int still_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct loaded_list *l = arg;
	(void)size;
	if (info->dlpi_addr != l->m->bias || (*info->dlpi_name && strcmp(info->dlpi_name, l->m->path)))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(PAGE - 1);
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && lo == l->m->exec[0].lo) {
			l->found = 1;
			return 1;
		}
	}
	return 0;
}

/* Modules forgotten stay allocated: sites keep pointing at them. */
static struct module *forgotten;

int module_forget_unloaded(void)
{
	int gone = 0;

	for (struct module **p = &modules; *p;) {
		struct module *m = *p;
		struct loaded_list l = { m, 0 };
		agent_dl_iterate_phdr(still_loaded, &l);
		if (l.found) {
			p = &m->next;
			continue;
		}
		for (uint32_t i = 0; i < m->site_cnt; i++) {
			struct site *s = site_table_get(m->first_site + i);
			s->gone = 1;
			s->enabled = 0;
			atomic_store(&s->want_call, 0);
		}
		for (uint32_t i = 0; i < m->exit_cnt; i++) {
			m->exit_sites[i].gone = 1;
			m->exit_sites[i].enabled = 0;
		}
		site_names_module_gone(m);
		stub_area_release(&m->stubs);
		stub_area_release(&m->detours);
		m->stubs.at = NULL;
		*p = m->next;
		m->next = forgotten;
		forgotten = m;
		gone++;
	}
	if (gone) {
		int err = site_table_reindex();
		if (err)
			return err;
		/* Returns into the code that went are no longer hooked (an
		 * allocator may put generated code there).  Failing that, the
		 * old map stays: a return into the unmapped range is hooked,
		 * as before there were maps. */
		code_map_rebuild();
	}
	return gone;
}

/* Invariant on return, success or not: every site in the table is in the
 * address index (an int3 on any of them is found by the trap handler),
 * and every object in the module list had its discovery completed.  An
 * object whose discovery failed leaves nothing behind and is tried again
 * by the next call. */
int module_discover_new(struct discovery_set *set)
{
	struct object_list list = { 0 };
	int added = 0, err = 0;

	memset(set, 0, sizeof(*set));
	agent_dl_iterate_phdr(collect, &list);
	left_for_later = list.left;
	/* One taken: the discoveries that follow (a link update's) take none
	 * until the next module_discover_take. */
	int one = MODULE_TAKE_ONE;
	if (list.cnt)
		atomic_compare_exchange_strong(&take_policy, &one, MODULE_TAKE_NONE);
	if (list.err) {
		err = list.err;
		goto out;
	}
	if (list.cnt && !(set->v = calloc(list.cnt, sizeof(*set->v)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < list.cnt; i++) {
		struct module *m = malloc(sizeof(*m));
		struct discovery *d = &set->v[set->cnt];
		uint32_t sites_before = site_table_count();
		if (!m) {
			err = -ENOMEM;
			break;
		}
		*m = list.v[i];
		m->strings = NULL;
		int derr = site_discover(m, d);
		if (derr) {
			/* Nothing indexed or patched refers to its sites yet.  The
			 * other objects go on; this one is tried again next time. */
			discovery_free(d);
			site_table_truncate(sites_before);
			pr_warn("%s: cannot discover its functions (%d); will try again at the next refresh\n",
				m->path, derr);
			free(m->strings);
			free(m->exit_sites);
			free(m);
			err = err ? err : derr;
			continue;
		}
		if (m->exit_cnt && site_table_add_exits(m->exit_sites, m->exit_cnt)) {
			/* Not in the address index: never patched. */
			for (uint32_t j = 0; j < m->exit_cnt; j++)
				m->exit_sites[j].owner->exit_cnt = 0;
		}
		list.v[i].path = NULL;
		m->next = modules;
		modules = m;
		added += (int)d->site_cnt;
		set->cnt++;
	}
	/* The trap handler must find the new sites before any int3 lands. */
	if (added) {
		int ierr = site_table_reindex();
		if (ierr) {
			/* The old index stays: the new sites must never be patched. */
			for (size_t i = 0; i < set->cnt; i++)
				for (size_t j = 0; j < set->v[i].site_cnt; j++)
					set->v[i].sites[j]->unusable = 1;
			err = err ? err : ierr;
		}
	}
	/* Returns into the new objects' code may be hooked from now on.
	 * Failing that (no memory), the old map stays: returns into them
	 * are not hooked, the safe side. */
	code_map_rebuild();
	if (!err)
		err = added;
out:
	for (size_t i = 0; i < list.cnt; i++)
		free(list.v[i].path);
	free(list.v);
	return err;
}

void discovery_set_free(struct discovery_set *set)
{
	for (size_t i = 0; i < set->cnt; i++)
		discovery_free(&set->v[i]);
	free(set->v);
	memset(set, 0, sizeof(*set));
}
