/* arg_specs.c - needle record's -A, -R, --auto-args and value filters
 * (-F 'GLOB@arg2>1000'): from what the user wrote, and the program's
 * DWARF when it has some, to the lines the agent reads (agent/record/
 * args.h) and the names the views show (SEC_ARGS, docs/file-format.md).
 *
 * Specs are checked in two steps: their syntax as the options are read
 * (arg_plan_add_spec, arg_plan_add_filter), then, before the program
 * starts, against its debug info (arg_plan_resolve): an argument a function
 * does not have, a string format on a value that is not a pointer, a
 * return value of a void function, a parameter name it does not have.
 * Only a spec naming one function exactly is checked against DWARF; a
 * glob may match functions of other signatures, and is taken as given.
 *
 * Agent lines: "GLOB\tA|R\tkind:index:fmt:bits[:shift][~],...[\tSCOPE]"
 * (~: the user gave no format, so a value another line names keeps that
 * line's; SCOPE "main": the program's own functions only, as DWARF describes
 * them; "main@OFFSET", "=DEV:INO@OFFSET": the one function at that
 * offset of the program's file, or of the library file of that identity,
 * --auto-args) and
 * filters "GLOB\tkind:index:fmt:bits[:shift]\tOP\tVALUE".
 */
#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/args/args.h"
#include "cli/args/dwarf_params.h"
#include "cli/args/libc_protos.h"
#include "cli/util/cli_util.h"
#include "cli/util/trigger_spec.h"
#include "common/cxx_name.h"
#include "common/pattern.h"
#include "common/shm_layout.h"
#include "common/value_spec.h"

/* One value named in a spec, before it is resolved. */
struct value_ref {
	char name[DW_LABEL_MAX];
	char fmt;        /* 0: from DWARF, or d (f for fpargN) */
	unsigned bits;   /* 0: from DWARF, or 64 */
};

static int append_line(char **list, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int append_line(char **list, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char line[4096];

	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		cli_error("record: a spec line of more than %zu bytes", sizeof(line));
		return -1;
	}
	char *p = realloc(*list, *len + (size_t)n + 2);
	if (!p) {
		cli_error("record: out of memory");
		return -1;
	}
	if (*len)
		p[(*len)++] = '\n';
	memcpy(p + *len, line, (size_t)n + 1);
	*len += (size_t)n;
	*list = p;
	return 0;
}

/* "/FMT": d u x c p f s with bits 8/16/32/64; 0 or -1.  uftrace's
 * spellings are taken too: i for d (/i, /i32), and the bits alone (/32)
 * for an fparg's float or an integer's d. */
static int parse_format(const char *fmt, struct value_ref *v)
{
	char *end;

	if (*fmt >= '1' && *fmt <= '9') {
		/* /80: uftrace's long double, wherever it is. */
		v->fmt = !strncmp(v->name, "fparg", 5) || !strcmp(fmt, "80") ? 'f' : 'd';
	} else {
		if (!*fmt || !strchr("duxcpfsiS", *fmt))
			return -1;
		v->fmt = *fmt == 'i' ? 'd' : *fmt;
		fmt++;
	}
	v->bits = v->fmt == 'c' ? 8 : 0; /* 0: the type's with debug info, else 64 */
	if (*fmt) {
		v->bits = (unsigned)strtoul(fmt, &end, 10);
		if (*end || (v->bits != 8 && v->bits != 16 && v->bits != 32 && v->bits != 64 && v->bits != 80) ||
		    v->fmt == 's' || v->fmt == 'S')
			return -1;
	}
	if (v->fmt == 'f' && v->bits && v->bits != 32 && v->bits != 64 && v->bits != ARG_BITS_LONG_DOUBLE)
		return -1;
	if (v->bits == ARG_BITS_LONG_DOUBLE && v->fmt != 'f')
		return -1;
	return 0;
}

/* The register of argN / fpargN / retval: kind and index, or -1 for a
 * name only DWARF can resolve, -2 for a number out of range.  argN with
 * N > 6 is the (N-6)-th 8-byte word above the return address: where the
 * ABI passes the 7th integer argument when the six before it took the
 * registers (and whatever else went to memory, as DWARF places it). */
static int register_of(const char *name, unsigned *kind, unsigned *index)
{
	char *end;
	unsigned long n;

	/* Compared before it is narrowed: arg4294967297 is out of range,
	 * not arg1. */
	if (!strncmp(name, "fparg", 5) && name[5]) {
		*kind = ARG_KIND_FP;
		n = strtoul(name + 5, &end, 10);
		*index = (unsigned)n;
		return *end || n < 1 || n > 8 ? -2 : 0;
	}
	if (!strncmp(name, "arg", 3) && name[3] >= '0' && name[3] <= '9') {
		*kind = ARG_KIND_INT;
		n = strtoul(name + 3, &end, 10);
		*index = (unsigned)n;
		return *end || n < 1 || n > ARG_INDEX_MAX ? -2 : 0;
	}
	if (!strcmp(name, "retval")) {
		*kind = ARG_KIND_RET;
		*index = 0;
		return 0;
	}
	return -1;
}

static int is_glob(const char *s)
{
	return strpbrk(s, "*?[\\") != NULL;
}

/* The next line of a newline-separated list at *p, into line: 1, or 0
 * at its end. */
static int next_line(const char **p, char *line, size_t len)
{
	if (!*p || !**p)
		return 0;
	const char *nl = strchr(*p, '\n');
	size_t n = nl ? (size_t)(nl - *p) : strlen(*p);
	snprintf(line, len, "%.*s", (int)n, *p);
	*p += n + (nl != NULL);
	return 1;
}

/* Where a value filter "GLOB@ARG OP VALUE" puts its operator (*op, its
 * length *oplen): 0, or -1 when it has none of == != < <= > >=. */
static int filter_op(const char *at, const char **op, size_t *oplen)
{
	*op = at + 1 + strcspn(at + 1, "=!<>");
	if (!**op || *op == at + 1)
		return -1;
	*oplen = (*op)[1] == '=' ? 2 : 1;
	return ((*op)[0] == '=' || (*op)[0] == '!') && *oplen != 2 ? -1 : 0;
}

/* The DWARF of the function a spec's glob names, when it names exactly
 * one the debug info describes unambiguously. */
static const struct dw_func *spec_function(const struct dw_info *dw, const char *glob)
{
	const struct dw_func *f = dw && !is_glob(glob) ? dw_info_find(dw, glob) : NULL;
	return f && !f->ambiguous ? f : NULL;
}

/* The DWARF a spec is checked against: the program's, then, for a name
 * it does not describe, each library's, read when first needed (libc's
 * takes a few tenths of a second). */
struct dw_set {
	const char *exe;            /* the program's file */
	const struct dw_info *main; /* NULL: the program has none */
	const struct program_libs *libs;
	struct dw_info *lib;        /* by library */
	uint8_t *state;             /* by library: 0 not read yet, 1 read, 2 none */
};

static void dw_set_free(struct dw_set *set)
{
	for (size_t i = 0; set->libs && set->state && i < set->libs->cnt; i++)
		if (set->state[i] == 1)
			dw_info_free(&set->lib[i]);
	free(set->lib);
	free(set->state);
}

/* The function glob names exactly, and the scope of its agent line:
 * "\tmain" for the program's (by name), "\t=DEV:INO@OFFSET" for a
 * library's (that function only).  *from: the DWARF it came from. */
static const struct dw_func *set_function(struct dw_set *set, const char *glob, char *scope, size_t len,
					  const struct dw_info **from)
{
	const struct dw_func *f = spec_function(set->main, glob);
	char err[4352];

	*from = set->main;
	if (f) {
		snprintf(scope, len, "\tmain");
		return f;
	}
	if (is_glob(glob) || !set->libs || !set->libs->cnt)
		return NULL;
	if (!set->lib && (!(set->lib = calloc(set->libs->cnt, sizeof(*set->lib))) ||
			  !(set->state = calloc(set->libs->cnt, 1)))) {
		free(set->lib);
		set->lib = NULL;
		return NULL;
	}
	for (size_t i = 0; i < set->libs->cnt; i++) {
		const struct program_lib *pl = &set->libs->v[i];
		if (!set->state[i])
			set->state[i] = dw_info_load(pl->file, &set->lib[i], err, sizeof(err)) ? 2 : 1;
		if (set->state[i] != 1 || !(f = spec_function(&set->lib[i], glob)) || f->file_off == UINT64_MAX)
			continue;
		if (f->ifunc) /* its site is the implementation the resolver picked */
			snprintf(scope, len, "\t=%llu:%llu", (unsigned long long)pl->dev, (unsigned long long)pl->ino);
		else
			snprintf(scope, len, "\t=%llu:%llu@%llu", (unsigned long long)pl->dev,
				 (unsigned long long)pl->ino, (unsigned long long)f->file_off);
		*from = &set->lib[i];
		return f;
	}
	return NULL;
}

/* -1 (said) when a spec names a parameter of a C++ name that several
 * overloads share: which one's parameter is meant is not known. */
static int refuse_overloads(const char *opt, const char *spec, const struct dw_info *dw, const char *glob)
{
	char list[512];

	if (!dw || is_glob(glob) || dw_info_find(dw, glob) || dw_info_overloads(dw, glob, list, sizeof(list)) < 2)
		return 0;
	cli_error("%s '%s': '%s' is overloaded (%s): name one with its parameters to name its parameters", opt, spec,
		  glob, list);
	return -1;
}

static int valid_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || *s == '.' || *s == '[' || *s == ']' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return 0;
	return 1;
}

/* uftrace's FUNC@MODULE,argN: the first item names the object the
 * function is in, when it is "plt" (any but the program: its calls into
 * libraries) or cannot be a parameter's name ("t-allocfree"); at
 * resolve time also when it names the program or one of its libraries
 * (module_scope).  A name of neither is a parameter's. */
static int module_item(const char *tok)
{
	if (!strcasecmp(tok, "plt"))
		return 1;
	/* A file's name that no parameter's could be: with '-' or '+'. */
	if (!strpbrk(tok, "-+") || strlen(tok) >= 256)
		return 0;
	for (const char *p = tok; *p; p++)
		if (!strchr("._+-", *p) && !(*p >= '0' && *p <= '9') && !(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z'))
			return 0;
	return 1;
}

/* Is a scope DWARF gave (a function of one object) within a module's? */
static int scope_within(const char *scope, const char *module)
{
	if (!strcmp(module, "\t!main"))
		return !strncmp(scope, "\t=", 2);
	return !strncmp(scope, module, strlen(module));
}

/* The scope of a FUNC@MODULE item: "\t!main", "\tmain" or
 * "\t=DEV:INO" into scope; 0 when tok names no object. */
static int module_scope(const struct dw_set *set, const char *tok, char *scope, size_t len)
{
	if (!strcasecmp(tok, "plt")) {
		snprintf(scope, len, "\t!main");
		return 1;
	}
	if (set->exe && module_name_matches(tok, set->exe)) {
		snprintf(scope, len, "\tmain");
		return 1;
	}
	for (size_t i = 0; set->libs && i < set->libs->cnt; i++)
		if (module_name_matches(tok, set->libs->v[i].path)) {
			snprintf(scope, len, "\t=%llu:%llu", (unsigned long long)set->libs->v[i].dev,
				 (unsigned long long)set->libs->v[i].ino);
			return 1;
		}
	return 0;
}

/* uftrace's "%LOCATION" after a value: where it is, as needle's names
 * say it ("%rdi" is arg1, "%xmm0" fparg1, "%stack+1" or "%stack1" the
 * first stack word, arg7), into name; 0, or -1 when it is no place. */
static int location_name(const char *loc, char *name, size_t len)
{
	static const char *const regs[] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9" };
	char *end;

	for (unsigned i = 0; i < 6; i++)
		if (!strcmp(loc, regs[i]))
			return snprintf(name, len, "arg%u", i + 1) < 0 ? -1 : 0;
	if (!strncmp(loc, "xmm", 3) && loc[3] >= '0' && loc[3] <= '7' && !loc[4])
		return snprintf(name, len, "fparg%d", loc[3] - '0' + 1) < 0 ? -1 : 0;
	if (!strncmp(loc, "stack", 5)) {
		const char *n = loc[5] == '+' ? loc + 6 : loc + 5;
		unsigned long w = strtoul(n, &end, 10);
		if (*n >= '0' && *n <= '9' && !*end && w >= 1 && w <= ARG_INDEX_MAX - 6)
			return snprintf(name, len, "arg%lu", w + 6) < 0 ? -1 : 0;
	}
	return -1;
}

/* "NAME[/FMT][%LOCATION]" */
static int parse_ref(const char *opt, const char *spec, char *tok, struct value_ref *v)
{
	char *slash = strchr(tok, '/'), *pct = strchr(tok, '%');
	unsigned kind, index;
	char where[32];

	memset(v, 0, sizeof(*v));
	if (pct) {
		/* uftrace's explicit place: it names the value. */
		*pct = 0;
		if (location_name(pct + 1, where, sizeof(where))) {
			cli_error("%s '%s': '%%%s' is not a place (%%rdi %%rsi %%rdx %%rcx %%r8 %%r9, %%xmm0-7, "
				  "%%stack+N)", opt, spec, pct + 1);
			return -1;
		}
		int fp = !strncmp(where, "fparg", 5), was_fp = !strncmp(tok, "fparg", 5);
		if (strncmp(tok, "arg", 3) && !was_fp) {
			cli_error("%s '%s': a place (%%%s) goes with argN or fpargN", opt, spec, pct + 1);
			return -1;
		}
		if (fp != was_fp && !(was_fp && !strncmp(pct + 1, "stack", 5))) {
			cli_error("%s '%s': %s cannot be in %%%s", opt, spec, tok, pct + 1);
			return -1;
		}
		/* Keep the format: "arg1/i32" becomes "arg7/i32". */
		char fmt[32] = "";
		if (slash)
			snprintf(fmt, sizeof(fmt), "%s", slash);
		snprintf(tok, strlen(tok) + strlen(pct + 1) + 2, "%s%s", where, fmt);
		slash = strchr(tok, '/');
	}
	if (slash)
		*slash = 0;
	if (strlen(tok) >= sizeof(v->name) || !valid_name(tok) || register_of(tok, &kind, &index) == -2) {
		cli_error("%s '%s': '%s' is not argN (1-6 a register, 7-%d the stack), fparg1..fparg8, retval or a "
			  "parameter's name", opt, spec, tok, ARG_INDEX_MAX);
		return -1;
	}
	snprintf(v->name, sizeof(v->name), "%s", tok);
	if (slash && parse_format(slash + 1, v)) {
		cli_error("%s '%s': '/%s' is not a format (d u x c p f s S, with 8/16/32/64 bits: d32, x16, f32; i for d; "
			  "f80 or 80 a long double)", opt, spec, slash + 1);
		return -1;
	}
	/* A long double goes in memory (two stack words) and comes back in
	 * the x87 st0: never an xmm or integer register. */
	if (v->bits == ARG_BITS_LONG_DOUBLE && strcmp(v->name, "retval")) {
		unsigned k, i;
		if (register_of(v->name, &k, &i) || k != ARG_KIND_INT || i <= 6) {
			cli_error("%s '%s': a long double (/80) is passed on the stack: give its place, "
				  "fpargN/80%%stack+N (N its first stack word)", opt, spec);
			return -1;
		}
	}
	return 0;
}

/* -A PATTERN / -R PATTERN: a glob, or a regular expression
 * (common/pattern.h), checked here. */
static int add_auto_pattern(struct arg_plan *o, const char *pattern, int ret)
{
	if (strpbrk(pattern, "\t\n") || strlen(pattern) > VALUE_GLOB_MAX) {
		cli_error("%s '%s': not a function pattern", ret ? "-R" : "-A", pattern);
		return -1;
	}
	if (pattern_is_regex(pattern)) {
		regex_t re;
		if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB)) {
			cli_error("%s '%s' is not a regular expression", ret ? "-R" : "-A", pattern);
			return -1;
		}
		regfree(&re);
	}
	size_t len = o->auto_patterns ? strlen(o->auto_patterns) : 0;
	return append_line(&o->auto_patterns, &len, "%c%s", ret ? 'R' : 'A', pattern);
}

int arg_plan_add_spec(struct arg_plan *o, const char *spec, int ret)
{
	const char *at = strchr(spec, '@');
	const char *opt = ret ? "-R" : "-A";

	/* uftrace's -A PATTERN: the values debug info gives, of those
	 * functions only. */
	if (!at && *spec)
		return add_auto_pattern(o, spec, ret);

	/* The glob may hold spaces (a C++ name: "operator new", "f(long, long)"). */
	if (!at || at == spec || !at[1] || (size_t)(at - spec) > VALUE_GLOB_MAX || strpbrk(spec, "\t\n") || strlen(spec) > VALUE_SPEC_MAX) {
		cli_error("%s needs GLOB@SPEC (e.g. %s), not '%s'", opt, ret ? "'kv_*@retval/d'" : "'kv_get@arg1/u,arg2/x'",
			  spec);
		return -1;
	}
	if (strstr(at + 1, ",,") || at[1] == ',' || spec[strlen(spec) - 1] == ',') {
		cli_error("%s '%s': an empty value in the list", opt, spec);
		return -1;
	}
	char items[1024];
	snprintf(items, sizeof(items), "%s", at + 1);
	int cnt = 0;
	char *save = NULL;
	for (char *tok = strtok_r(items, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct value_ref v;
		unsigned kind, index;
		if (tok == items && module_item(tok))
			continue; /* FUNC@MODULE,... (resolve_spec) */
		if (parse_ref(opt, spec, tok, &v))
			return -1;
		int reg = register_of(v.name, &kind, &index);
		if (!reg && (kind == ARG_KIND_RET) != ret) {
			cli_error("%s '%s': %s", opt, spec,
				  ret ? "-R takes retval only" : "-A takes arguments; the return value goes with -R");
			return -1;
		}
		if (ret && reg) {
			cli_error("%s '%s': -R takes retval only", opt, spec);
			return -1;
		}
		if (!reg && kind == ARG_KIND_FP && v.fmt && v.fmt != 'f') {
			cli_error("%s '%s': fparg%u is a floating-point register: format f (f32 or f64)", opt, spec, index);
			return -1;
		}
		if (++cnt > DW_ITEMS_MAX) {
			cli_error("%s '%s': at most %d values per function", opt, spec, DW_ITEMS_MAX);
			return -1;
		}
	}
	if (!cnt) {
		cli_error("%s '%s': no value named", opt, spec);
		return -1;
	}
	size_t len = o->specs ? strlen(o->specs) : 0;
	return append_line(&o->specs, &len, "%c%s", ret ? 'R' : 'A', spec);
}

int arg_plan_add_reads(struct arg_plan *o, const char *glob, unsigned mask)
{
	size_t len = o->reads ? strlen(o->reads) : 0;
	if (!*glob || strpbrk(glob, "\t\n") || strlen(glob) > VALUE_GLOB_MAX) {
		cli_error("-T '%s@read=...': give a function's name or pattern", glob);
		return -1;
	}
	return append_line(&o->reads, &len, "%s\t%u", glob, mask);
}

/* The agent's lines of -T GLOB@read=: the same readings at the entry
 * and at the exit, as items of ARG_KIND_READ (the views show the
 * exit's as the difference). */
static int resolve_reads(struct arg_plan *o, size_t *args_len, const char *line)
{
	const char *tab = strrchr(line, '\t');
	unsigned mask = tab ? (unsigned)strtoul(tab + 1, NULL, 10) : 0;
	char items[160];
	size_t off = 0;
	for (unsigned i = ARG_READ_STATM_SIZE; tab && i <= ARG_READ_LAST; i++) {
		unsigned want = i >= ARG_READ_FAULT_MAJOR ? TRIGGER_READ_FAULTS : TRIGGER_READ_STATM;
		if (mask & want)
			off += (size_t)snprintf(items + off, sizeof(items) - off, "%s%u:%u:u:64:0", off ? "," : "",
						ARG_KIND_READ, i);
	}
	if (!off)
		return 0;
	int glen = (int)(tab - line);
	return append_line(&o->args, args_len, "%.*s\tA\t%s", glen, line, items) ||
			       append_line(&o->args, args_len, "%.*s\tR\t%s", glen, line, items)
		       ? -1
		       : 0;
}

/* "GLOB@NAME[/FMT] OP VALUE": the glob joins the filters (only those
 * functions are traced); the test goes to the agent. */
int arg_plan_add_filter(struct arg_plan *o, const char *spec)
{
	const char *at = strchr(spec, '@');
	char glob[VALUE_GLOB_MAX + 1];

	if (!at || at == spec || (size_t)(at - spec) >= sizeof(glob) || strlen(spec) > VALUE_SPEC_MAX || strpbrk(spec, "\t\n") ||
	    strchr(at, ' ')) {
		cli_error("-F '%s': a value filter is GLOB@ARG OP VALUE, e.g. -F 'kv_get@arg2>1000'", spec);
		return -1;
	}
	const char *op;
	size_t oplen;
	if (filter_op(at, &op, &oplen)) {
		cli_error("-F '%s': a value filter is GLOB@ARG OP VALUE with OP one of == != < <= > >=", spec);
		return -1;
	}
	const char *value = op + oplen;
	char *end;
	errno = 0;
	if (*value == '-')
		(void)strtoll(value, &end, 0);
	else
		(void)strtoull(value, &end, 0);
	if (errno || end == value || *end) {
		(void)strtod(value, &end);
		if (end == value || *end) {
			cli_error("-F '%s': '%s' is not a number", spec, value);
			return -1;
		}
	}
	char tok[DW_LABEL_MAX + 8];
	if ((size_t)(op - at - 1) >= sizeof(tok)) {
		cli_error("-F '%s': '%.*s' is too long a name", spec, (int)(op - at - 1), at + 1);
		return -1;
	}
	snprintf(tok, sizeof(tok), "%.*s", (int)(op - at - 1), at + 1);
	struct value_ref v;
	unsigned kind, index;
	if (parse_ref("-F", spec, tok, &v))
		return -1;
	if (!register_of(v.name, &kind, &index) && kind == ARG_KIND_RET) {
		cli_error("-F '%s': the return value is known only when the call ends, after its calls were "
			  "recorded; filter on it in the views (needle replay --ret-ne)", spec);
		return -1;
	}
	/* As -A: an xmm register holds a float, not an integer to compare. */
	if (!register_of(v.name, &kind, &index) && kind == ARG_KIND_FP && v.fmt && v.fmt != 'f') {
		cli_error("-F '%s': fparg%u is a floating-point register: format f (f32 or f64)", spec, index);
		return -1;
	}
	if (v.fmt == 's' || v.fmt == 'S') {
		cli_error("-F '%s': a filter compares numbers; a string format cannot be compared", spec);
		return -1;
	}
	snprintf(glob, sizeof(glob), "%.*s", (int)(at - spec), spec);
	size_t len = o->value_globs ? strlen(o->value_globs) : 0;
	if (append_line(&o->value_globs, &len, "%s", glob))
		return -1;
	len = o->value_filters ? strlen(o->value_filters) : 0;
	return append_line(&o->value_filters, &len, "%s", spec);
}

/* The DWARF item a parameter's (or a struct field's) name names in f. */
static const struct dw_item *dwarf_item(const struct dw_func *f, const char *name)
{
	for (uint8_t i = 0; i < f->entry_cnt; i++)
		if (!strcmp(f->entry[i].label, name))
			return &f->entry[i];
	return NULL;
}

static const char *what_name(uint8_t what)
{
	switch (what) {
	case 'i': return "an integer";
	case 'f': return "a floating-point value";
	case 'a': return "part of a struct";
	case 'p': return "a pointer";
	case 's': return "a string";
	default: return "nothing";
	}
}

/* What DWARF says argN of f holds: a register, or a stack word (N > 6);
 * NULL past the words DW_STACK_WORDS describes, or past all of them
 * (*past_end). */
static const struct dw_reg *int_slot(const struct dw_func *f, unsigned index, int *past_end)
{
	*past_end = index > 6 && index - 7 >= f->stack_words && !f->stack_unknown;
	if (index <= 6)
		return &f->int_reg[index - 1];
	return index - 7 < DW_STACK_WORDS && !*past_end ? &f->stack_word[index - 7] : NULL;
}

/* One value of a spec against f's DWARF (when f has some): the item to
 * record, or -1 with the error said. */
static int resolve_ref(const char *opt, const char *spec, const char *func, const struct dw_func *f,
		       const struct value_ref *v, int ret, struct dw_item *out)
{
	unsigned kind = 0, index = 0;
	int reg = register_of(v->name, &kind, &index);

	memset(out, 0, sizeof(*out));
	out->enum_id = -1;
	if (reg && f && f->mismatch) {
		cli_error("%s '%s': the debug info of %s places its parameters where the x86-64 ABI does not "
			  "(an optimized or other calling convention): name values by register (argN, fpargN)",
			  opt, spec, func);
		return -1;
	}
	if (reg) {
		/* A parameter's (or field's) name: DWARF says where it is. */
		const struct dw_item *it = f ? dwarf_item(f, v->name) : NULL;
		if (!f && strchr(func, '.')) {
			cli_error("%s '%s': %s is a compiler's clone of a function, which may take other parameters than "
				  "its debug info lists: name values by register (argN, fpargN)", opt, spec, func);
			return -1;
		}
		if (!f) {
			cli_error("%s '%s': naming a parameter ('%s') needs debug info for %s", opt, spec, v->name, func);
			return -1;
		}
		if (!it) {
			cli_error("%s '%s': %s has no parameter '%s' whose value is known at its entry (per its debug "
				  "info)", opt, spec, func, v->name);
			return -1;
		}
		*out = *it;
		if ((v->fmt == 's' || v->fmt == 'S') && it->fmt != 's' && it->fmt != 'p') {
			cli_error("%s '%s': '%s' of %s is not a pointer: it cannot be read as a string", opt, spec,
				  v->name, func);
			return -1;
		}
		if (v->fmt) {
			out->fmt = (uint8_t)v->fmt;
			if (v->bits || v->fmt == 's' || v->fmt == 'S')
				out->bits = (uint8_t)(v->bits ? v->bits : 64);
		}
		if (out->shift * 8u + (out->fmt == 's' || out->fmt == 'S' ? 64u : out->bits) > 64u) {
			cli_error("%s '%s': '%s' of %s is %u bytes into its register: at most %u bits fit", opt, spec,
				  v->name, func, out->shift, 64u - out->shift * 8u);
			return -1;
		}
		out->enum_id = v->fmt ? -1 : it->enum_id;
		return 0;
	}
	/* No format and no type: 'a', a 64-bit integer that replay shows as
	 * uftrace shows its untyped values (file-format.md). */
	char fmt = v->fmt ? v->fmt : kind == ARG_KIND_FP ? 'f' : 'a';
	unsigned bits = v->bits ? v->bits : 64;
	int past_end = 0;
	const struct dw_reg *slot = f && kind == ARG_KIND_INT ? int_slot(f, index, &past_end) : NULL;
	if (kind == ARG_KIND_INT && fmt == 'f' &&
	    (index <= 6 ? !(slot && slot->what == 'a') : slot && slot->what && strchr("ips", slot->what))) {
		if (index <= 6)
			cli_error("%s '%s': arg%u is an integer register; a floating-point argument is fpargN", opt, spec,
				  index);
		else
			cli_error("%s '%s': arg%u of %s ('%s') is %s, not a floating-point value", opt, spec, index, func,
				  slot->param, what_name(slot->what));
		return -1;
	}
	if (ret && f && !f->mismatch && bits != ARG_BITS_LONG_DOUBLE) {
		/* -R on what the ABI does not return whole in rax or xmm0. */
		int scalar = f->exit_cnt == 1 && !*f->exit[0].label;
		if (f->returns && !scalar) {
			cli_error("%s '%s': %s returns a struct, a long double or a value in memory, not one register: "
				  "--auto-args shows the fields of one returned in registers", opt, spec, func);
			return -1;
		}
		if (scalar && fmt == 's' && f->exit[0].fmt != 's' && f->exit[0].fmt != 'p') {
			cli_error("%s '%s': %s does not return a pointer: it cannot be read as a string", opt, spec, func);
			return -1;
		}
	}
	if (f && kind == ARG_KIND_INT && !f->on_stack) {
		const struct dw_reg *r = slot;
		if ((past_end || (r && !r->what)) && !f->varargs) {
			cli_error("%s '%s': %s has no arg%u (per its debug info%s)", opt, spec, func, index,
				  index > 6 ? ", no parameter in that stack word" : "");
			return -1;
		}
		if (fmt == 's' && r && r->what && r->what != 's' && r->what != 'p') {
			cli_error("%s '%s': arg%u of %s ('%s') is %s, not a pointer: it cannot be read as a string", opt,
				  spec, index, func, r->param, what_name(r->what));
			return -1;
		}
	}
	if (f && kind == ARG_KIND_FP && !f->fp_reg[index - 1].what && !f->varargs) {
		cli_error("%s '%s': %s has no fparg%u (per its debug info)", opt, spec, func, index);
		return -1;
	}
	if (f && ret && !f->returns) {
		cli_error("%s '%s': %s returns nothing (void, per its debug info)", opt, spec, func);
		return -1;
	}
	/* No format given: the type's, when DWARF has the value whole in
	 * that register (an int's 32 bits, a double's xmm0). */
	if (!v->fmt && f) {
		const struct dw_item *items = ret ? f->exit : f->entry;
		uint8_t cnt = ret ? f->exit_cnt : f->entry_cnt;
		for (uint8_t i = 0; i < cnt; i++) {
			const struct dw_item *it = &items[i];
			int whole = !it->shift && (ret ? cnt == 1 && !*it->label
						       : (kind == ARG_KIND_INT ? slot && slot->what != 'a'
									       : f->fp_reg[index - 1].what != 'a'));
			if (whole && (ret ? 1 : it->kind == kind && it->index == index)) {
				*out = *it;
				out->label[0] = 0;
				return 0;
			}
		}
	}
	/* A format without a size: the type's size when DWARF has one. */
	if (v->fmt && !v->bits && v->fmt != 's' && v->fmt != 'S' && f) {
		const struct dw_item *items = ret ? f->exit : f->entry;
		uint8_t cnt = ret ? f->exit_cnt : f->entry_cnt;
		for (uint8_t i = 0; i < cnt; i++)
			if (!items[i].shift && (ret ? cnt == 1 : items[i].kind == kind && items[i].index == index))
				bits = items[i].bits;
	}
	if (kind == ARG_KIND_RET && fmt == 'f')
		/* a float return value is in xmm0, a long double in st0 */
		kind = bits == ARG_BITS_LONG_DOUBLE ? ARG_KIND_RET_ST0 : ARG_KIND_RET_FP;
	*out = (struct dw_item){ .kind = (uint8_t)kind, .index = (uint8_t)index, .fmt = (uint8_t)fmt,
				 .bits = (uint8_t)bits, .enum_id = -1 };
	return 0;
}

/* weak: the user gave no format (the agent's "~": a value named before
 * keeps its own). */
static int append_item(char *buf, size_t len, size_t *off, const struct dw_item *it, int weak)
{
	int n = snprintf(buf + *off, len - *off, "%s%u:%u:%c:%u:%u%s", *off ? "," : "", it->kind, it->index, it->fmt,
			 it->bits, it->shift, weak ? "~" : "");
	if (n < 0 || (size_t)n >= len - *off) {
		cli_error("record: too many values for one function");
		return -1;
	}
	*off += (size_t)n;
	return 0;
}

/* The label line of f for the views: "F\tSYM\tkind:index:shift=LABEL[#ENUM],...[\t...][\t{P=TYPE,...}]",
 * the last field the parameters of struct types (f's, on this side),
 * when f is given: P=[&]TYPE[~] (~: a field left out), or P=TYPE{}>NEXT
 * (or {...}) for one without values, shown before NEXT's (file-format.md). */
static int label_line(struct arg_plan *o, size_t *len, const char *sym, const struct dw_item *items, int cnt,
		      int varargs, size_t enum_base, const struct dw_func *f, int at_exit)
{
	char buf[4096];
	size_t off = 0;

	for (int i = 0; i < cnt; i++) {
		const struct dw_item *it = &items[i];
		int n = snprintf(buf + off, sizeof(buf) - off, "%s%u:%u:%u=%s", off ? "," : "", it->kind, it->index,
				 it->shift, it->label);
		if (n >= 0 && (size_t)n < sizeof(buf) - off && it->enum_id >= 0)
			n += snprintf(buf + off + n, sizeof(buf) - off - (size_t)n, "#%zu", enum_base + (size_t)it->enum_id);
		if (n < 0 || (size_t)n >= sizeof(buf) - off) {
			cli_error("record: the names of %s's values take too much room", sym);
			return -1;
		}
		off += (size_t)n;
	}
	char groups[1024];
	size_t goff = 0;
	for (int g = 0; f && g < f->group_cnt; g++) {
		const struct dw_group *gr = &f->group[g];
		if (gr->at_exit != at_exit || strpbrk(gr->type, ",}>~\t") || strpbrk(gr->param, ",=}>\t") ||
		    strpbrk(gr->next, ",=}>\t"))
			continue;
		int n = gr->valueless ? snprintf(groups + goff, sizeof(groups) - goff, "%s%s=%s%s>%s", goff ? "," : "{",
						 gr->param, gr->type, gr->empty ? "{}" : "{...}", gr->next)
				      : snprintf(groups + goff, sizeof(groups) - goff, "%s%s=%s%s%s", goff ? "," : "{",
						 gr->param, gr->by_ref ? "&" : "", gr->type, gr->partial ? "~" : "");
		if (n < 0 || (size_t)n >= sizeof(groups) - goff - 1)
			break;
		goff += (size_t)n;
	}
	if (goff)
		groups[goff++] = '}';
	groups[goff] = 0;
	return append_line(&o->arg_labels, len, "F\t%s\t%s%s%s%s", sym, buf, varargs ? "\t..." : "", goff ? "\t" : "",
			   groups);
}

static int enum_lines(struct arg_plan *o, size_t *len, const struct dw_info *info, const uint8_t *used,
		      size_t enum_base)
{
	for (size_t e = 0; e < info->enum_cnt; e++) {
		if (!used[e])
			continue;
		char *line = NULL;
		size_t n = 0;
		FILE *m = open_memstream(&line, &n);
		if (!m) {
			cli_error("record: out of memory");
			return -1;
		}
		fprintf(m, "E\t%zu\t", enum_base + e);
		for (size_t k = 0; k < info->enums[e].cnt; k++)
			fprintf(m, "%s%lld=%s", k ? "," : "", (long long)info->enums[e].values[k], info->enums[e].names[k]);
		char *p = fclose(m) ? NULL : realloc(o->arg_labels, *len + n + 2);
		if (!p) {
			free(line);
			cli_error("record: out of memory");
			return -1;
		}
		if (*len)
			p[(*len)++] = '\n';
		memcpy(p + *len, line, n + 1);
		*len += n;
		o->arg_labels = p;
		free(line);
	}
	return 0;
}

/* Does glob name f, as the agent matches patterns (needle_site_match):
 * its symbol, or a C++ function's demangled name without or with its
 * parameter list? */
static int glob_names(const char *glob, const struct dw_func *f)
{
	return !fnmatch(glob, f->sym, 0) || (f->cxx && cxx_name_fnmatch(glob, f->cxx, f->cxx_base));
}

/* The -A / -R PATTERN lines, compiled once for every function of every
 * object's DWARF. */
struct auto_patterns {
	size_t cnt;
	struct auto_pattern {
		char side;
		int is_regex;
		regex_t re;
		char glob[VALUE_GLOB_MAX + 1];
	} *v;
};

static int auto_patterns_compile(const char *lines, struct auto_patterns *ap)
{
	char line[VALUE_GLOB_MAX + 2];

	memset(ap, 0, sizeof(*ap));
	for (const char *p = lines; p && next_line(&p, line, sizeof(line));) {
		struct auto_pattern *v = realloc(ap->v, (ap->cnt + 1) * sizeof(*v));
		if (!v) {
			cli_error("record: out of memory");
			return -1;
		}
		ap->v = v;
		struct auto_pattern *a = &v[ap->cnt];
		a->side = line[0];
		snprintf(a->glob, sizeof(a->glob), "%s", line + 1);
		a->is_regex = pattern_is_regex(a->glob);
		/* Checked when the option was read. */
		if (a->is_regex && regcomp(&a->re, a->glob, REG_EXTENDED | REG_NOSUB))
			return -1;
		ap->cnt++;
	}
	return 0;
}

static void auto_patterns_free(struct auto_patterns *ap)
{
	for (size_t i = 0; i < ap->cnt; i++)
		if (ap->v[i].is_regex)
			regfree(&ap->v[i].re);
	free(ap->v);
	memset(ap, 0, sizeof(*ap));
}

/* Does a -A (side 'A') or -R PATTERN name f?  A regular expression is
 * found anywhere in its symbol or its C++ name as the views show it. */
static int auto_patterns_name(const struct auto_patterns *ap, char side, const struct dw_func *f)
{
	for (size_t i = 0; i < ap->cnt; i++) {
		const struct auto_pattern *a = &ap->v[i];
		if (a->side != side)
			continue;
		if (!a->is_regex ? glob_names(a->glob, f)
				 : !regexec(&a->re, f->sym, 0, NULL, 0) ||
					   (f->cxx && !regexec(&a->re, f->cxx, 0, NULL, 0)))
			return 1;
	}
	return 0;
}

/* Is f named by one of the -A (or -R) specs? */
static int named_by_spec(const char *specs, char side, const struct dw_func *f)
{
	if (!specs)
		return 0;
	char line[1100];
	for (const char *p = specs; next_line(&p, line, sizeof(line));) {
		char *at = strchr(line, '@');
		if (line[0] != side || !at)
			continue;
		*at = 0;
		if (glob_names(line + 1, f))
			return 1;
	}
	return 0;
}

/* One -A/-R spec: its agent line, checked against DWARF when it names
 * one function exactly. */
static int resolve_spec(struct arg_plan *o, size_t *args_len, size_t *labels_len, struct dw_set *set,
			uint8_t *enum_used, const char *line)
{
	int ret = line[0] == 'R';
	const char *spec = line + 1, *at = strchr(spec, '@');
	const char *opt = ret ? "-R" : "-A";
	char glob[260], items[1024], out[4096];
	size_t off = 0;
	struct dw_item resolved[DW_ITEMS_MAX];
	int cnt = 0, named = 0;

	snprintf(glob, sizeof(glob), "%.*s", (int)(at - spec), spec);
	snprintf(items, sizeof(items), "%s", at + 1);
	char scope[128] = "", module[128] = "";
	const struct dw_info *from;
	const struct dw_func *f = set_function(set, glob, scope, sizeof(scope), &from);
	char *save = NULL;
	for (char *tok = strtok_r(items, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct value_ref v;
		unsigned kind, index;
		/* FUNC@MODULE,...: only that object's functions (a scope
		 * DWARF gave stays: it names one function there). */
		int named_object = tok == items && (module_item(tok) || (register_of(tok, &kind, &index) && !strchr(tok, '/')));
		if (named_object && (module_scope(set, tok, module, sizeof(module)) || module_item(tok))) {
			if (!module[0]) {
				cli_error("%s '%s': '%s' names no object of the program's (its file's name, a library's, "
					  "or plt)", opt, spec, tok);
				return -1;
			}
			if (!scope[0] || !scope_within(scope, module))
				snprintf(scope, sizeof(scope), "%s", module);
			continue;
		}
		if (parse_ref(opt, spec, tok, &v))
			return -1;
		if (register_of(v.name, &kind, &index))
			named = 1;
		if (is_glob(glob) && register_of(v.name, &kind, &index)) {
			cli_error("%s '%s': a parameter's name needs one function, not a glob", opt, spec);
			return -1;
		}
		if (register_of(v.name, &kind, &index) && refuse_overloads(opt, spec, set->main, glob))
			return -1;
		if (resolve_ref(opt, spec, glob, f, &v, ret, &resolved[cnt]))
			return -1;
		if (from != set->main)
			resolved[cnt].enum_id = -1; /* a library's enumerators are not carried: numbers */
		if (register_of(v.name, &kind, &index))
			snprintf(resolved[cnt].label, sizeof(resolved[cnt].label), "%s", v.name);
		if (append_item(out, sizeof(out), &off, &resolved[cnt], !v.fmt))
			return -1;
		cnt++;
	}
	/* Checked against DWARF: that function only (the program's, not a
	 * library's of the same name; a library's at its place), by its
	 * symbol (the name the user gave may be the demangled one). */
	if (append_line(&o->args, args_len, "%s\t%c\t%s%s", f ? f->sym : glob, ret ? 'R' : 'A', out, scope))
		return -1;
	/* Values named by their parameter show under that name. */
	if (named && f && label_line(o, labels_len, f->sym, resolved, cnt, 0, 0, NULL, 0))
		return -1;
	for (int k = 0; named && f && k < cnt; k++)
		if (resolved[k].enum_id >= 0 && enum_used)
			enum_used[resolved[k].enum_id] = 1;
	return 0;
}

static int resolve_filter(struct arg_plan *o, size_t *len, struct dw_set *set, const char *spec)
{
	const char *at = strchr(spec, '@');
	const char *op;
	size_t oplen;
	char glob[260], tok[DW_LABEL_MAX + 8], buf[256];
	struct value_ref v;
	struct dw_item it;
	size_t off = 0;

	filter_op(at, &op, &oplen); /* checked by arg_plan_add_filter */
	snprintf(glob, sizeof(glob), "%.*s", (int)(at - spec), spec);
	snprintf(tok, sizeof(tok), "%.*s", (int)(op - at - 1), at + 1);
	unsigned kind, index;
	if (parse_ref("-F", spec, tok, &v) ||
	    (register_of(v.name, &kind, &index) && refuse_overloads("-F", spec, set->main, glob)))
		return -1;
	char scope[128];
	const struct dw_info *from;
	const struct dw_func *f = set_function(set, glob, scope, sizeof(scope), &from);
	if (resolve_ref("-F", spec, glob, f, &v, 0, &it) || append_item(buf, sizeof(buf), &off, &it, 0))
		return -1;
	if (it.fmt == 's') {
		cli_error("-F '%s': a filter compares numbers; '%s' is a string", spec, v.name);
		return -1;
	}
	/* The value as the agent will read it: a number for f, an integer
	 * (decimal, 0x hex, negative) that fits 64 bits otherwise. */
	const char *value = op + oplen;
	char *end;
	errno = 0;
	if (it.fmt == 'f')
		(void)strtod(value, &end);
	else if (*value == '-')
		(void)strtoll(value, &end, 0);
	else
		(void)strtoull(value, &end, 0);
	if (errno || end == value || *end) {
		cli_error("-F '%s': '%s' is not %s", spec, value,
			  it.fmt == 'f' ? "a number" : "an integer that fits 64 bits (decimal, 0x hex, or negative)");
		return -1;
	}
	return append_line(&o->arg_filters, len, "%s\t%s\t%.*s\t%s", glob, buf, (int)oplen, op, op + oplen);
}

/* Symbols some object's --auto-args lines already describe: a later
 * object's function of the same symbol is left out (the views name
 * values by symbol). */
struct sym_set {
	char **v;
	size_t cnt, sorted;
};

static int sym_cmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int sym_set_has(const struct sym_set *set, const char *sym)
{
	return set->sorted && bsearch(&sym, set->v, set->sorted, sizeof(*set->v), sym_cmp_p);
}

static int sym_set_add(struct sym_set *set, const char *sym)
{
	char **v = realloc(set->v, (set->cnt + 1) * sizeof(*v));
	if (!v || !(v[set->cnt] = strdup(sym))) {
		if (v)
			set->v = v;
		cli_error("record: out of memory");
		return -1;
	}
	set->v = v;
	set->cnt++;
	return 0;
}

/* After an object: what it added becomes searchable. */
static void sym_set_seal(struct sym_set *set)
{
	qsort(set->v, set->cnt, sizeof(*set->v), sym_cmp_p);
	set->sorted = set->cnt;
}

static void sym_set_free(struct sym_set *set)
{
	for (size_t i = 0; i < set->cnt; i++)
		free(set->v[i]);
	free(set->v);
}

/* --auto-args for one object's DWARF: a line per function it describes,
 * applied to that function only: in that object (scope "main", or
 * "=DEV:INO", its file's identity) and at its offset in the file (a
 * static function or an IFUNC's target may bear another's name), with
 * its names (enumerator ids from enum_base on; those used marked in
 * enum_used).  Returns how many functions it described, or -1 (said). */
/* One function's lines (see auto_args_object): 1 if it had some, 0 if
 * not, -1 (said). */
static int auto_args_func(struct arg_plan *o, const struct auto_patterns *ap, size_t *args_len, size_t *labels_len,
			  const struct dw_func *f, const char *object, size_t enum_base, uint8_t *enum_used,
			  struct sym_set *done)
{
	char scope[128];
	if (f->ifunc) /* named by its object: see dw_func.ifunc */
		snprintf(scope, sizeof(scope), "%s", object);
	else
		snprintf(scope, sizeof(scope), "%s@%llu", object, (unsigned long long)f->file_off);
	/* What -A / -R name for a function replaces what DWARF would show
	 * on that side. */
	int entry = f->entry_cnt && (o->auto_args || auto_patterns_name(ap, 'A', f)) &&
		    !named_by_spec(o->specs, 'A', f);
	int exit = f->exit_cnt && (o->auto_args || auto_patterns_name(ap, 'R', f)) &&
		   !named_by_spec(o->specs, 'R', f);
	char items[4096];
	size_t off = 0;
	for (int side = 0; side < 2; side++) {
		if (!(side ? exit : entry))
			continue;
		const struct dw_item *its = side ? f->exit : f->entry;
		int cnt = side ? f->exit_cnt : f->entry_cnt;
		off = 0;
		for (int k = 0; k < cnt; k++)
			if (append_item(items, sizeof(items), &off, &its[k], 1))
				return -1;
		if (append_line(&o->args, args_len, "%s\t%c\t%s\t%s", f->sym, side ? 'R' : 'A', items, scope) ||
		    label_line(o, labels_len, f->sym, its, cnt, !side && (f->varargs || f->truncated), enum_base, f,
			       side))
			return -1;
		for (int k = 0; k < cnt; k++)
			if (its[k].enum_id >= 0 && enum_used)
				enum_used[its[k].enum_id] = 1;
	}
	if ((entry || exit) && sym_set_add(done, f->sym))
		return -1;
	return entry || exit;
}

/* --auto-args for one object's DWARF: a line per function it describes,
 * applied to that function only: in that object (scope "main", or
 * "=DEV:INO", its file's identity) and at its offset in the file (a
 * static function or an IFUNC's target may bear another's name), with
 * its names (enumerator ids from enum_base on; those used marked in
 * enum_used).  Returns how many functions it described, or -1 (said). */
static long auto_args_object(struct arg_plan *o, const struct auto_patterns *ap, size_t *args_len,
			     size_t *labels_len, const struct dw_info *dw, const char *object, size_t enum_base,
			     uint8_t *enum_used, struct sym_set *done)
{
	long described = 0;

	for (size_t i = 0; i < dw->cnt; i++) {
		const struct dw_func *f = &dw->funcs[i];
		if (f->ambiguous || (i && !strcmp(f->sym, dw->funcs[i - 1].sym)) || sym_set_has(done, f->sym) ||
		    f->file_off == UINT64_MAX)
			continue;
		int r = auto_args_func(o, ap, args_len, labels_len, f, object, enum_base, enum_used, done);
		if (r < 0)
			return -1;
		described += r;
	}
	sym_set_seal(done);
	return described;
}

/* The C library's IFUNC'd string functions and system call stubs, which
 * its debug info cannot describe, or (with_enums) the functions whose
 * flags it names, which take the place of what it says (libc_protos.c),
 * for the C library at object; their enums' ids from enum_base on, those
 * used marked in enum_used. */
static long auto_args_libc_protos(struct arg_plan *o, const struct auto_patterns *ap, size_t *args_len,
				  size_t *labels_len, const char *object, struct sym_set *done, int with_enums,
				  size_t enum_base, uint8_t *enum_used)
{
	long described = 0;

	for (size_t i = 0; i < libc_protos_count(); i++) {
		struct dw_func f;
		if (libc_proto_has_enum(i) != with_enums)
			continue;
		libc_proto_func(i, &f);
		if (sym_set_has(done, f.sym))
			continue;
		int r = auto_args_func(o, ap, args_len, labels_len, &f, object, enum_base, enum_used, done);
		if (r < 0)
			return -1;
		described += r;
	}
	sym_set_seal(done);
	return described;
}

int arg_plan_resolve(struct arg_plan *o, const char *exe, const struct program_libs *libs)
{
	struct dw_info dw;
	struct sym_set done = { 0 };
	char err[4352];
	int have_dw = 0, ret = -1;
	size_t args_len = 0, labels_len = 0, filters_len = 0;
	uint8_t *enum_used = NULL;
	long described = 0;

	struct auto_patterns ap = { 0 };
	int autos = o->auto_args || o->auto_patterns;

	if (!arg_plan_wanted(o))
		return 0;
	if (auto_patterns_compile(o->auto_patterns, &ap))
		goto out;
	int e = dw_info_load(exe, &dw, err, sizeof(err));
	have_dw = !e;
	if (have_dw && !(enum_used = calloc(dw.enum_cnt + 1, 1))) {
		cli_error("record: out of memory");
		goto out;
	}
	char line[1100];
	struct dw_set set = { .exe = exe, .main = have_dw ? &dw : NULL, .libs = libs };
	int spec_err = 0;
	for (const char *p = o->specs; !spec_err && next_line(&p, line, sizeof(line));)
		spec_err = resolve_spec(o, &args_len, &labels_len, &set, enum_used, line);
	for (const char *p = o->value_filters; !spec_err && next_line(&p, line, sizeof(line));)
		spec_err = resolve_filter(o, &filters_len, &set, line);
	for (const char *p = o->reads; !spec_err && next_line(&p, line, sizeof(line));)
		spec_err = resolve_reads(o, &args_len, line);
	dw_set_free(&set);
	if (spec_err)
		goto out;
	if (autos && have_dw &&
	    (described = auto_args_object(o, &ap, &args_len, &labels_len, &dw, "main", 0, enum_used, &done)) < 0)
		goto out;
	if (have_dw && enum_lines(o, &labels_len, &dw, enum_used, 0))
		goto out;
	/* The libraries it loads, each with its own DWARF or debug file when
	 * it has one (libc with libc6-dbg): its functions only, known by
	 * the file's identity, enumerator ids after the program's. */
	size_t enum_base = have_dw ? dw.enum_cnt : 0;
	for (size_t i = 0; autos && libs && i < libs->cnt; i++) {
		const struct program_lib *pl = &libs->v[i];
		struct dw_info lib;
		char object[64];
		const char *base = strrchr(pl->path, '/');
		/* The C library's string functions are described without its
		 * debug info too (libc_protos.c). */
		int is_libc = !strncmp(base ? base + 1 : pl->path, "libc.so", 7);
		int have_lib = !dw_info_load(pl->file, &lib, err, sizeof(err));
		if (!have_lib && !is_libc)
			continue;
		snprintf(object, sizeof(object), "=%llu:%llu", (unsigned long long)pl->dev, (unsigned long long)pl->ino);
		uint8_t *used = calloc(have_lib ? lib.enum_cnt + 1 : 1, 1);
		/* The C library's flags by name first: its debug info's
		 * version of those functions is then not used.  Their enums'
		 * ids follow the library's own. */
		struct dw_info flags;
		libc_protos_enums(&flags);
		size_t flags_base = enum_base + (have_lib ? lib.enum_cnt : 0);
		uint8_t flags_used[16] = { 0 };
		_Static_assert(sizeof(flags_used) >= 8, "room for libc_protos' enums");
		long n = !used || flags.enum_cnt > sizeof(flags_used) ? -1
			 : is_libc ? auto_args_libc_protos(o, &ap, &args_len, &labels_len, object, &done, 1, flags_base,
							   flags_used)
				   : 0;
		if (n >= 0 && have_lib) {
			long k = auto_args_object(o, &ap, &args_len, &labels_len, &lib, object, enum_base, used, &done);
			n = k < 0 ? -1 : n + k;
		}
		if (n >= 0 && is_libc) {
			long k = auto_args_libc_protos(o, &ap, &args_len, &labels_len, object, &done, 0, 0, NULL);
			n = k < 0 ? -1 : n + k;
		}
		int r = n < 0 || (have_lib && enum_lines(o, &labels_len, &lib, used, enum_base)) ||
			(is_libc && enum_lines(o, &labels_len, &flags, flags_used, flags_base));
		described += n > 0 ? n : 0;
		free(used);
		if (have_lib) {
			enum_base += lib.enum_cnt;
			dw_info_free(&lib);
		}
		if (is_libc)
			enum_base += flags.enum_cnt;
		if (r) {
			if (!used)
				cli_error("record: out of memory");
			goto out;
		}
	}
	if (!o->auto_args && o->auto_patterns && !described) {
		char first[VALUE_GLOB_MAX + 2];
		const char *p = o->auto_patterns;
		next_line(&p, first, sizeof(first));
		cli_error("%s '%s': no function it names has debug info with %s (in %s or the libraries it loads); "
			  "build it with -g, install its -dbgsym package, or name values with GLOB@SPEC",
			  first[0] == 'R' ? "-R" : "-A", first + 1, first[0] == 'R' ? "a return value" : "arguments",
			  exe);
		goto out;
	}
	if (o->auto_args && !described) {
		if (!have_dw)
			cli_error("--auto-args: %s, nor do the libraries it loads; build it with -g, install its -dbgsym "
				  "package, or name values with -A/-R", err);
		else
			cli_error("--auto-args: the debug info of %s describes no function with arguments or a return "
				  "value", exe);
		goto out;
	}
	ret = 0;
out:
	auto_patterns_free(&ap);
	sym_set_free(&done);
	free(enum_used);
	if (have_dw)
		dw_info_free(&dw);
	return ret;
}

void arg_plan_free(struct arg_plan *p)
{
	free(p->specs);
	free(p->auto_patterns);
	free(p->reads);
	free(p->value_filters);
	free(p->value_globs);
	free(p->args);
	free(p->arg_filters);
	free(p->arg_labels);
	memset(p, 0, sizeof(*p));
}
