/* view_defer.h - uftrace's -t TIME for the views that write a call's
 * entry before its exit is read (dump, and its --chrome): a call is
 * written when it lasted TIME or more, and then so did every call it is
 * in, whose entries are written first, in order.  So an entry waits on a
 * stack (by thread and depth) until its own exit, or a longer call's
 * inside it, says it is written; its values are copied with it.
 *
 * Invariants: per event O(1) but for the entries written at once (each
 * entry is written at most once); memory is the open calls' (a copied
 * event and its values per depth per thread), never the events'. */
#ifndef NEEDLE_VIEW_DEFER_H
#define NEEDLE_VIEW_DEFER_H

#include <stdint.h>

#include "reader/trace_reader.h"

struct view_defer_frame;

struct view_defer {
	uint64_t min_ns;
	struct view_defer_thread {
		struct view_defer_frame *f;
		uint32_t depth, cap;
	} *th;
	size_t th_cnt;
};

/* What writes an event; nonzero stops the view. */
typedef int (*view_defer_emit)(const struct trace_event *ev, void *arg);

/* 0, or -1 out of memory. */
int view_defer_start(struct view_defer *d, uint64_t min_ns, size_t threads);
/* An entry or exit of a call with a duration (not the function tracer's
 * flat entries, which the caller writes or not itself): entries wait;
 * an exit of a call that lasted min_ns or more writes the entries that
 * wait under it and its own, then itself.  What emit returned, 0, or -1
 * out of memory. */
int view_defer_event(struct view_defer *d, const struct trace_event *ev, view_defer_emit emit, void *arg);
void view_defer_free(struct view_defer *d);

#endif
