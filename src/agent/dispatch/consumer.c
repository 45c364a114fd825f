/* consumer.c - consumer slots and immutable consumer lists (see
 * consumer.h).  Everything here runs under the agent's control mutex. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"

struct consumer consumer_table[CONSUMER_MAX];
static uint32_t free_slots[CONSUMER_MAX];
static uint32_t free_cnt;
static uint32_t used_cnt; /* slots ever handed out */

static struct consumer_list **retired;
static size_t retired_cnt, retired_cap;

struct consumer *consumer_create(needle_entry_fn entry, needle_exit_fn exit, void *user_data)
{
	uint32_t slot;

	if (free_cnt)
		slot = free_slots[--free_cnt];
	else if (used_cnt < CONSUMER_MAX)
		slot = used_cnt++;
	else
		return NULL;
	struct consumer *c = &consumer_table[slot];
	struct consumer_list *solo = malloc(sizeof(*solo) + sizeof(solo->items[0]));
	if (!solo) {
		free_slots[free_cnt++] = slot;
		return NULL;
	}
	solo->cnt = 1;
	solo->shared = 1;
	solo->items[0] = c;
	c->entry = entry;
	c->exit = exit;
	c->user_data = user_data;
	c->slot = slot;
	c->solo = solo;
	/* Odd generations are live; even ones mean "retired". */
	atomic_fetch_add(&c->generation, 1);
	return c;
}

void consumer_retire(struct consumer *c)
{
	atomic_fetch_add(&c->generation, 1);
}

void consumer_destroy(struct consumer *c)
{
	free(c->solo);
	c->solo = NULL;
	free_slots[free_cnt++] = c->slot;
}

static struct consumer_list *list_alloc(uint32_t cnt)
{
	struct consumer_list *l = malloc(sizeof(*l) + cnt * sizeof(l->items[0]));
	if (l) {
		l->cnt = cnt;
		l->shared = 0;
	}
	return l;
}

struct consumer_list *consumer_list_add(struct consumer_list *old, struct consumer *c)
{
	if (!old)
		return c->solo;
	struct consumer_list *l = list_alloc(old->cnt + 1);
	if (!l)
		return NULL;
	memcpy(l->items, old->items, old->cnt * sizeof(l->items[0]));
	l->items[old->cnt] = c; /* attach order */
	return l;
}

struct consumer_list *consumer_list_remove(struct consumer_list *old, struct consumer *c, int *err)
{
	uint32_t keep = 0;

	*err = 0;
	if (!old)
		return NULL;
	for (uint32_t i = 0; i < old->cnt; i++)
		keep += old->items[i] != c;
	if (!keep)
		return NULL;
	if (keep == 1)
		for (uint32_t i = 0; i < old->cnt; i++)
			if (old->items[i] != c)
				return old->items[i]->solo;
	struct consumer_list *l = list_alloc(keep);
	if (!l) {
		*err = -ENOMEM;
		return old;
	}
	keep = 0;
	for (uint32_t i = 0; i < old->cnt; i++)
		if (old->items[i] != c)
			l->items[keep++] = old->items[i];
	return l;
}

void consumer_list_retire(struct consumer_list *list)
{
	if (!list || list->shared)
		return;
	if (retired_cnt == retired_cap) {
		size_t cap = retired_cap ? retired_cap * 2 : 256;
		struct consumer_list **r = realloc(retired, cap * sizeof(*r));
		if (!r)
			return; /* leak one list rather than free it early */
		retired = r;
		retired_cap = cap;
	}
	retired[retired_cnt++] = list;
}

void consumer_list_reclaim(void)
{
	for (size_t i = 0; i < retired_cnt; i++)
		free(retired[i]);
	retired_cnt = 0;
}

size_t consumer_list_retired_count(void)
{
	return retired_cnt;
}
