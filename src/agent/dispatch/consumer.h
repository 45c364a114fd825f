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
 * handler, and the slot is reused only after a grace period. */
#ifndef NEEDLE_CONSUMER_H
#define NEEDLE_CONSUMER_H

#include <stdatomic.h>
#include <stdint.h>

#include "needle.h"

struct consumer_list;

struct consumer {
	needle_entry_fn entry;
	needle_exit_fn exit;
	void *user_data;
	_Atomic uint32_t generation;
	uint32_t slot;
	struct consumer_list *solo;
};

struct consumer_list {
	uint32_t cnt;
	uint32_t shared; /* a consumer's solo list: not freed with the site's list */
	struct consumer *items[];
};

#define CONSUMER_MAX 65536

extern struct consumer consumer_table[CONSUMER_MAX] __attribute__((visibility("hidden")));

struct consumer *consumer_create(needle_entry_fn entry, needle_exit_fn exit, void *user_data);
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
