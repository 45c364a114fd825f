/* arg_names.c - the names and types of recorded values, as needle record
 * found them in the program's DWARF (the SEC_ARGS section).
 *
 * The section is text, a line per function and per enum type:
 *   F \t SYM \t KIND:INDEX:SHIFT=LABEL[#ENUM],... [\t ...] [\t {PARAM=TYPE,...}]
 *   E \t ENUM \t VALUE=NAME,...
 * (the braces: the parameters of struct types, whose values' labels are
 * PARAM.field; PARAM empty for a returned struct; TYPE~ for one whose
 * field was left out; PARAM=TEXT>NEXT for one without values, shown as
 * TEXT before NEXT's values).
 * A value in a data block is named by its function's symbol and its
 * register (kind, index) and byte offset in it (shift), never by its
 * position: -A / -R and --auto-args items of one function may come in
 * any order.  Two F lines of one symbol (an entry side and an exit side)
 * add up.
 *
 * Invariants: parsed once when the file is opened; read-only after, so
 * every view may share it; a malformed section is dropped whole (values
 * then show by register, arg1=...), never half-used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/arg_names.h"

static int func_cmp(const void *a, const void *b)
{
	return strcmp(((const struct arg_names_func *)a)->sym, ((const struct arg_names_func *)b)->sym);
}

/* "KIND:INDEX:SHIFT=LABEL[#ENUM],..." into f (appended). */
static int parse_items(struct arg_names_func *f, char *s)
{
	for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned kind, index, shift;
		int n = 0;
		if (sscanf(tok, "%u:%u:%u=%n", &kind, &index, &shift, &n) != 3 || !n || kind > 255 || index > 255 ||
		    shift > 7)
			return -1;
		char *label = tok + n, *hash = strchr(label, '#');
		int32_t enum_id = -1;
		if (hash) {
			*hash = 0;
			enum_id = (int32_t)strtol(hash + 1, NULL, 10);
			if (enum_id < 0 || enum_id > 1000000)
				return -1;
		}
		struct arg_name *v = realloc(f->v, (f->cnt + 1) * sizeof(*v));
		if (!v)
			return -1;
		f->v = v;
		v[f->cnt++] = (struct arg_name){ (uint8_t)kind, (uint8_t)index, (uint8_t)shift, enum_id, label };
	}
	return 0;
}

/* "{PARAM=TYPE,...}" into f's groups (appended). */
static int parse_groups(struct arg_names_func *f, char *s)
{
	size_t n = strlen(s);
	if (n < 2 || s[0] != '{' || s[n - 1] != '}')
		return -1;
	s[n - 1] = 0;
	for (char *save = NULL, *tok = strtok_r(s + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			return -1;
		*eq = 0;
		char *next = strchr(eq + 1, '>');
		if (next)
			*next++ = 0;
		struct arg_group *g = realloc(f->groups, (f->group_cnt + 1) * sizeof(*g));
		if (!g)
			return -1;
		f->groups = g;
		size_t tl = strlen(eq + 1);
		uint8_t partial = !next && tl && eq[tl] == '~';
		if (partial)
			eq[tl] = 0;
		f->partial |= partial;
		g[f->group_cnt++] = (struct arg_group){ tok, eq + 1, next, partial };
	}
	return 0;
}

static int parse_enum(struct arg_names *an, char *id_text, char *s)
{
	char *end;
	long id = strtol(id_text, &end, 10);
	if (*end || id < 0 || id > 1000000)
		return -1;
	if ((size_t)id >= an->enum_cnt) {
		struct arg_names_enum *e = realloc(an->enums, ((size_t)id + 1) * sizeof(*e));
		if (!e)
			return -1;
		memset(e + an->enum_cnt, 0, ((size_t)id + 1 - an->enum_cnt) * sizeof(*e));
		an->enums = e;
		an->enum_cnt = (size_t)id + 1;
	}
	struct arg_names_enum *e = &an->enums[id];
	for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			return -1;
		*eq = 0;
		int64_t *v = realloc(e->values, (e->cnt + 1) * sizeof(*v));
		if (v)
			e->values = v;
		const char **nm = realloc(e->names, (e->cnt + 1) * sizeof(*nm));
		if (nm)
			e->names = nm;
		if (!v || !nm)
			return -1;
		e->values[e->cnt] = strtoll(tok, NULL, 10);
		e->names[e->cnt++] = eq + 1;
	}
	return 0;
}

int arg_names_parse(struct arg_names *an, const char *text, size_t len)
{
	arg_names_free(an);
	if (!(an->text = malloc(len + 1)))
		return -1;
	memcpy(an->text, text, len);
	an->text[len] = 0;
	for (char *save = NULL, *line = strtok_r(an->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5] = { line, NULL, NULL, NULL, NULL };
		int n = 1;
		for (char *t = strchr(line, '\t'); t && n < 5; t = strchr(t + 1, '\t')) {
			*t = 0;
			f[n++] = t + 1;
		}
		if (n >= 3 && !strcmp(f[0], "E")) {
			if (parse_enum(an, f[1], f[2]))
				goto bad;
			continue;
		}
		if (n < 3 || strcmp(f[0], "F"))
			goto bad;
		struct arg_names_func *v = realloc(an->funcs, (an->func_cnt + 1) * sizeof(*v));
		if (!v)
			goto bad;
		an->funcs = v;
		struct arg_names_func *fn = &v[an->func_cnt++];
		*fn = (struct arg_names_func){ .sym = f[1], .varargs = n >= 4 && !strcmp(f[3], "...") };
		if (parse_items(fn, f[2]))
			goto bad;
		for (int k = 3; k < n; k++)
			if (f[k][0] == '{' ? parse_groups(fn, f[k]) : strcmp(f[k], "...") ? -1 : 0)
				goto bad;
	}
	if (an->func_cnt)
		qsort(an->funcs, an->func_cnt, sizeof(*an->funcs), func_cmp);
	/* Lines of one symbol add up, into the first. */
	size_t out = 0;
	for (size_t i = 0; i < an->func_cnt; i++) {
		struct arg_names_func *f = &an->funcs[i];
		if (out && !strcmp(an->funcs[out - 1].sym, f->sym)) {
			struct arg_names_func *into = &an->funcs[out - 1];
			if (f->cnt) {
				struct arg_name *v = realloc(into->v, (into->cnt + f->cnt) * sizeof(*v));
				if (!v)
					goto bad;
				memcpy(v + into->cnt, f->v, f->cnt * sizeof(*v));
				into->v = v;
				into->cnt += f->cnt;
			}
			into->varargs |= f->varargs;
			into->partial |= f->partial;
			if (f->group_cnt) {
				struct arg_group *g = realloc(into->groups, (into->group_cnt + f->group_cnt) * sizeof(*g));
				if (!g)
					goto bad;
				memcpy(g + into->group_cnt, f->groups, f->group_cnt * sizeof(*g));
				into->groups = g;
				into->group_cnt += f->group_cnt;
			}
			free(f->v);
			free(f->groups);
			f->v = NULL; /* moved: arg_names_free must not see it twice */
			f->groups = NULL;
			f->cnt = f->group_cnt = 0;
			continue;
		}
		an->funcs[out++] = *f;
		if (&an->funcs[out - 1] != f) {
			f->v = NULL;
			f->groups = NULL;
			f->cnt = f->group_cnt = 0;
		}
	}
	an->func_cnt = out;
	return 0;
bad:
	arg_names_free(an);
	return -1;
}

void arg_names_free(struct arg_names *an)
{
	for (size_t i = 0; i < an->func_cnt; i++) {
		free(an->funcs[i].v);
		free(an->funcs[i].groups);
	}
	for (size_t i = 0; i < an->enum_cnt; i++) {
		free(an->enums[i].values);
		free(an->enums[i].names);
	}
	free(an->funcs);
	free(an->enums);
	free(an->text);
	memset(an, 0, sizeof(*an));
}

const struct arg_names_func *arg_names_find(const struct arg_names *an, const char *sym)
{
	size_t lo = 0, hi = an->func_cnt;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(an->funcs[mid].sym, sym);
		if (!c)
			return &an->funcs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct arg_name *arg_names_item(const struct arg_names_func *f, unsigned kind, unsigned index, unsigned shift)
{
	for (uint32_t i = 0; f && i < f->cnt; i++)
		if (f->v[i].kind == kind && f->v[i].index == index && f->v[i].shift == shift)
			return &f->v[i];
	return NULL;
}

const char *arg_names_group(const struct arg_names_func *f, const char *label, int at_exit, size_t *param_len)
{
	/* A returned struct's fields are labelled by the field alone ("x"),
	 * its address (returned in memory) "". */
	size_t n = at_exit ? 0 : strcspn(label, ".[");
	for (uint32_t i = 0; at_exit && f && i < f->group_cnt; i++) {
		const struct arg_group *g = &f->groups[i];
		int by_ref = g->type[0] == '&';
		if (!*g->param && (*label == 0) == by_ref) {
			*param_len = 0;
			return g->type + by_ref;
		}
	}
	for (uint32_t i = 0; !at_exit && f && i < f->group_cnt; i++) {
		const struct arg_group *g = &f->groups[i];
		if (g->next)
			continue; /* no values of its own */
		/* "&TYPE": the value is the object's address, the whole
		 * value (label PARAM); else its fields are (PARAM.x). */
		int by_ref = g->type[0] == '&';
		if (strlen(g->param) == n && !strncmp(g->param, label, n) && (label[n] == 0) == by_ref) {
			*param_len = n;
			return g->type + by_ref;
		}
	}
	return NULL;
}

/* Are e's nonzero enumerators single bits, two at least, none twice:
 * flags, whose values are ORs of them? */
static int enum_is_flags(const struct arg_names_enum *e)
{
	uint64_t seen = 0;
	size_t bits = 0;

	for (size_t i = 0; i < e->cnt; i++) {
		uint64_t v = (uint64_t)e->values[i];
		if (!v)
			continue;
		if ((v & (v - 1)) || (seen & v))
			return 0;
		seen |= v;
		bits++;
	}
	return bits >= 2;
}

int arg_names_enum_format(const struct arg_names *an, int32_t id, uint64_t v, unsigned bits, char *buf, size_t len)
{
	const char *name = arg_names_enumerator(an, id, v, bits);
	if (name)
		return snprintf(buf, len, "%s", name) < (int)len;
	if (id < 0 || (size_t)id >= an->enum_cnt || !enum_is_flags(&an->enums[id]) || !len)
		return 0;
	const struct arg_names_enum *e = &an->enums[id];
	uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1, rest = v & mask;
	size_t off = 0;
	int named = 0;
	/* Highest bit first, as uftrace writes them (MAP_ANON|MAP_PRIVATE). */
	for (int b = 63; b >= 0; b--) {
		uint64_t bit = 1ull << b;
		if (!(rest & bit))
			continue;
		for (size_t i = 0; i < e->cnt; i++) {
			if ((uint64_t)e->values[i] != bit)
				continue;
			int n = snprintf(buf + off, len - off, "%s%s", off ? "|" : "", e->names[i]);
			if (n < 0 || (size_t)n >= len - off)
				return 0;
			off += (size_t)n;
			rest &= ~bit;
			named = 1;
			break;
		}
	}
	if (!named)
		return 0;
	if (rest) {
		int n = snprintf(buf + off, len - off, "|%#llx", (unsigned long long)rest);
		if (n < 0 || (size_t)n >= len - off)
			return 0;
	}
	return 1;
}

const char *arg_names_enumerator(const struct arg_names *an, int32_t id, uint64_t v, unsigned bits)
{
	if (id < 0 || (size_t)id >= an->enum_cnt)
		return NULL;
	uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
	const struct arg_names_enum *e = &an->enums[id];
	for (size_t i = 0; i < e->cnt; i++)
		if (((uint64_t)e->values[i] & mask) == (v & mask))
			return e->names[i];
	return NULL;
}
