/* sym_source.c - names for the functions of objects whose own symbols
 * were stripped (--with-syms, uftrace's): from a trace recorded while
 * the objects still had them, or from a directory of the objects'
 * unstripped copies, their separate debug files or uftrace's symbol
 * files.
 *
 * An object is known by its build id where the source says it (a trace
 * since MODULE_BIAS records carry it, an ELF file's .note.gnu.build-id,
 * which strip and objcopy --only-keep-debug keep), else by its file name
 * (the stripped file is rarely where the unstripped one was).  A
 * function is known by its address in its object's file, which strip
 * leaves alone: a trace gives it as a site's address less its object's
 * load bias, a file as its symbol's value, uftrace's OBJECT.sym as the
 * address it writes (the file's, for a PIE, a library or an executable
 * alike).  A directory entry NAME, NAME.debug or NAME.sym stands for the
 * object NAME.
 *
 * Invariants: every function is copied out at open (the trace or the
 * files are closed again); the table is sorted by (object, address), so
 * a lookup is a search of the objects and a binary search; an object
 * whose build id differs from the one asked for names nothing, however
 * its file is called (another build's addresses are other code); only
 * regular files are opened, without blocking (a FIFO in the directory is
 * skipped, never waited on). */
#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/sym_source.h"
#include "reader/reader_internal.h"
#include "reader/trace_reader.h"

struct sym_object {
	const char *name;   /* file name, kept in strings */
	uint8_t id[32];
	uint8_t id_len;     /* 0: the source does not say */
};

struct sym_entry {
	uint32_t obj;       /* index in objs */
	uint64_t addr;      /* in the object's file */
	uint64_t size;      /* 0: unknown (its first byte only) */
	const char *name;
};

struct sym_source {
	struct sym_object *objs;
	size_t obj_cnt, obj_cap;
	struct sym_entry *v;
	size_t n, cap;
	char **strings; /* every string the entries and objects point into */
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

/* A new object of the source: its index, or -1 out of memory. */
static long add_object(struct sym_source *s, const char *name, size_t len, const uint8_t *id, size_t id_len)
{
	if (s->obj_cnt == s->obj_cap) {
		size_t cap = s->obj_cap ? s->obj_cap * 2 : 16;
		struct sym_object *v = realloc(s->objs, cap * sizeof(*v));
		if (!v)
			return -1;
		s->objs = v;
		s->obj_cap = cap;
	}
	struct sym_object *o = &s->objs[s->obj_cnt];
	memset(o, 0, sizeof(*o));
	if (!(o->name = keep(s, name, len)))
		return -1;
	o->id_len = (uint8_t)(id_len < sizeof(o->id) ? id_len : sizeof(o->id));
	if (id)
		memcpy(o->id, id, o->id_len);
	return (long)s->obj_cnt++;
}

static int add(struct sym_source *s, uint32_t obj, uint64_t addr, uint64_t size, const char *name, size_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct sym_entry *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	const char *kept = keep(s, name, len);
	if (!kept)
		return -ENOMEM;
	s->v[s->n++] = (struct sym_entry){ obj, addr, size, kept };
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	if (x->obj != y->obj)
		return x->obj < y->obj ? -1 : 1;
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
	long *objects = malloc((t->module_cnt ? t->module_cnt : 1) * sizeof(*objects));
	if (!objects) {
		trace_close(t);
		reader_error(err, errlen, "out of memory reading %s", path);
		return -1;
	}
	for (size_t m = 0; m < t->module_cnt; m++)
		objects[m] = -1;
	for (size_t i = 0; i < t->site_cap && !rc; i++) {
		const struct trace_site *ts = &t->sites[i];
		const char *sym = ts->sym ? ts->sym : ts->name;
		uint64_t bias = trace_module_bias(t, ts->module), a;
		const char *o;
		if (!sym || !ts->func_ip || (ts->flags & TRACE_SITE_EVENT) || ts->module >= t->module_cnt ||
		    bias == TRACE_BIAS_UNKNOWN || sym_source_unnamed(sym, &a, &o))
			continue;
		biased = 1;
		if (objects[ts->module] < 0) {
			size_t id_len = 0;
			const uint8_t *id = trace_module_build_id(t, ts->module, &id_len);
			const char *b = base_name(t->modules[ts->module]);
			if ((objects[ts->module] = add_object(s, b, strlen(b), id, id ? id_len : 0)) < 0) {
				rc = -1;
				break;
			}
		}
		rc = add(s, (uint32_t)objects[ts->module], ts->func_ip - bias, ts->func_size, sym, strlen(sym));
	}
	free(objects);
	int older = t->module_cnt > 0 && t->module_ids_cnt == 0;
	trace_close(t);
	if (rc) {
		reader_error(err, errlen, "out of memory reading %s", path);
		return -1;
	}
	if (!biased) {
		reader_error(err, errlen,
			     older ? "%s was recorded by an older needle, which kept no load addresses: record it again"
				   : "%s names no function",
			     path);
		return -1;
	}
	return 0;
}

/* uftrace's OBJECT.sym: "ADDR TYPE NAME" lines, ADDR in hex; its
 * functions are of type T, t, W or w, each up to the next line's
 * address.  0, or -1 out of memory. */
static int from_sym_file(struct sym_source *s, int fd, const char *name, size_t name_len)
{
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return 0;
	}
	char line[4096];
	long obj = -1;
	size_t first = s->n;
	uint64_t prev = 0;
	int rc = 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		char *end;
		unsigned long long a = strtoull(line, &end, 16);
		if (end == line || *end != ' ' || !end[1] || end[2] != ' ')
			continue;
		char type = end[1];
		const char *sym = end + 3;
		size_t len = strcspn(sym, "\r\n");
		/* The entry before ends where this line begins. */
		if (s->n > first && !s->v[s->n - 1].size && a > prev)
			s->v[s->n - 1].size = a - prev;
		prev = a;
		if (!strchr("TtWw", type) || !len || !a)
			continue;
		if (obj < 0 && (obj = add_object(s, name, name_len, NULL, 0)) < 0) {
			rc = -1;
			break;
		}
		rc = add(s, (uint32_t)obj, a, 0, sym, len) ? -1 : 0;
	}
	fclose(f);
	return rc;
}

/* The function symbols of the regular file dir/name, as object NAME (a
 * ".debug" suffix dropped; ".sym": uftrace's symbol file).  0, 1 (no
 * functions: not an object, or one without .symtab) or -1 (out of
 * memory). */
static int from_file(struct sym_source *s, int dirfd, const char *name)
{
	struct stat st;
	size_t len = strlen(name);
	if (fstatat(dirfd, name, &st, 0) || !S_ISREG(st.st_mode))
		return 1;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 1;
	size_t before = s->n;
	if (len > 4 && !strcmp(name + len - 4, ".sym")) {
		int rc = from_sym_file(s, fd, name, len - 4);
		return rc < 0 ? -1 : s->n > before ? 0 : 1;
	}
	if (len > 6 && !strcmp(name + len - 6, ".debug"))
		len -= 6;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int rc = 1;
	long obj = -1;
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
			if (obj < 0) {
				const void *id = NULL;
				ssize_t id_len = dwelf_elf_gnu_build_id(e, &id);
				if ((obj = add_object(s, name, len, id, id_len > 0 ? (size_t)id_len : 0)) < 0) {
					rc = -1;
					break;
				}
			}
			rc = add(s, (uint32_t)obj, sym.st_value, sym.st_size, sname, strlen(sname)) ? -1 : 0;
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
			     "directory of its unstripped files, their .debug files or uftrace's .sym files)",
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
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		reader_error(err, errlen, "%s is neither a trace nor a directory", path);
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
	free(s->objs);
	free(s->v);
	free(s);
}

static long object_by(const struct sym_source *s, const char *object, const uint8_t *id, size_t id_len);

long sym_source_object(const struct sym_source *s, const char *path, const uint8_t *id, size_t id_len)
{
	long o = object_by(s, base_name(path), id, id_len);
	if (o != SYM_SOURCE_NONE)
		return o;
	/* A library opened through its soname link (libfoo.so.1): the
	 * source may have it under the name of the file it points to. */
	char *real = realpath(path, NULL);
	if (real && strcmp(base_name(real), base_name(path)))
		o = object_by(s, base_name(real), id, id_len);
	free(real);
	return o;
}

static long object_by(const struct sym_source *s, const char *object, const uint8_t *id, size_t id_len)
{
	if (id_len > sizeof(s->objs[0].id))
		id_len = sizeof(s->objs[0].id);
	/* By build id first: the same build under another file name (a
	 * library's soname link, the real file in the directory). */
	for (size_t i = 0; id_len && i < s->obj_cnt; i++)
		if (s->objs[i].id_len == id_len && !memcmp(s->objs[i].id, id, id_len))
			return (long)i;
	long by_name = SYM_SOURCE_NONE;
	for (size_t i = 0; i < s->obj_cnt; i++) {
		if (strcmp(s->objs[i].name, object))
			continue;
		/* Both know their build, and they differ: other code. */
		if (id_len && s->objs[i].id_len) {
			by_name = by_name == SYM_SOURCE_NONE ? SYM_SOURCE_OTHER_BUILD : by_name;
			continue;
		}
		return (long)i;
	}
	return by_name;
}

const char *sym_source_name(const struct sym_source *s, long obj, uint64_t addr)
{
	if (obj < 0)
		return NULL;
	/* The last entry of obj at or below addr. */
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].obj < (uint32_t)obj || (s->v[mid].obj == (uint32_t)obj && s->v[mid].addr <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym_entry *e = &s->v[lo - 1];
	if (e->obj != (uint32_t)obj)
		return NULL;
	/* A function of unknown size holds only its own first byte: an
	 * address past it may be code the source does not name. */
	if (addr != e->addr && addr - e->addr >= e->size)
		return NULL;
	return e->name;
}

int sym_source_each(const struct sym_source *s, sym_source_fn *fn, void *arg)
{
	for (size_t i = 0; i < s->n; i++) {
		/* One name per address: the first of aliases, as sorted. */
		if (i && s->v[i].addr == s->v[i - 1].addr && s->v[i].obj == s->v[i - 1].obj)
			continue;
		const struct sym_object *o = &s->objs[s->v[i].obj];
		int rc = fn(arg, o->name, o->id, o->id_len, s->v[i].addr, s->v[i].size, s->v[i].name);
		if (rc)
			return rc;
	}
	return 0;
}

int trace_use_syms(struct trace *t, const struct sym_source *s, struct sym_use *use)
{
	long *objs = malloc((t->module_cnt ? t->module_cnt : 1) * sizeof(*objs));
	memset(use, 0, sizeof(*use));
	if (!objs)
		return -1;
	/* SYM_SOURCE_NONE - 1: not looked up yet. */
	for (size_t m = 0; m < t->module_cnt; m++)
		objs[m] = SYM_SOURCE_NONE - 1;
	for (size_t i = 0; i < t->site_cap; i++) {
		struct trace_site *ts = &t->sites[i];
		uint64_t addr;
		const char *object, *name;
		if (!ts->name || (ts->flags & TRACE_SITE_EVENT) || ts->module >= t->module_cnt ||
		    !sym_source_unnamed(ts->sym ? ts->sym : ts->name, &addr, &object))
			continue;
		use->unnamed++;
		long *o = &objs[ts->module];
		if (*o == SYM_SOURCE_NONE - 1) {
			size_t id_len = 0;
			const uint8_t *id = trace_module_build_id(t, ts->module, &id_len);
			*o = sym_source_object(s, t->modules[ts->module], id, id ? id_len : 0);
			if (*o == SYM_SOURCE_OTHER_BUILD && !use->other_build)
				use->other_build = t->modules[ts->module];
		}
		char *own;
		if (!(name = sym_source_name(s, *o, addr)) || !(own = strdup(name)))
			continue;
		if (reader_own_name(t, own)) {
			free(own);
			continue;
		}
		ts->sym = ts->name = own;
		reader_demangle_site(t, i, TRACE_DEMANGLE_SIMPLE);
		use->named++;
	}
	free(objs);
	return 0;
}
