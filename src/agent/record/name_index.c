/* name_index.c - a pattern list's mangled names in a hash table
 * (name_index.h).  Built when the recorder selects sites (start-up, a
 * library loaded, needle ctl), never on a traced call: its allocations
 * are of that slow path. */
#include "agent/record/name_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a: the names are short, and the table is built once. */
static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

/* A line's pattern (up to its tab) that the table can hold: a mangled
 * name, its '.'s escaped ("\\."), as needle record sends the names a
 * pattern expands to.  A bare '.' is the user's regular expression's
 * (any character, searched for anywhere): tested as one. */
static int indexable(const char *line, size_t n, const char *tab)
{
	size_t plen = tab ? (size_t)(tab - line) : n;
	if (plen < 3 || line[0] != '_' || line[1] != 'Z')
		return 0;
	if (tab && !strncmp(tab + 1, "m=", 2))
		return 0;
	for (size_t i = 0; i < plen; i++) {
		if (line[i] == '\\' && i + 1 < plen && line[i + 1] == '.') {
			i++;
			continue;
		}
		if (strchr("*?[]^$.()|+\\{}", line[i]))
			return 0;
	}
	return 1;
}

static struct name_slot *slot_of(const struct name_index *x, const char *name, size_t len, uint32_t h)
{
	for (size_t i = h & x->mask;; i = (i + 1) & x->mask) {
		struct name_slot *s = &x->slots[i];
		if (!s->name || (s->hash == h && s->len == len && !memcmp(s->name, name, len)))
			return s;
	}
}

int name_index_build(struct name_index *x, const char *list)
{
	size_t lines = 0;

	memset(x, 0, sizeof(*x));
	x->list = list;
	if (!list)
		return 0;
	for (const char *p = list; *p; p++)
		lines += *p == '\n';
	size_t cap = 16;
	while (cap < 2 * (lines + 1))
		cap *= 2;
	x->slots = calloc(cap, sizeof(*x->slots));
	x->rest = malloc(strlen(list) + 1);
	x->names = malloc(strlen(list) + 1);
	if (!x->slots || !x->rest || !x->names) {
		free(x->slots);
		free(x->rest);
		free(x->names);
		memset(x, 0, sizeof(*x));
		x->list = list;
		return -ENOMEM;
	}
	x->mask = cap - 1;
	char *r = x->rest, *names = x->names;
	for (const char *p = list; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *tab = memchr(p, '\t', n);
		if (n && indexable(p, n, tab)) {
			size_t plen = tab ? (size_t)(tab - p) : n, len = 0;
			unsigned long pos = tab ? strtoul(tab + 1, NULL, 10) : 0;
			/* The name as the symbol spells it: escapes undone. */
			char *name = names;
			for (size_t i = 0; i < plen; i++)
				if (p[i] != '\\')
					name[len++] = p[i];
			names += len;
			uint32_t h = name_hash(name, len);
			struct name_slot *s = slot_of(x, name, len, h);
			if (!s->name) {
				*s = (struct name_slot){ .name = name, .len = (uint32_t)len, .hash = h, .pos = pos };
				x->indexed++;
			} else if (pos > s->pos) {
				s->pos = pos;
			}
		} else if (n) {
			if (r != x->rest)
				*r++ = '\n';
			memcpy(r, p, n);
			r += n;
		}
		p = nl ? nl + 1 : p + n;
	}
	*r = 0;
	return 0;
}

void name_index_free(struct name_index *x)
{
	free(x->slots);
	free(x->rest);
	free(x->names);
	memset(x, 0, sizeof(*x));
}

int name_index_find(const struct name_index *x, const char *sym, unsigned long *pos)
{
	if (!x->indexed || !sym || sym[0] != '_' || sym[1] != 'Z')
		return 0;
	size_t len = strlen(sym);
	const struct name_slot *s = slot_of(x, sym, len, name_hash(sym, len));
	if (!s->name)
		return 0;
	if (pos)
		*pos = s->pos;
	return 1;
}
