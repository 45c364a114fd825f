/* view_defer.c - -t TIME for the views that write entries (see
 * view_defer.h). */
#include <stdlib.h>
#include <string.h>

#include "cli/view/view_defer.h"

struct view_defer_frame {
	struct trace_event ev; /* the entry, its data pointing at data[] */
	uint8_t *data;
	uint16_t data_cap;
	int written;
};

int view_defer_start(struct view_defer *d, uint64_t min_ns, size_t threads)
{
	memset(d, 0, sizeof(*d));
	d->min_ns = min_ns;
	d->th_cnt = threads;
	d->th = calloc(threads ? threads : 1, sizeof(*d->th));
	return d->th ? 0 : -1;
}

static int push(struct view_defer_thread *t, const struct trace_event *ev)
{
	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct view_defer_frame *f = realloc(t->f, cap * sizeof(*f));
		if (!f)
			return -1;
		memset(f + t->cap, 0, (cap - t->cap) * sizeof(*f));
		t->f = f;
		t->cap = cap;
	}
	struct view_defer_frame *f = &t->f[t->depth];
	/* Its values outlive the reader's ring: a copy, in a buffer kept
	 * with the depth. */
	if (ev->data_len > f->data_cap) {
		uint8_t *p = realloc(f->data, ev->data_len);
		if (!p)
			return -1;
		f->data = p;
		f->data_cap = ev->data_len;
	}
	f->ev = *ev;
	if (ev->data_len) {
		memcpy(f->data, ev->data, ev->data_len);
		f->ev.data = f->data;
	}
	f->written = 0;
	t->depth++;
	return 0;
}

int view_defer_event(struct view_defer *d, const struct trace_event *ev, view_defer_emit emit, void *arg)
{
	if (ev->thread >= d->th_cnt)
		return 0;
	struct view_defer_thread *t = &d->th[ev->thread];
	if (ev->kind == TEV_ENTRY) {
		/* The reader gives depths from 0 up, one level per entry: a
		 * thread's stack here follows them. */
		if (ev->depth < t->depth)
			t->depth = ev->depth;
		/* Levels the caller did not give (calls its filters hide, a
		 * forked child's inherited ones): written already, as far as
		 * this goes, so never written. */
		while (t->depth < ev->depth) {
			if (push(t, ev))
				return -1;
			t->f[t->depth - 1].written = 1;
		}
		return push(t, ev);
	}
	if (ev->kind != TEV_EXIT || (ev->flags & TEV_ORPHAN))
		return 0;
	if (ev->depth >= t->depth)
		return 0; /* its entry was not seen here (the caller filtered it) */
	uint64_t dur = ev->ns > ev->entry_ns ? ev->ns - ev->entry_ns : 0;
	struct view_defer_frame *f = &t->f[ev->depth];
	int err = 0;
	if (dur >= d->min_ns || f->written) {
		for (uint32_t i = 0; i <= ev->depth && !err; i++) {
			if (t->f[i].written)
				continue;
			t->f[i].written = 1;
			err = emit(&t->f[i].ev, arg);
		}
		if (!err)
			err = emit(ev, arg);
	}
	t->depth = ev->depth;
	return err;
}

void view_defer_free(struct view_defer *d)
{
	for (size_t i = 0; d->th && i < d->th_cnt; i++) {
		for (uint32_t k = 0; k < d->th[i].cap; k++)
			free(d->th[i].f[k].data);
		free(d->th[i].f);
	}
	free(d->th);
	memset(d, 0, sizeof(*d));
}
