/* sym_source.c - names for the functions of objects whose own symbols
 * were stripped (--with-syms, uftrace's): from a trace recorded while
 * the objects still had them, or from a directory of the objects'
 * unstripped copies or separate debug files.
 *
 * Functions are keyed by the object's file name (without its directory:
 * the stripped file is rarely where the unstripped one was) and by their
 * address in that file, which strip leaves alone: a trace gives it as a
 * site's address less its object's load bias (MODULE_BIAS), a file as
 * its symbol's value.  A directory entry NAME or NAME.debug stands for
 * the object NAME.
 *
 * Invariants: every function is copied out at open (the trace or the
 * files are closed again); the table is sorted by (object, address), so
 * a lookup is two binary searches; a name found is the symbol as the
 * object had it (mangled), demangled by whoever shows it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/sym_source.h"
#include "reader/reader_internal.h"
#include "reader/trace_reader.h"

struct sym_entry {
	const char *object; /* file name, interned in the arena */
	uint64_t addr;      /* in the object's file */
	uint64_t size;      /* 0: unknown (up to the next function) */
	const char *name;
};

struct sym_source {
	struct sym_entry *v;
	size_t n, cap;
	char **strings; /* every string the entries point into */
	size_t string_cnt;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static const char *keep(struct sym_source *s, const char *str, size_t len)
{
	char **v = realloc(s->strings, (s->string_cnt + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->strings = v;
	char *c = strndup(str, len);
	if (c)
		v[s->string_cnt++] = c;
	return c;
}

static int add(struct sym_source *s, const char *object, uint64_t addr, uint64_t size, const char *name)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct sym_entry *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	const char *kept = keep(s, name, strlen(name));
	if (!kept)
		return -ENOMEM;
	s->v[s->n++] = (struct sym_entry){ object, addr, size, kept };
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	int c = strcmp(x->object, y->object);
	if (c)
		return c;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The name discovery gives a function no symbol names:
 * func_0xADDR@OBJECT (agent/sites/site_discover.c's unnamed()). */
int sym_source_unnamed(const char *name, uint64_t *addr, const char **object)
{
	char *end;
	if (strncmp(name, "func_0x", 7))
		return 0;
	errno = 0;
	unsigned long long a = strtoull(name + 7, &end, 16);
	if (errno || end == name + 7 || *end != '@' || !end[1])
		return 0;
	*addr = a;
	*object = end + 1;
	return 1;
}

/* A trace's functions, each at its address in its object's file. */
static int from_trace(struct sym_source *s, const char *path, char *err, size_t errlen)
{
	struct trace *t = trace_open(path, err, errlen);
	if (!t)
		return -1;
	int biased = 0, rc = 0;
	const char **objects = calloc(t->module_cnt ? t->module_cnt : 1, sizeof(*objects));
	if (!objects) {
		trace_close(t);
		reader_error(err, errlen, "out of memory reading %s", path);
		return -1;
	}
	for (size_t i = 0; i < t->site_cap && !rc; i++) {
		const struct trace_site *ts = &t->sites[i];
		const char *sym = ts->sym ? ts->sym : ts->name;
		uint64_t bias = trace_module_bias(t, ts->module), a;
		const char *o;
		if (!sym || !ts->func_ip || (ts->flags & TRACE_SITE_EVENT) || ts->module >= t->module_cnt ||
		    bias == TRACE_BIAS_UNKNOWN || sym_source_unnamed(sym, &a, &o))
			continue;
		biased = 1;
		if (!objects[ts->module]) {
			const char *b = base_name(t->modules[ts->module]);
			if (!(objects[ts->module] = keep(s, b, strlen(b)))) {
				rc = -1;
				break;
			}
		}
		rc = add(s, objects[ts->module], ts->func_ip - bias, ts->func_size, sym);
	}
	free(objects);
	int had_modules = t->module_cnt > 0 && t->module_bias_cnt == 0;
	trace_close(t);
	if (rc) {
		reader_error(err, errlen, "out of memory reading %s", path);
		return -1;
	}
	if (!biased) {
		reader_error(err, errlen,
			     had_modules ? "%s was recorded by an older needle, which kept no load addresses: record it again"
					 : "%s names no function",
			     path);
		return -1;
	}
	return 0;
}

/* The function symbols of the file at dir/name, as object NAME (a
 * ".debug" suffix dropped); a file that is no ELF object with .symtab
 * is skipped.  0, 1 (skipped) or -1 (out of memory). */
static int from_file(struct sym_source *s, int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	struct stat st;
	Elf *e = !fstat(fd, &st) && S_ISREG(st.st_mode) ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	int rc = 1;
	const char *object = NULL;
	for (Elf_Scn *scn = NULL; e && elf_kind(e) == ELF_K_ELF && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n && rc >= 0; i++) {
			GElf_Sym sym;
			const char *sname;
			if (!gelf_getsym(d, (int)i, &sym) ||
			    (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC) ||
			    !sym.st_value || sym.st_shndx == SHN_UNDEF || !(sname = elf_strptr(e, sh.sh_link, sym.st_name)) ||
			    !*sname)
				continue;
			if (!object) {
				size_t len = strlen(name);
				if (len > 6 && !strcmp(name + len - 6, ".debug"))
					len -= 6;
				if (!(object = keep(s, name, len))) {
					rc = -1;
					break;
				}
			}
			rc = add(s, object, sym.st_value, sym.st_size, sname) ? -1 : 0;
		}
		break;
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

static int from_dir(struct sym_source *s, const char *path, char *err, size_t errlen)
{
	DIR *d = opendir(path);
	if (!d) {
		reader_error(err, errlen, "cannot read the directory %s: %s", path, strerror(errno));
		return -1;
	}
	int found = 0, rc = 0;
	for (struct dirent *de; !rc && (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		int r = from_file(s, dirfd(d), de->d_name);
		if (r < 0)
			rc = -1;
		else if (!r)
			found = 1;
	}
	closedir(d);
	if (rc) {
		reader_error(err, errlen, "out of memory reading %s", path);
		return -1;
	}
	if (!found) {
		reader_error(err, errlen,
			     "%s holds no object with symbols (give a needle trace of the unstripped program, or a "
			     "directory of its unstripped files or their .debug files)",
			     path);
		return -1;
	}
	return 0;
}

struct sym_source *sym_source_open(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st)) {
		reader_error(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	struct sym_source *s = calloc(1, sizeof(*s));
	if (!s) {
		reader_error(err, errlen, "out of memory reading %s", path);
		return NULL;
	}
	elf_version(EV_CURRENT);
	if (S_ISDIR(st.st_mode) ? from_dir(s, path, err, errlen) : from_trace(s, path, err, errlen)) {
		sym_source_close(s);
		return NULL;
	}
	qsort(s->v, s->n, sizeof(*s->v), entry_cmp);
	return s;
}

void sym_source_close(struct sym_source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->string_cnt; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->v);
	free(s);
}

const char *sym_source_name(const struct sym_source *s, const char *object, uint64_t addr)
{
	object = base_name(object);
	/* The last entry of object at or below addr. */
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->v[mid].object, object);
		if (c < 0 || (!c && s->v[mid].addr <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym_entry *e = &s->v[lo - 1];
	if (strcmp(e->object, object))
		return NULL;
	/* A function of unknown size holds only its own first byte: an
	 * address past it may be code the source does not name. */
	if (addr != e->addr && addr - e->addr >= e->size)
		return NULL;
	return e->name;
}

int sym_source_each(const struct sym_source *s,
		    int (*fn)(void *arg, const char *object, uint64_t addr, uint64_t size, const char *name), void *arg)
{
	for (size_t i = 0; i < s->n; i++) {
		/* One name per address: the first of aliases, as sorted. */
		if (i && s->v[i].addr == s->v[i - 1].addr && s->v[i].object == s->v[i - 1].object)
			continue;
		int rc = fn(arg, s->v[i].object, s->v[i].addr, s->v[i].size, s->v[i].name);
		if (rc)
			return rc;
	}
	return 0;
}

int trace_use_syms(struct trace *t, const struct sym_source *s)
{
	int named = 0;
	for (size_t i = 0; i < t->site_cap; i++) {
		struct trace_site *ts = &t->sites[i];
		uint64_t addr;
		const char *object, *name;
		if (!ts->name || (ts->flags & TRACE_SITE_EVENT) || !sym_source_unnamed(ts->sym ? ts->sym : ts->name, &addr, &object))
			continue;
		char *own;
		if (!(name = sym_source_name(s, object, addr)) || !(own = strdup(name)))
			continue;
		if (reader_own_name(t, own)) {
			free(own);
			continue;
		}
		ts->sym = ts->name = own;
		reader_demangle_site(t, i, TRACE_DEMANGLE_SIMPLE);
		named++;
	}
	return named;
}
