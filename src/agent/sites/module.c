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

#include "agent/base/log.h"
#include "needle.h"
#include "agent/sites/module.h"
#include "agent/patch/patch_batch.h"
#include "agent/sites/site_discover.h"
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
	int err;
};

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
	uint64_t self = (uint64_t)(uintptr_t)module_refresh;
	(void)size;

	memset(&obj, 0, sizeof(obj));
	obj.bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || obj.exec_cnt == MODULE_MAX_EXEC)
			continue;
		struct module_span *s = &obj.exec[obj.exec_cnt++];
		s->lo = (info->dlpi_addr + ph->p_vaddr) & ~(PAGE - 1);
		s->hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + PAGE - 1) & ~(PAGE - 1);
		s->prot = PROT_EXEC | (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0);
		if (self >= s->lo && self < s->hi)
			return 0; /* libneedle itself is never traced */
	}
	if (!obj.exec_cnt || strstr(name, "linux-vdso") || strstr(name, "linux-gate"))
		return 0;
	if (!*name) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return 0;
		exe[n] = 0;
		name = exe;
	}
	if (known(obj.bias, name))
		return 0;
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

static int normalize(struct discovery *d)
{
	int err = 0;

	/* call __fentry__ -> NOP5 is one instruction for another: the int3
	 * protocol suffices.  Five 1-byte NOPs -> NOP5 is not: a thread may be
	 * between two of them, so other threads are stopped (if any). */
	if (d->fentry_cnt)
		err = patch_batch_apply(d->fentry_ops, d->fentry_cnt);
	if (!err && d->nops_cnt)
		err = patch_rewrite_stopped(d->nops_ops, d->nops_cnt);
	return err;
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
		dl_iterate_phdr(still_loaded, &l);
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
		stub_area_release(&m->stubs);
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
	}
	return gone;
}

/* Invariant on return, success or not: every site in the table is in the
 * address index (an int3 on any of them is found by the trap handler),
 * and every object in the module list had its discovery completed.  An
 * object whose discovery failed leaves nothing behind and is tried again
 * by the next refresh. */
int module_refresh(void)
{
	struct object_list list = { 0 };
	struct discovery *disc = NULL;
	size_t discovered = 0;
	int added = 0, err = 0;

	dl_iterate_phdr(collect, &list);
	if (list.err) {
		err = list.err;
		goto out;
	}
	if (list.cnt && !(disc = calloc(list.cnt, sizeof(*disc)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < list.cnt && !err; i++) {
		struct module *m = malloc(sizeof(*m));
		uint32_t sites_before = site_table_count();
		if (!m) {
			err = -ENOMEM;
			break;
		}
		*m = list.v[i];
		if ((err = site_discover(m, &disc[i]))) {
			/* Nothing indexed or patched refers to its sites yet. */
			discovery_free(&disc[i]);
			memset(&disc[i], 0, sizeof(disc[i]));
			site_table_truncate(sites_before);
			pr_warn("%s: cannot discover its functions (%d); will try again at the next refresh\n",
				m->path, err);
			free(m);
			break;
		}
		list.v[i].path = NULL;
		m->next = modules;
		modules = m;
		added += (int)disc[i].site_cnt;
		discovered = i + 1;
	}
	/* The trap handler must find the new sites before any int3 lands. */
	if (added) {
		int ierr = site_table_reindex();
		if (ierr) {
			/* The old index stays: the new sites must never be patched. */
			for (size_t i = 0; i < discovered; i++)
				for (size_t j = 0; j < disc[i].site_cnt; j++)
					disc[i].sites[j]->unusable = 1;
			err = err ? err : ierr;
			goto out;
		}
	}
	for (size_t i = 0; i < discovered; i++) {
		int nerr = normalize(&disc[i]);
		if (nerr) {
			/* Its sites keep bytes that a CALL cannot safely replace. */
			for (size_t j = 0; j < disc[i].site_cnt; j++)
				disc[i].sites[j]->unusable = disc[i].sites[j]->form != NEEDLE_FORM_NOP5;
			pr_warn("%s: cannot prepare its functions for tracing (%d); they stay untraced\n",
				disc[i].site_cnt ? disc[i].sites[0]->module->path : "object", nerr);
		}
	}
	if (!err)
		err = added;
out:
	for (size_t i = 0; disc && i < list.cnt; i++)
		discovery_free(&disc[i]);
	for (size_t i = 0; i < list.cnt; i++)
		free(list.v[i].path);
	free(disc);
	free(list.v);
	return err;
}
