/* consumer.c - consumer slots and immutable consumer lists (see
 * consumer.h).  Everything here runs under the agent's control mutex. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dispatch/consumer.h"

struct consumer consumer_table[CONSUMER_MAX];
struct consumer_ops consumer_ops_table[CONSUMER_OPS_MAX];
static uint32_t ops_cnt;
/* Read by the trampolines before they try the direct path (relaxed: a
 * stale value costs one wasted try or one call on the full path, which
 * decides the same way). */
uint32_t consumer_direct_users;
static uint32_t free_slots[CONSUMER_MAX];
static uint32_t free_cnt;
static uint32_t used_cnt; /* slots ever handed out */

static struct consumer_list **retired;
static size_t retired_cnt, retired_cap;

const struct consumer_ops *consumer_ops_get(needle_entry_fn entry, needle_exit_fn exit, uint32_t call_data_size,
					    needle_direct_entry_fn direct_entry, needle_direct_exit_fn direct_exit)
{
	for (uint32_t i = 0; i < ops_cnt; i++)
		if (consumer_ops_table[i].entry == entry && consumer_ops_table[i].exit == exit &&
		    consumer_ops_table[i].call_data_size == call_data_size &&
		    consumer_ops_table[i].direct_entry == direct_entry && consumer_ops_table[i].direct_exit == direct_exit)
			return &consumer_ops_table[i];
	if (ops_cnt == CONSUMER_OPS_MAX)
		return NULL;
	consumer_ops_table[ops_cnt] = (struct consumer_ops){
		entry,        exit,        call_data_size, (uint16_t)ops_cnt,
		direct_entry, direct_exit, !entry && !exit && direct_entry && !direct_exit && !call_data_size,
	};
	return &consumer_ops_table[ops_cnt++];
}

/* Per-thread storage: header slots and byte ranges of the block, handed to
 * consumers and taken back when they are destroyed (after a grace period:
 * no handler can use them any more).  A new owner of a range finds the
 * previous owner's tag in each thread's header slot and zeroes the range
 * before its first use there. */
#define TDATA_SLOTS (THREAD_DATA_HEADER / 4)
static struct consumer *tdata_owner[TDATA_SLOTS];
static uint32_t tdata_next_tag;

static int tdata_reserve(struct consumer *c, uint32_t size)
{
	uint32_t idx = 0, off = THREAD_DATA_HEADER;

	if (!size)
		return 0;
	size = (size + 15) & ~15u;
	while (idx < TDATA_SLOTS && tdata_owner[idx])
		idx++;
	if (idx == TDATA_SLOTS)
		return -ENOSPC;
	/* First fit among the ranges the live owners hold. */
	for (int moved = 1; moved;) {
		moved = 0;
		for (uint32_t i = 0; i < TDATA_SLOTS; i++) {
			struct consumer *o = tdata_owner[i];
			if (o && off < (uint32_t)o->tdata_off + o->tdata_size && o->tdata_off < off + size) {
				off = o->tdata_off + o->tdata_size;
				moved = 1;
			}
		}
	}
	if (off + size > THREAD_DATA_BYTES)
		return -ENOSPC;
	tdata_owner[idx] = c;
	c->tdata_idx = idx;
	c->tdata_off = (uint16_t)off;
	c->tdata_size = (uint16_t)size;
	c->tdata_tag = ++tdata_next_tag ? tdata_next_tag : ++tdata_next_tag; /* never 0 */
	return 0;
}

int consumer_table_full(void)
{
	return !free_cnt && used_cnt >= CONSUMER_MAX;
}

uint32_t consumer_slots_used(void)
{
	return __atomic_load_n(&used_cnt, __ATOMIC_ACQUIRE);
}

/* The solo list's probe for ops (consumer_list.probe).  Release: pairs
 * with the probe path's plain load (an acquire under TSO), so that a
 * thread that calls the handler sees what was written before. */
static void solo_probe_set(struct consumer *c, const struct consumer_ops *ops)
{
	atomic_store_explicit(&c->solo->probe, ops && ops->probe ? ops->direct_entry : NULL, memory_order_release);
}

int consumer_set_ops(struct consumer *c, needle_entry_fn entry, needle_exit_fn exit)
{
	const struct consumer_ops *cur = atomic_load_explicit(&c->ops, memory_order_relaxed);
	int direct = entry == c->direct_with_entry && exit == c->direct_with_exit;
	const struct consumer_ops *ops = consumer_ops_get(entry, exit, cur->call_data_size, direct ? c->direct_entry : NULL,
							  direct ? c->direct_exit : NULL);

	if (!ops)
		return -ENOSPC;
	/* Release: pairs with dispatch's acquire load of c->ops, so that a
	 * thread that sees the new ops sees their contents. */
	atomic_store_explicit(&c->ops, ops, memory_order_release);
	solo_probe_set(c, ops);
	return 0;
}

struct consumer *consumer_create(needle_entry_fn entry, needle_exit_fn exit, void *user_data,
				 const struct consumer_extras *extras, int *err)
{
	static const struct consumer_extras none;
	const struct consumer_extras *x = extras ? extras : &none;
	const struct consumer_ops *ops = consumer_ops_get(entry, exit, (x->call_data_size + 15) & ~15u,
							  x->direct_entry, x->direct_exit);
	uint32_t slot;

	*err = -ENOSPC;
	if (!ops)
		return NULL;
	if (free_cnt)
		slot = free_slots[--free_cnt];
	else if (used_cnt < CONSUMER_MAX)
		slot = used_cnt; /* counted below, once the slot is filled */
	else
		return NULL;
	struct consumer *c = &consumer_table[slot];
	c->tdata_size = 0;
	if ((*err = tdata_reserve(c, x->thread_data_size))) {
		if (slot != used_cnt)
			free_slots[free_cnt++] = slot;
		return NULL;
	}
	struct consumer_list *solo = malloc(sizeof(*solo) + sizeof(solo->items[0]));
	if (!solo) {
		if (c->tdata_size)
			tdata_owner[c->tdata_idx] = NULL;
		if (slot != used_cnt)
			free_slots[free_cnt++] = slot;
		*err = -ENOMEM;
		return NULL;
	}
	if (slot == used_cnt)
		__atomic_store_n(&used_cnt, used_cnt + 1, __ATOMIC_RELEASE);
	c->thread_exit = x->thread_exit;
	c->thread_fork = x->thread_fork;
	c->context_switch = x->context_switch;
	c->direct_entry = x->direct_entry;
	c->direct_exit = x->direct_exit;
	c->direct_with_entry = entry;
	c->direct_with_exit = exit;
	if (c->direct_entry)
		__atomic_add_fetch(&consumer_direct_users, 1, __ATOMIC_RELAXED);
	c->has_extras = c->tdata_size || ops->call_data_size || x->thread_exit || x->thread_fork || x->context_switch;
	solo->cnt = 1;
	solo->shared = 1;
	solo->items[0] = c;
	solo->probe_user_data = user_data;
	atomic_store_explicit(&c->ops, ops, memory_order_relaxed);
	c->user_data = user_data;
	c->slot = slot;
	c->solo = solo;
	/* Odd generations are live; even ones mean "retired".  The RMW is a
	 * release: walkers that see the generation odd (consumer_live's
	 * acquire) see the fields above. */
	atomic_fetch_add(&c->generation, 1);
	/* Live now: the probe path may take it (consumer_list.probe). */
	solo_probe_set(c, ops);
	*err = 0;
	return c;
}

void consumer_retire(struct consumer *c)
{
	/* The probe path's test of liveness (its list's probe), before the
	 * grace period the caller waits for, as the generation is. */
	solo_probe_set(c, NULL);
	atomic_fetch_add(&c->generation, 1);
}

void consumer_destroy(struct consumer *c)
{
	if (c->tdata_size)
		tdata_owner[c->tdata_idx] = NULL;
	free(c->solo);
	c->solo = NULL;
	if (c->direct_entry)
		__atomic_sub_fetch(&consumer_direct_users, 1, __ATOMIC_RELAXED);
	c->direct_entry = NULL;
	c->direct_exit = NULL;
	free_slots[free_cnt++] = c->slot;
}

static struct consumer_list *list_alloc(uint32_t cnt)
{
	struct consumer_list *l = malloc(sizeof(*l) + cnt * sizeof(l->items[0]));
	if (l) {
		l->cnt = cnt;
		l->shared = 0;
		atomic_init(&l->probe, NULL); /* shared by two consumers or more */
		l->probe_user_data = NULL;
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
