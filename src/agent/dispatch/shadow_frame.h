/* shadow_frame.h - the frames of a thread's shadow stack: one per traced
 * call whose exit is wanted, pushed at entry, popped at the return (the
 * hijacked return, or the function's exit site) or when an unwind
 * (longjmp, exception, thread exit) skips the call.  A frame popped by an
 * exit site (at_exit_site) never touched the machine stack: its
 * return_addr is a copy, and nothing restores or re-hijacks it.
 *
 *     [entry 0][call data 0][entry 1][call data 1]...[frame_header]   <- shadow_top
 * The header sits on top so that a pop finds the frame's size first.  An
 * entry's call data is as long as its ops say (consumer_ops.call_data_size,
 * 0 for most): ops never change, so the layout can be walked at the exit
 * whatever happened to the consumer since. */
#ifndef NEEDLE_SHADOW_FRAME_H
#define NEEDLE_SHADOW_FRAME_H

#include <stdint.h>

#include "agent/arch/arch.h"
#include "agent/sites/site_table.h"
#include "agent/thread/thread_state.h"

struct site;

struct frame_entry {
	uint16_t slot;        /* consumer slot (CONSUMER_MAX is 65536) */
	uint16_t ops;         /* consumer_ops the entry ran with */
	uint32_t generation;  /* the consumer's generation at entry */
	uint64_t cookie;
};

struct frame_header {
	uint64_t return_addr; /* where the traced function really returns */
	struct site *site;
	uint64_t sp;          /* stack pointer just after that return; the
			       * hijacked return address sits at sp - 8 */
	uint32_t entry_cnt;
	uint32_t frame_bytes : 30; /* entries and their call data, below the header */
	uint32_t at_exit_site : 1; /* the return is not hijacked: an exit site pops it */
	uint32_t called : 1;       /* the calling trampoline called the function: its
				    * return goes to needle_calling_return */
};

/* Is h's return hijacked (its machine-stack slot ours to restore)? */
static inline int frame_hijacked(const struct frame_header *h)
{
	return !h->at_exit_site;
}

/* Where a hijacked return of site s's function goes: the return
 * trampoline, or for a relocated site (no compiler prepared its callers)
 * the one that puts every register back. */
static inline uint64_t return_trampoline_for(const struct site *s)
{
	return s->form == NEEDLE_FORM_RELOCATED ? (uint64_t)needle_return_trampoline_full
						: (uint64_t)needle_return_trampoline;
}

/* Where h's return goes while it is hooked: for a call the calling
 * trampoline made, back into it (its call is on the return stack
 * buffer, so the return stays predicted); else the return trampoline. */
static inline uint64_t frame_hook_for(const struct frame_header *h)
{
	if (!h->called)
		return return_trampoline_for(h->site);
	return h->site->form == NEEDLE_FORM_RELOCATED ? (uint64_t)needle_calling_return_relocated
						      : (uint64_t)needle_calling_return;
}

/* Is addr a hooked return: a hijacked one, or the return into the calling
 * trampoline (trampoline.S), which is the same to everything that
 * restores, re-hijacks or walks them. */
static inline int is_return_trampoline(uint64_t addr)
{
	return addr == (uint64_t)needle_return_trampoline || addr == (uint64_t)needle_return_trampoline_full ||
	       addr == (uint64_t)needle_calling_return || addr == (uint64_t)needle_calling_return_relocated;
}

static inline struct frame_header *frame_top(struct thread_state *ts)
{
	return (struct frame_header *)(ts->shadow + ts->shadow_top) - 1;
}

/* The frame below h, or NULL. */
static inline struct frame_header *frame_below(struct thread_state *ts, struct frame_header *h)
{
	uint8_t *p = (uint8_t *)h - h->frame_bytes;
	return p == ts->shadow ? NULL : (struct frame_header *)p - 1;
}

static inline void frame_pop(struct thread_state *ts, const struct frame_header *h)
{
	ts->shadow_top -= sizeof(*h) + h->frame_bytes;
}

static inline uint64_t *frame_ret_slot(const struct frame_header *h)
{
	return (uint64_t *)(h->sp - 8);
}

/* Close the calls whose frames lie at or below sp (deeper in the machine
 * stack): an unwind skipped them.  Their exit handlers run with
 * ctx->is_exit == NEEDLE_EXIT_UNWOUND.  Caller is inside a read section. */
void shadow_close_unwound(struct thread_state *ts, uint64_t sp);

#endif
