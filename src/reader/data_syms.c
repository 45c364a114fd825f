/* data_syms.c - pointers to the program's data by name (trace_data_at):
 * uftrace shows a pointer argument that holds a global's address as
 * &static_var, and so do the views.
 *
 * The trace names functions only, so a data symbol is read, at the first
 * lookup, from the symbol tables of the objects the trace names (their
 * files, where they were recorded), placed where the recording saw them:
 * each object's load bias is that of a function site of its, its
 * address in the trace less its symbol's value in the file.  An object
 * without a site the trace names, or whose file is gone or was rebuilt
 * (a site's symbol not at the value the bias implies for another), is
 * left out: a wrong name is worse than none.  The symbols are the files'
(.symtab, else .dynsym).
 *
 * Invariants: lookups after the first cost a binary search; memory is
 * the objects' data symbols, never the trace's events. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader/reader_internal.h"
#include "reader/trace_reader.h"

struct data_sym {
	uint64_t addr, size;
	char *name;
};

static int data_sym_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct data_sym *)a)->addr, y = ((const struct data_sym *)b)->addr;
	return x < y ? -1 : x > y;
}

/* Calls fn for each named, defined symbol of type in e's symbol tables;
 * stops when fn returns nonzero. */
static void each_symbol(Elf *e, int type, int (*fn)(void *arg, const GElf_Sym *sym, const char *name), void *arg)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;
			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != type || !sym.st_value ||
			    sym.st_shndx == SHN_UNDEF || !(name = elf_strptr(e, sh.sh_link, sym.st_name)) || !*name)
				continue;
			if (fn(arg, &sym, name))
				return;
		}
	}
}

struct data_add {
	struct trace *t;
	uint64_t bias;
};

static int add_data_sym(void *arg, const GElf_Sym *sym, const char *name)
{
	struct data_add *a = arg;
	struct trace *t = a->t;

	if (t->data_sym_cnt == t->data_sym_cap) {
		size_t cap = t->data_sym_cap ? 2 * t->data_sym_cap : 256;
		struct data_sym *v = realloc(t->data_syms, cap * sizeof(*v));
		if (!v)
			return 1;
		t->data_syms = v;
		t->data_sym_cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return 1;
	t->data_syms[t->data_sym_cnt++] = (struct data_sym){ sym->st_value + a->bias, sym->st_size, copy };
	return 0;
}

struct func_sym {
	const char *name; /* in the ELF's mapping */
	uint64_t value;
};

static int func_sym_cmp(const void *a, const void *b)
{
	return strcmp(((const struct func_sym *)a)->name, ((const struct func_sym *)b)->name);
}

struct func_list {
	struct func_sym *v;
	size_t n, cap;
};

static int add_func_sym(void *arg, const GElf_Sym *sym, const char *name)
{
	struct func_list *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		struct func_sym *w = realloc(l->v, cap * sizeof(*w));
		if (!w)
			return 1;
		l->v = w;
		l->cap = cap;
	}
	l->v[l->n++] = (struct func_sym){ name, sym->st_value };
	return 0;
}

/* e's function symbols by name: a malloc'ed sorted array, *n of them. */
static struct func_sym *func_syms(Elf *e, size_t *n)
{
	struct func_list l = { 0 };

	each_symbol(e, STT_FUNC, add_func_sym, &l);
	if (l.v)
		qsort(l.v, l.n, sizeof(*l.v), func_sym_cmp);
	*n = l.n;
	return l.v;
}

/* Module m's load bias: from its first site whose symbol the file has,
 * checked against a second at another address; 0 when not known.  Also
 * src_lines.c's, which places the object's DWARF the same way. */
int reader_module_bias(struct trace *t, size_t m, Elf *e, uint64_t *bias)
{
	size_t n;
	struct func_sym *v = func_syms(e, &n);
	int found = 0, ok = 0;

	for (size_t i = 0; v && i < t->site_cap && found < 2; i++) {
		const struct trace_site *s = &t->sites[i];
		if (s->module != m || !s->sym || !s->func_ip)
			continue;
		struct func_sym key = { .name = s->sym }, *hit = bsearch(&key, v, n, sizeof(*v), func_sym_cmp);
		if (!hit || hit->value > s->func_ip)
			continue;
		if (!found++) {
			*bias = s->func_ip - hit->value;
			ok = 1;
		} else if (s->func_ip - hit->value != *bias) {
			ok = 0; /* the file is not what was recorded */
		}
	}
	free(v);
	return ok;
}

static void load(struct trace *t)
{
	elf_version(EV_CURRENT);
	for (size_t m = 0; m < t->module_cnt; m++) {
		int fd = open(t->modules[m], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		uint64_t bias = 0;
		if (e && reader_module_bias(t, m, e, &bias)) {
			struct data_add add = { t, bias };
			each_symbol(e, STT_OBJECT, add_data_sym, &add);
		}
		if (e)
			elf_end(e);
		close(fd);
	}
	qsort(t->data_syms, t->data_sym_cnt, sizeof(*t->data_syms), data_sym_cmp);
}

const char *trace_data_at(struct trace *t, uint64_t addr)
{
	if (!t->data_syms_loaded) {
		t->data_syms_loaded = 1;
		load(t);
	}
	size_t lo = 0, hi = t->data_sym_cnt;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->data_syms[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->data_sym_cnt && t->data_syms[lo].addr == addr ? t->data_syms[lo].name : NULL;
}

void trace_data_free(struct trace *t)
{
	for (size_t i = 0; i < t->data_sym_cnt; i++)
		free(t->data_syms[i].name);
	free(t->data_syms);
	t->data_syms = NULL;
	t->data_sym_cnt = t->data_sym_cap = 0;
}
