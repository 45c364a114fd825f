/* name_index.h - the mangled names of a pattern list, in a hash table.
 *
 * needle record sends the recorder its function lists (-P, -U, -F, -N,
 * -T ...) as lines "PATTERN", "PATTERN<tab>POS" or
 * "PATTERN<tab>m=MODULE", and expands a C++ pattern to every mangled
 * name it matches (cli/args/cxx_patterns.c): 60,000 lines for
 * -F 'v8::*' in node.  Testing each of a process's sites against each
 * line costs their product (minutes there); the table costs one lookup a
 * site, and the lines it does not hold (globs, regular expressions,
 * plain C names, module lines) are still tested one by one.
 *
 * Invariants:
 *   - A line is indexed only when it starts with "_Z" and has no glob or
 *     regular-expression character but escaped '.'s ("\\.", a clone's
 *     ".isra.0" as needle record writes it), and no module: such a
 *     pattern names the one symbol spelled so (site_names.c reads it as a
 *     regular expression whose escapes make it the name, and as a glob
 *     whose escapes do too; no demangled form starts with "_Z"), so a
 *     lookup of the site's symbol says what testing the line would.  A
 *     line with a bare '.' is the user's regular expression (any
 *     character, found anywhere): tested as one.
 *   - An index is built from a list's text and used while that text
 *     lives unchanged (recorder.c builds them for one selection of
 *     sites and frees them after). */
#ifndef NEEDLE_AGENT_NAME_INDEX_H
#define NEEDLE_AGENT_NAME_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct name_slot {
	const char *name; /* into names; NULL: free */
	uint32_t len;
	uint32_t hash;
	unsigned long pos; /* the largest POS of the lines of this name */
};

struct name_index {
	const char *list;       /* the text indexed */
	char *names;            /* the indexed names, escapes undone */
	struct name_slot *slots; /* a power of two of them, at most half full */
	size_t mask;
	size_t indexed;         /* lines in the table */
	char *rest;             /* the other lines, a list of their own ("" when none) */
};

/* Index list: 0, or -ENOMEM (x is then empty, and every line is rest:
 * name_index_rest gives the whole list back). */
int name_index_build(struct name_index *x, const char *list);
void name_index_free(struct name_index *x);
/* 1 when an indexed line names the symbol sym (*pos, if pos: the largest
 * POS among them), else 0. */
int name_index_find(const struct name_index *x, const char *sym, unsigned long *pos);
/* The lines the table does not hold, to be tested one by one. */
static inline const char *name_index_rest(const struct name_index *x)
{
	return x->rest ? x->rest : x->list;
}

#endif
