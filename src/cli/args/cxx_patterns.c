/* cxx_patterns.c - C++ names in -F, -N and --trigger for a program whose
 * process may have no demangler: the agent matches a pattern against a
 * site's demangled name only with the program's own C++ runtime, which a
 * C++ program that uses nothing of it does not load (--as-needed drops
 * it).  So needle record also hands the agent, beside each pattern, the
 * mangled symbols of the program's own functions that it names as the
 * views show them (`kv::*` -> _ZN2kv5Store3getEi, ...).
 *
 * Regular expressions, as uftrace's patterns are: a pattern with ^, $,
 * .*, .+, .?, (, | or + (or any, with --match=regex) is a POSIX extended
 * regular expression, searched for anywhere in a function's name as the
 * views show it; it is followed by the program's functions it matches
 * (by their symbols: the agent matches a C++ name only with a
 * demangler), and stays for the other objects' functions (a trigger's
 * is replaced when it names some of the program's: one line fires it).
 *
 * Invariants: runs once, before the program starts or the session
 * begins; reads the program's symbol tables with libelf; adds names and
 * never removes a pattern, so a pattern the agent can demangle matches as
 * it would anyway. */
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <regex.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args/args.h"
#include "cli/util/cli_util.h"
#include "common/cxx_name.h"
#include "common/pattern.h"
#include "common/with_syms.h"

/* From libstdc++: the Itanium C++ ABI demangler. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

struct cxx_sym {
	char *mangled, *full; /* full: without a return type, with parameters */
	size_t base;          /* its length without the parameters */
	int plain;            /* a C name: full is the symbol */
};

struct cxx_syms {
	struct cxx_sym *v;
	size_t n, cap;
};

/* Symbol name (len bytes) among s, demangled: 0, or -1 out of memory. */
static int add_sym(struct cxx_syms *s, const char *name, size_t len)
{
	char *mangled = strndup(name, len);
	if (!mangled)
		return -1;
	int status, plain = !cxx_name_is_mangled(mangled);
	char *full = plain ? strdup(mangled) : __cxa_demangle(mangled, NULL, NULL, &status);
	if (!full) {
		free(mangled);
		return plain ? -1 : 0; /* a name the demangler refuses names nothing */
	}
	if (s->n == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 64;
		struct cxx_sym *nv = realloc(s->v, ncap * sizeof(*nv));
		if (!nv) {
			free(full);
			free(mangled);
			return -1;
		}
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = (struct cxx_sym){ mangled, full, plain ? strlen(full) : cxx_name_shown(full), plain };
	return 0;
}

/* The names extra (--with-syms lines, common/with_syms.h) gives the
 * program, whose file (base its name, id its build id in hex, "" if
 * none) strip may have left without symbols: those the agent takes. */
static void extra_syms(struct cxx_syms *s, const char *extra, const char *base, const char *id)
{
	for (enum with_syms_pass pass = WITH_SYMS_BY_ID; pass <= WITH_SYMS_BY_NAME; pass++) {
		size_t before = s->n;
		struct with_syms_line l;
		for (const char *p = extra; with_syms_next(&p, &l);)
			if (with_syms_match(&l, pass, &base, 1, id) == WITH_SYMS_YES && add_sym(s, l.name, l.name_len))
				return;
		if (s->n > before)
			return;
	}
}

/* The program's defined function symbols, C++ ones demangled, and those
 * extra gives it (--with-syms). */
static size_t read_syms(const char *exe, const char *extra, struct cxx_sym **out)
{
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	struct cxx_syms s = { 0 };
	char id[65] = "";

	elf_version(EV_CURRENT);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	const void *idb;
	ssize_t id_len = e ? dwelf_elf_gnu_build_id(e, &idb) : 0;
	for (ssize_t i = 0; i < id_len && i < 32; i++)
		snprintf(id + 2 * i, 3, "%02x", ((const uint8_t *)idb)[i]);
	for (Elf_Scn *scn = NULL; e && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !(name = elf_strptr(e, sh.sh_link, sym.st_name)))
				continue;
			if (add_sym(&s, name, strlen(name)))
				break;
		}
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	/* The agent names the object by the file the loader mapped: a
	 * program started through a link is its target. */
	char *real = extra ? realpath(exe, NULL) : NULL;
	const char *base = strrchr(real ? real : exe, '/');
	extra_syms(&s, extra, base ? base + 1 : real ? real : exe, id);
	free(real);
	*out = s.v;
	return s.n;
}

static int names(const struct cxx_sym *s, const char *glob)
{
	return !s->plain && cxx_name_fnmatch(glob, s->full, s->base);
}

static int match_regex; /* --match: 0 by the pattern's look, 1 regex, 2 glob */

/* Is pattern a regular expression rather than a glob? */
static int is_regex(const char *pattern)
{
	if (match_regex)
		return match_regex == 1;
	return pattern_is_regex(pattern);
}

/* Does the regex re find a match in s's name as the views show it? */
static int regex_names(const regex_t *re, const struct cxx_sym *s)
{
	char shown[1024];
	snprintf(shown, sizeof(shown), "%.*s", (int)s->base, s->full);
	return !regexec(re, shown, 0, NULL, 0);
}

/* A mangled name the pattern names, as a line of its own: its '.'s (a
 * clone's ".isra.0", ".cold") escaped, so that the agent, which reads a
 * line with a '.' as a regular expression, finds this name exactly
 * (agent/record/name_index.h indexes such lines); then rest. */
static void put_name(FILE *m, const char *mangled, const char *rest)
{
	if (ftell(m))
		fputc('\n', m);
	for (const char *c = mangled; *c; c++) {
		if (*c == '.')
			fputc('\\', m);
		fputc(*c, m);
	}
	if (rest)
		fprintf(m, "\t%s", rest);
}

/* Each line of *list (a pattern, then the rest of the line after a tab
 * for triggers), followed by the mangled symbols it names; or, with
 * replace, those instead of it when it names some (a trigger's pattern
 * must match by itself, which it cannot without a demangler). */
static int expand(char **list, const struct cxx_sym *syms, size_t n, int replace)
{
	if (!*list)
		return 0;
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	if (!m)
		return -1;
	for (const char *p = *list; *p;) {
		size_t l = strcspn(p, "\n");
		char line[1100], pattern[1100];
		snprintf(line, sizeof(line), "%.*s", (int)l, p);
		snprintf(pattern, sizeof(pattern), "%s", line);
		char *tab = strchr(pattern, '\t');
		const char *rest = tab ? tab + 1 : NULL;
		if (tab)
			*tab = 0;
		/* GLOB@MODULE (-P, -U): another object's functions, which the
		 * program's symbols do not name; the agent matches it. */
		if (rest && !strncmp(rest, "m=", 2)) {
			fprintf(m, "%s%s", ftell(m) ? "\n" : "", line);
			p += l + (p[l] == '\n');
			continue;
		}
		regex_t re;
		if (is_regex(pattern) && !regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB)) {
			/* Followed by the program's functions it names (their
			 * C++ names need a demangler the agent may not have);
			 * itself kept for the other objects' functions it
			 * names, but for a trigger that names some of the
			 * program's (fired once a call, by one line). */
			/* A symbol the regex finds as it is spelled the line itself
			 * names, and is not sent again; but a trigger's line goes
			 * when it names some of the program's functions, and then
			 * each function it names is a line. */
			int hit = 0;
			for (size_t i = 0; i < n && !hit; i++)
				hit = regex_names(&re, &syms[i]) &&
				      (replace || regexec(&re, syms[i].mangled, 0, NULL, 0));
			if (!(replace && hit))
				fprintf(m, "%s%s", ftell(m) ? "\n" : "", line);
			for (size_t i = 0; hit && i < n; i++)
				if ((regex_names(&re, &syms[i]) || (replace && !regexec(&re, syms[i].mangled, 0, NULL, 0))) &&
				    (replace || regexec(&re, syms[i].mangled, 0, NULL, 0)))
					put_name(m, syms[i].mangled, rest);
			regfree(&re);
			p += l + (p[l] == '\n');
			continue;
		}
		/* A symbol the pattern matches as it is spelled ('*', 'foo*')
		 * the agent finds by the pattern: not added again (for -F '*',
		 * every symbol of the program).  A trigger's line, replaced,
		 * is replaced by every function it names, those too. */
		int named = 0;
		for (size_t i = 0; i < n; i++)
			named |= fnmatch(pattern, syms[i].mangled, 0) && names(&syms[i], pattern);
		if (!(replace && named))
			fprintf(m, "%s%s", ftell(m) ? "\n" : "", line);
		for (size_t i = 0; named && i < n; i++) {
			int as_spelled = !fnmatch(pattern, syms[i].mangled, 0);
			if (as_spelled ? replace : names(&syms[i], pattern))
				put_name(m, syms[i].mangled, rest);
		}
		p += l + (p[l] == '\n');
	}
	if (fclose(m))
		return -1;
	free(*list);
	*list = out;
	return 0;
}

int cxx_patterns_expand(const char *exe, const char *extra_syms, int regex, const struct cxx_pattern_list *lists,
			size_t cnt)
{
	struct cxx_sym *syms;
	int err = 0;
	size_t i;

	match_regex = regex;
	for (i = 0; i < cnt && !*lists[i].text; i++)
		;
	if (i == cnt)
		return 0;
	size_t n = read_syms(exe, extra_syms, &syms);
	for (i = 0; n && !err && i < cnt; i++)
		if (expand(lists[i].text, syms, n, lists[i].triggers)) {
			cli_error("record: out of memory");
			err = -1;
		}
	for (size_t k = 0; k < n; k++) {
		free(syms[k].mangled);
		free(syms[k].full);
	}
	free(syms);
	return err;
}
