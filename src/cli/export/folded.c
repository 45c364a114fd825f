/* export_folded.c - folded stacks ("thread;main;f;g 1234"), the input of
 * flamegraph.pl and speedscope: one line per distinct call stack, valued
 * by the self time (ns) spent in the innermost function of that stack.
 * A trace of the function tracer (entries only) folds to call counts.
 *
 * uftrace dump --flame-graph's form (folded_opts): every thread's stacks
 * merged under one root with no thread in the line, and valued in samples
 * of sample_ns, as uftrace simulates sampling: a call's duration counts
 * for its caller only in whole samples, so the remainder (d mod sample_ns)
 * stays in the caller's own time; a stack with no whole sample is left
 * out.
 *
 * Invariants:
 *  - the reader gives every call its node in a call tree of (parent node,
 *    site) (call_tree.h), so an event costs at most one hash lookup and
 *    one addition, whatever the depth of the stack: no path is ever built
 *    or hashed per event;
 *  - the lines are written at the end by one depth-first walk that
 *    extends and cuts a single line buffer, children in name order: the
 *    walk costs the size of the output plus sorting each node's children;
 *  - memory grows with the distinct paths, not with the events;
 *  - threads with the same label (name-tid) share their root, and sites
 *    of one name one node (call_tree's site_key), so that a path is one
 *    line. */
#include <stdlib.h>
#include <string.h>

#include "cli/export/export.h"
#include "cli/view/view.h"
#include "cli/view/view_format.h"

struct folded {
	struct trace *t;
	struct call_tree tree;
	char **labels;     /* by root key */
	uint64_t sample_ns; /* 0: values in ns */
	int merged;        /* one root for every thread, named nowhere */
	int oom;
};

static int folded_event(const struct trace_event *ev, void *arg)
{
	struct folded *f = arg;
	struct call_node *n;

	if (ev->kind == TEV_ENTRY && (ev->flags & TEV_FLAT)) {
		/* No durations without exits: count calls instead. */
		n = &f->tree.v[ev->node];
		n->value++;
		n->seen = 1;
		return 0;
	}
	if (ev->kind != TEV_EXIT || (ev->flags & TEV_ORPHAN))
		return 0;
	uint64_t d = ev->ns - ev->entry_ns;
	n = &f->tree.v[ev->node];
	n->value += d > ev->child_ns ? d - ev->child_ns : 0;
	n->seen = 1;
	/* Sampled: the caller gets back what its callee's whole samples do
	 * not account for (a thread's node is never printed). */
	if (f->sample_ns)
		f->tree.v[n->parent].value += d % f->sample_ns;
	return 0;
}

/* Thread labels, and one root key per distinct label: the index of the
 * first thread that has it. */
struct label_ref {
	const char *label;
	uint32_t thread;
};

static int label_cmp(const void *a, const void *b)
{
	const struct label_ref *x = a, *y = b;
	int c = strcmp(x->label, y->label);
	return c ? c : (x->thread > y->thread) - (x->thread < y->thread);
}

static uint32_t *thread_roots(struct folded *f)
{
	size_t n = f->t->thread_cnt;
	uint32_t *root = calloc(n ? n : 1, sizeof(*root));
	struct label_ref *v = calloc(n ? n : 1, sizeof(*v));

	f->labels = calloc(n ? n : 1, sizeof(*f->labels));
	if (!root || !v || !f->labels)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		struct trace_thread *th = &f->t->threads[i];
		size_t len = strlen(th->name) + 32;
		if (!(f->labels[i] = malloc(len)))
			goto oom;
		snprintf(f->labels[i], len, "%s-%u", th->name[0] ? th->name : "thread", th->tid);
		/* A thread may name itself "a;b": a ';' would split the frame. */
		for (char *p = f->labels[i]; (p = strchr(p, ';')); p++)
			*p = ':';
		v[i] = (struct label_ref){ f->labels[i], (uint32_t)i };
	}
	qsort(v, n, sizeof(*v), label_cmp);
	for (size_t i = 0; i < n; i++)
		root[v[i].thread] = f->merged ? 0
				    : i && !strcmp(v[i].label, v[i - 1].label) ? root[v[i - 1].thread] : v[i].thread;
	free(v);
	return root;
oom:
	free(root);
	free(v);
	return NULL;
}

static int child_cmp(const void *a, const void *b, void *arg)
{
	struct folded *f = arg;
	const struct call_node *x = &f->tree.v[*(const uint32_t *)a], *y = &f->tree.v[*(const uint32_t *)b];
	int c;

	if (x->parent == 0) /* threads: by label */
		c = strcmp(f->labels[x->site], f->labels[y->site]);
	else
		c = strcmp(trace_site_name(f->t, x->site), trace_site_name(f->t, y->site));
	return c ? c : (x->site > y->site) - (x->site < y->site);
}

struct walk_item {
	uint32_t node;
	size_t len; /* of the line before this node's frame */
};

/* Depth first, children in name order. */
static int write_paths(struct folded *f, FILE *out)
{
	struct walk_item *stack = NULL;
	size_t depth = 0, stack_cap = 0;
	uint32_t *kids = NULL;
	size_t kids_cap = 0;
	char *line = NULL;
	size_t line_cap = 0;
	uint32_t node = 0;
	size_t len = 0;
	int ret = -1;

	for (;;) {
		struct call_node *n = &f->tree.v[node];
		f->t->work++;
		if (node && (n->parent || !f->merged)) {
			const char *name = n->parent ? trace_site_name(f->t, n->site) : f->labels[n->site];
			size_t nlen = strlen(name), need = len + nlen + 32;
			if (need > line_cap) {
				char *l = realloc(line, need * 2);
				if (!l)
					goto out;
				line = l;
				line_cap = need * 2;
			}
			if (len)
				line[len++] = ';';
			memcpy(line + len, name, nlen);
			len += nlen;
			uint64_t value = f->sample_ns ? n->value / f->sample_ns : n->value;
			if (n->seen && (value || !f->sample_ns)) {
				int k = snprintf(line + len, line_cap - len, " %llu\n", (unsigned long long)value);
				fwrite_unlocked(line, 1, len + (size_t)k, out);
				if (view_output_failed(out))
					break;
			}
		}
		/* Children, sorted, pushed last first. */
		size_t k = 0;
		for (uint32_t c = n->first_child; c; c = f->tree.v[c].next_sibling) {
			if (k == kids_cap) {
				size_t cap = kids_cap ? kids_cap * 2 : 64;
				uint32_t *v = realloc(kids, cap * sizeof(*v));
				if (!v)
					goto out;
				kids = v;
				kids_cap = cap;
			}
			kids[k++] = c;
			f->t->work++;
		}
		qsort_r(kids, k, sizeof(*kids), child_cmp, f);
		if (depth + k > stack_cap) {
			size_t cap = (depth + k) * 2;
			struct walk_item *v = realloc(stack, cap * sizeof(*v));
			if (!v)
				goto out;
			stack = v;
			stack_cap = cap;
		}
		while (k)
			stack[depth++] = (struct walk_item){ kids[--k], len };
		if (!depth)
			break;
		node = stack[--depth].node;
		len = stack[depth].len;
	}
	ret = 0;
out:
	free(stack);
	free(kids);
	free(line);
	return ret;
}

int export_folded(struct trace *t, FILE *out)
{
	return export_folded_opts(t, out, NULL);
}

int export_folded_opts(struct trace *t, FILE *out, const struct folded_opts *o)
{
	struct folded f = { .t = t, .sample_ns = o ? o->sample_ns : 0, .merged = o && o->merge_threads };
	uint32_t *roots = NULL;
	int err = 1;

	/* Sites of one name are one frame (overloads that demangle alike,
	 * the main of each program exec'ed): a stack is one line. */
	uint32_t *keys = NULL;
	if (call_tree_init(&f.tree, &t->work) || !(roots = thread_roots(&f)) || !(keys = view_name_keys(t))) {
		f.oom = 1;
	} else {
		f.tree.thread_root = roots;
		f.tree.site_key = keys;
		f.tree.site_key_cnt = t->site_cap;
		err = view_each_event_tree(t, 0, &f.tree, folded_event, &f);
		if (!err && write_paths(&f, out))
			f.oom = 1;
	}
	if (f.oom) {
		fprintf(stderr, "needle: out of memory while folding stacks\n");
		err = 1;
	}
	for (size_t i = 0; f.labels && i < t->thread_cnt; i++)
		free(f.labels[i]);
	free(f.labels);
	free(roots);
	free(keys);
	call_tree_free(&f.tree);
	return err;
}
