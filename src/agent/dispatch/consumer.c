/* consumer.c - consumer slots and immutable consumer lists (see
 * consumer.h).  Everything here runs under the agent's control mutex. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dispatch/consumer.h"

struct consumer consumer_table[CONSUMER_MAX];
struct consumer_ops consumer_ops_table[CONSUMER_OPS_MAX];
static uint32_t ops_cnt;
static uint32_t free_slots[CONSUMER_MAX];
static uint32_t free_cnt;
static uint32_t used_cnt; /* slots ever handed out */

static struct consumer_list **retired;
static size_t retired_cnt, retired_cap;

const struct consumer_ops *consumer_ops_get(needle_entry_fn entry, needle_exit_fn exit)
{
	for (uint32_t i = 0; i < ops_cnt; i++)
		if (consumer_ops_table[i].entry == entry && consumer_ops_table[i].exit == exit)
			return &consumer_ops_table[i];
	if (ops_cnt == CONSUMER_OPS_MAX)
		return NULL;
	consumer_ops_table[ops_cnt] = (struct consumer_ops){ entry, exit };
	return &consumer_ops_table[ops_cnt++];
}

int consumer_set_ops(struct consumer *c, needle_entry_fn entry, needle_exit_fn exit)
{
	const struct consumer_ops *ops = consumer_ops_get(entry, exit);

	if (!ops)
		return -ENOSPC;
	/* Release: pairs with dispatch's acquire load of c->ops, so that a
	 * thread that sees the new ops sees their contents. */
	atomic_store_explicit(&c->ops, ops, memory_order_release);
	return 0;
}

struct consumer *consumer_create(needle_entry_fn entry, needle_exit_fn exit, void *user_data)
{
	const struct consumer_ops *ops = consumer_ops_get(entry, exit);
	uint32_t slot;

	if (!ops)
		return NULL;

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
	atomic_store_explicit(&c->ops, ops, memory_order_relaxed);
	c->user_data = user_data;
	c->slot = slot;
	c->solo = solo;
	/* Odd generations are live; even ones mean "retired". */
	atomic_fetch_add(&c->generation, 1);
	return c;
}

int consumer_table_full(void)
{
	return !free_cnt && used_cnt >= CONSUMER_MAX;
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
