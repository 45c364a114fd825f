/* export_folded.c - folded stacks ("thread;main;f;g 1234"), the input of
 * flamegraph.pl and speedscope: one line per distinct call stack, valued
 * by the self time (ns) spent in the innermost function of that stack.
 * A trace of the function tracer (entries only) folds to call counts. */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "thread_stack.h"
#include "view_common.h"

struct folded_entry {
	char *key;
	uint64_t ns;
};

struct folded {
	struct trace *t;
	struct stack_map stacks;
	struct folded_entry *slots;
	size_t cap, cnt;
	char *key;
	size_t key_cap;
	char key_buf[1024];
	int oom;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int table_add(struct folded *f, const char *key, uint64_t ns)
{
	if ((f->cnt + 1) * 2 > f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 1024;
		struct folded_entry *s = calloc(cap, sizeof(*s));
		if (!s)
			return -1;
		for (size_t i = 0; i < f->cap; i++) {
			if (!f->slots[i].key)
				continue;
			size_t j = hash_str(f->slots[i].key) & (cap - 1);
			while (s[j].key)
				j = (j + 1) & (cap - 1);
			s[j] = f->slots[i];
		}
		free(f->slots);
		f->slots = s;
		f->cap = cap;
	}
	size_t j = hash_str(key) & (f->cap - 1);
	while (f->slots[j].key && strcmp(f->slots[j].key, key))
		j = (j + 1) & (f->cap - 1);
	if (!f->slots[j].key) {
		if (!(f->slots[j].key = strdup(key)))
			return -1;
		f->cnt++;
	}
	f->slots[j].ns += ns;
	return 0;
}

static const char *thread_label(struct trace *t, uint32_t tid, char *buf, size_t len)
{
	struct trace_thread *th = trace_thread_find(t, tid);
	snprintf(buf, len, "%s-%u", th && th->name[0] ? th->name : "thread", tid);
	return buf;
}

static int folded_event(const struct trace_event *ev, void *arg)
{
	struct folded *f = arg;
	struct thread_stack *st;
	char label[96];

	if (ev->kind == TEV_LOST || (ev->kind == TEV_EXIT && (ev->flags & TEV_ORPHAN)))
		return 0;
	if (!(st = stack_map_get(&f->stacks, ev->tid)))
		return f->oom = 1;
	if (ev->kind == TEV_ENTRY) {
		if (ev->flags & TEV_FLAT) {
			/* No durations without exits: count calls instead. */
			snprintf(f->key_buf, sizeof(f->key_buf), "%s;%s", thread_label(f->t, ev->tid, label, sizeof(label)),
				 trace_site_name(f->t, ev->site));
			return table_add(f, f->key_buf, 1) ? (f->oom = 1) : 0;
		}
		return thread_stack_push(st, ev->site, ev->ns) ? (f->oom = 1) : 0;
	}
	if (!st->depth)
		return 0;
	/* thread;outer;...;inner */
	size_t need = 96;
	for (size_t i = 0; i < st->depth; i++)
		need += strlen(trace_site_name(f->t, st->v[i].site)) + 1;
	if (need > f->key_cap) {
		char *k = realloc(f->key, need);
		if (!k)
			return f->oom = 1;
		f->key = k;
		f->key_cap = need;
	}
	char *p = f->key + sprintf(f->key, "%s", thread_label(f->t, ev->tid, label, sizeof(label)));
	for (size_t i = 0; i < st->depth; i++)
		p += sprintf(p, ";%s", trace_site_name(f->t, st->v[i].site));
	uint64_t d = ev->ns - ev->entry_ns;
	st->depth--;
	if (table_add(f, f->key, d > ev->child_ns ? d - ev->child_ns : 0))
		return f->oom = 1;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct folded_entry *)a)->key, ((const struct folded_entry *)b)->key);
}

int export_folded(struct trace *t, FILE *out)
{
	struct folded f = { .t = t };
	int err = view_each_event(t, 0, folded_event, &f);

	if (f.oom) {
		fprintf(stderr, "needle: out of memory while folding stacks\n");
		err = 1;
	}
	size_t n = 0;
	for (size_t i = 0; i < f.cap; i++)
		if (f.slots[i].key)
			f.slots[n++] = f.slots[i];
	if (n)
		qsort(f.slots, n, sizeof(*f.slots), cmp_key);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s %llu\n", f.slots[i].key, (unsigned long long)f.slots[i].ns);
		free(f.slots[i].key);
	}
	free(f.slots);
	free(f.key);
	stack_map_free(&f.stacks);
	return err;
}
