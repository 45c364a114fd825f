/* consumer.h - who runs when a site is hit.
 *
 * A consumer is one link's handlers.  Each site points at an immutable
 * consumer_list, replaced (never edited) under RCU when links come and go.
 * A consumer that is the only one on a site is reached through its own
 * one-element list, shared by all such sites, so the common case costs no
 * allocation per site and dispatches without a loop.
 *
 * Consumers live in a fixed table of slots.  A hijacked frame remembers
 * (slot, generation), not a pointer: detaching bumps the generation, so a
 * frame that outlives its link finds a mismatch and skips the exit
 * handler, and the slot is reused only after a grace period.
 *
 * A consumer's entry and exit handlers are one immutable consumer_ops,
 * swapped with a single pointer store (needle ctl switching the tracer),
 * and a frame remembers the ops its entry ran with: a call entered with
 * an exit handler gets that exit handler, whatever the consumer's
 * handlers are when it returns.  Ops are never freed or changed, so the
 * index in a frame stays valid; pairs are shared, so the table grows only
 * with distinct (entry, exit) pairs. */
#ifndef NEEDLE_CONSUMER_H
#define NEEDLE_CONSUMER_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "agent/thread/thread_state.h"
#include "needle.h"

struct consumer_list;

struct consumer_ops {
	needle_entry_fn entry;
	needle_exit_fn exit;
	uint32_t call_data_size; /* per-call storage, a multiple of 16 */
	uint16_t index;          /* in consumer_ops_table (a frame's ops) */
	/* The link's direct handlers (dispatch_direct.c), or NULL: they go
	 * with this entry and exit only. */
	needle_direct_entry_fn direct_entry;
	needle_direct_exit_fn direct_exit;
	/* A direct entry alone (NEEDLE_ATTACH_ENTRY_ONLY): the probe path
	 * (dispatch_direct.c, probe_trampoline.S) calls it with no frame,
	 * and the full path calls it in place of entry. */
	uint8_t probe;
};

#define CONSUMER_OPS_MAX 65536

extern struct consumer_ops consumer_ops_table[CONSUMER_OPS_MAX] __attribute__((visibility("hidden")));

/* What a link asked for beside its handlers (needle_attach_opts). */
struct consumer_extras {
	uint32_t thread_data_size;
	uint32_t call_data_size;
	void (*thread_exit)(void *thread_data, void *user_data);
	void (*thread_fork)(void *thread_data, void *user_data);
	void (*context_switch)(const void *from, const void *to, void *thread_data, void *user_data);
	needle_direct_entry_fn direct_entry;
	needle_direct_exit_fn direct_exit;
};

struct consumer {
	_Atomic(const struct consumer_ops *) ops;
	void *user_data;
	_Atomic uint32_t generation;
	uint32_t slot;
	struct consumer_list *solo;
	/* Per-thread storage: tdata_size bytes at tdata_off in every thread's
	 * block, which a thread's header slot tdata_idx claims with tdata_tag
	 * (a thread whose slot holds another tag zeroes the storage first). */
	uint8_t has_extras;  /* any of: thread data, call data, thread callbacks */
	uint16_t tdata_off, tdata_size;
	uint32_t tdata_idx, tdata_tag;
	void (*thread_exit)(void *thread_data, void *user_data);
	void (*thread_fork)(void *thread_data, void *user_data);
	void (*context_switch)(const void *from, const void *to, void *thread_data, void *user_data);
	/* The direct handlers, and the entry and exit they go with
	 * (consumer_set_ops keeps them only for that pair). */
	needle_direct_entry_fn direct_entry;
	needle_direct_exit_fn direct_exit;
	needle_entry_fn direct_with_entry;
	needle_exit_fn direct_with_exit;
};

struct consumer_list {
	uint32_t cnt;
	uint32_t shared; /* a consumer's solo list: not freed with the site's list */
	/* What the probe path's assembly (probe_trampoline.S) reads instead of
	 * the consumer and its ops, on the list's own cache line: in a
	 * consumer's solo list, its direct entry while the consumer is live
	 * and its ops are entry only (ops->probe), else NULL; NULL in every
	 * other list.  Written by consumer.c only, before the grace period
	 * that follows each change (consumer_set_ops, consumer_retire). */
	_Atomic(needle_direct_entry_fn) probe;
	void *probe_user_data;
	struct consumer *items[];
};

#define CONSUMER_MAX 65536

/* Consumers alive with direct handlers: 0 keeps every trampoline on the
 * full path without a call (trampoline.S reads it). */
extern uint32_t consumer_direct_users __attribute__((visibility("hidden")));

extern struct consumer consumer_table[CONSUMER_MAX] __attribute__((visibility("hidden")));

/* The shared ops for (entry, exit, call data size, direct handlers), or
 * NULL when the table is full. */
const struct consumer_ops *consumer_ops_get(needle_entry_fn entry, needle_exit_fn exit, uint32_t call_data_size,
					    needle_direct_entry_fn direct_entry, needle_direct_exit_fn direct_exit);
static inline uint16_t consumer_ops_index(const struct consumer_ops *ops)
{
	return ops->index;
}

/* NULL when out of slots, ops, memory or per-thread storage (*err says
 * which: -ENOSPC or -ENOMEM). */
struct consumer *consumer_create(needle_entry_fn entry, needle_exit_fn exit, void *user_data,
				 const struct consumer_extras *extras, int *err);
/* 1 when every slot is taken. */
int consumer_table_full(void);

/* The consumers alive now: slots [0, consumer_slots_used()) of
 * consumer_table whose generation is odd.  For walks at thread exit, fork
 * and context switch, inside a read section. */
uint32_t consumer_slots_used(void);
static inline int consumer_live(struct consumer *c)
{
	return atomic_load_explicit(&c->generation, memory_order_acquire) & 1;
}

/* c's storage in the thread's block, zeroed and claimed if the thread had
 * not used it yet; NULL if c reserved none. */
static inline void *consumer_thread_data(const struct consumer *c, struct thread_state *ts)
{
	if (!c->tdata_size)
		return NULL;
	uint32_t *tags = (uint32_t *)ts->data;
	uint8_t *p = ts->data + c->tdata_off;
	if (__builtin_expect(tags[c->tdata_idx] != c->tdata_tag, 0)) {
		memset(p, 0, c->tdata_size);
		tags[c->tdata_idx] = c->tdata_tag;
		ts->data_used = 1;
	}
	return p;
}

/* c's storage in the thread's block only if the thread has claimed it
 * (for callbacks that must not create it). */
static inline void *consumer_thread_data_if_used(const struct consumer *c, struct thread_state *ts)
{
	if (!c->tdata_size || !ts->data_used || ((uint32_t *)ts->data)[c->tdata_idx] != c->tdata_tag)
		return NULL;
	return ts->data + c->tdata_off;
}
/* c was attached entry only (NEEDLE_ATTACH_ENTRY_ONLY): its direct entry
 * goes with no entry and no exit, the pair consumer_set_ops gives it
 * back for. */
static inline int consumer_entry_only(const struct consumer *c)
{
	return c->direct_entry && !c->direct_with_entry && !c->direct_with_exit;
}
/* Give c new handlers, as one store (its direct handlers too if entry and
 * exit are the pair they came with); -ENOSPC when the ops table is full. */
int consumer_set_ops(struct consumer *c, needle_entry_fn entry, needle_exit_fn exit);
/* Stop the consumer's pending exits: frames hijacked for it now skip it. */
void consumer_retire(struct consumer *c);
/* Put the slot back; only after a grace period that followed retire. */
void consumer_destroy(struct consumer *c);

/* New list = old + c (old may be NULL).  NULL on allocation failure. */
struct consumer_list *consumer_list_add(struct consumer_list *old, struct consumer *c);
/* New list = old - c; NULL when nothing is left (sets *err on failure). */
struct consumer_list *consumer_list_remove(struct consumer_list *old, struct consumer *c, int *err);
/* Free after the next grace period (no-op for shared lists and NULL). */
void consumer_list_retire(struct consumer_list *list);
/* Free what was retired; call right after a grace period. */
void consumer_list_reclaim(void);
size_t consumer_list_retired_count(void);

#endif
