/* call_tree.c - see call_tree.h.  Open addressing with linear probing,
 * at most half full, so that a lookup probes about two slots. */
#include <stdlib.h>
#include <string.h>

#include "reader/call_tree.h"

static size_t slot_of(uint32_t parent, uint32_t site, size_t cap)
{
	uint64_t k = (uint64_t)parent << 32 | site;
	return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 40) & (cap - 1);
}

int call_tree_init(struct call_tree *t, uint64_t *work)
{
	memset(t, 0, sizeof(*t));
	t->work = work;
	t->cap = 1024;
	t->slot_cap = 2048;
	t->v = calloc(t->cap, sizeof(*t->v));
	t->slots = calloc(t->slot_cap, sizeof(*t->slots));
	if (!t->v || !t->slots) {
		call_tree_free(t);
		return -1;
	}
	t->cnt = 1; /* the root */
	return 0;
}

static int grow_slots(struct call_tree *t)
{
	size_t cap = t->slot_cap * 2;
	uint32_t *s = calloc(cap, sizeof(*s));

	if (!s)
		return -1;
	for (size_t i = 1; i < t->cnt; i++) {
		size_t j = slot_of(t->v[i].parent, t->v[i].site, cap);
		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = (uint32_t)i + 1;
	}
	if (t->work)
		*t->work += t->cnt;
	free(t->slots);
	t->slots = s;
	t->slot_cap = cap;
	return 0;
}

uint32_t call_tree_child(struct call_tree *t, uint32_t parent, uint32_t site)
{
	size_t j = slot_of(parent, site, t->slot_cap);

	for (;;) {
		uint32_t id = t->slots[j];
		if (t->work)
			(*t->work)++;
		if (!id)
			break;
		if (t->v[id - 1].parent == parent && t->v[id - 1].site == site)
			return id - 1;
		j = (j + 1) & (t->slot_cap - 1);
	}
	if (t->cnt >= UINT32_MAX - 1)
		return 0;
	if (t->cnt == t->cap) {
		struct call_node *v = realloc(t->v, t->cap * 2 * sizeof(*v));
		if (!v)
			return 0;
		t->v = v;
		t->cap *= 2;
	}
	uint32_t id = (uint32_t)t->cnt++;
	t->v[id] = (struct call_node){ .parent = parent, .site = site, .next_sibling = t->v[parent].first_child };
	t->v[parent].first_child = id;
	t->slots[j] = id + 1;
	if (t->cnt * 2 > t->slot_cap && grow_slots(t)) {
		/* Keep the table consistent: forget the node. */
		t->v[parent].first_child = t->v[id].next_sibling;
		t->slots[j] = 0;
		t->cnt--;
		return 0;
	}
	return id;
}

void call_tree_free(struct call_tree *t)
{
	free(t->v);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
