/* trace_iter.c - iterating over an opened trace: see trace_reader.h.
 *
 * Iteration keeps one cursor per thread, decoding its current chunk one
 * event at a time, and merges the threads by time through a heap of
 * their next events.  A decoded tag may close several frames (an exit
 * that names an outer call, a cut after lost events, the end of the
 * trace): the cursor records the closes still due and hands them out one
 * per call, so that no view ever holds more than one event per thread:
 * memory is bounded by the deepest stack, never by the trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/section_crc.h"
#include "reader/trace_reader.h"
#include "reader/reader_internal.h"
#include "format/varint.h"

enum { THEN_NONE, THEN_CLOSE_TOP, THEN_EVENT };

struct trace_cursor {
	struct trace_thread *th;
	uint32_t index;           /* of th in trace.threads */
	uint32_t root;            /* call tree node of the thread */
	size_t next_chunk;
	uint8_t *buf;             /* the current chunk's payload */
	size_t buf_cap;
	const uint8_t *p, *end;   /* its events not decoded yet */
	uint32_t left, event_no;
	uint64_t raw;             /* clock of the last decoded event */
	uint64_t chunk_off;
	struct thread_stack stack;
	uint64_t last_ns;
	/* Closes still due: while the stack is deeper than close_to, close
	 * its top at close_ns with close_flags; then "then". */
	size_t close_to;
	uint64_t close_ns;
	uint8_t close_flags;
	uint8_t then;
	uint8_t ended;            /* chunks exhausted, open frames being closed */
	uint8_t has_head;
	struct trace_event later; /* THEN_EVENT */
	struct trace_event head;  /* the next event of the thread */
	/* Values captured with recent events (TAG_DATA): a ring, so that an
	 * event's stay valid while the iterator decodes a few more ahead;
	 * allocated at the thread's first block (most threads have none). */
	uint8_t (*data)[TRACE_DATA_MAX];
	unsigned data_next;
	/* The chunk's data block before the next one, the reference of a
	 * packed block (TAG_DATA_PACKED): its first words, data_ref_n of
	 * them (0 at each chunk's start); allocated with data. */
	uint64_t *data_ref;
	uint32_t data_ref_n;
	uint32_t inherit_left;    /* entries still to come that a fork's child re-entered */
	uint8_t inherit_before;   /* ... or that a snapshot's window begins inside (TEV_BEFORE) */
	/* The thread's kernel events (--kernel): the current section's, one
	 * read at a time, merged with its calls by raw time. */
	size_t next_kernel;       /* the next section of th->kernel */
	uint64_t kernel_off;      /* of the current section's next event not in kbuf */
	uint32_t kernel_left;     /* its events not read into kbuf yet */
	struct kernel_event *kbuf; /* read ahead: KERNEL_READ_AHEAD at most, allocated at first use */
	uint32_t kbuf_pos, kbuf_cnt;
	uint8_t has_kev;
	struct kernel_event kev;  /* the next one */
};

#define KERNEL_READ_AHEAD 256

/* The thread's next kernel event into c->kev (has_kev 0: none left).  A
 * section's CRC was checked when the trace was opened. */
static int kernel_advance(struct trace_iter *it, struct trace_cursor *c)
{
	c->has_kev = 0;
	if (c->kbuf_pos == c->kbuf_cnt) {
		while (!c->kernel_left) {
			if (c->next_kernel >= c->th->kernel_cnt) {
				free(c->kbuf);
				c->kbuf = NULL;
				return 0;
			}
			const struct trace_kernel_ref *ref = &c->th->kernel[c->next_kernel++];
			c->kernel_off = ref->offset + sizeof(struct sec_kernel) + (uint64_t)ref->first * sizeof(struct kernel_event);
			c->kernel_left = ref->count;
		}
		if (!c->kbuf && !(c->kbuf = malloc(KERNEL_READ_AHEAD * sizeof(*c->kbuf)))) {
			reader_error(it->err, sizeof(it->err), "out of memory");
			return -1;
		}
		uint32_t n = c->kernel_left < KERNEL_READ_AHEAD ? c->kernel_left : KERNEL_READ_AHEAD;
		if (reader_read_at(it->t->f, c->kernel_off, c->kbuf, n * sizeof(*c->kbuf))) {
			reader_error(it->err, sizeof(it->err), "cannot read the kernel events at offset %llu",
				     (unsigned long long)c->kernel_off);
			return -1;
		}
		c->kernel_off += n * sizeof(*c->kbuf);
		c->kernel_left -= n;
		c->kbuf_pos = 0;
		c->kbuf_cnt = n;
	}
	c->kev = c->kbuf[c->kbuf_pos++];
	c->has_kev = 1;
	return 0;
}

static int is_data_tag(const struct trace *t, uint64_t tag)
{
	return (t->version >= 3 && tag == ((uint64_t)TAG_DATA << 2 | TAG_ENTRY)) ||
	       (t->version >= 4 && tag == ((uint64_t)TAG_DATA_PACKED << 2 | TAG_ENTRY));
}

/* The raw time of the next event of the current chunk, without decoding
 * it: 1, or 0 when the next tag is a data block (decode_one takes it). */
static int peek_raw(const struct trace *t, const struct trace_cursor *c, uint64_t *raw)
{
	const uint8_t *q = c->p;
	uint64_t tag, delta;

	if (varint_get(&q, c->end, &tag) || varint_get(&q, c->end, &delta))
		return 0; /* decode_one says what is wrong */
	if (is_data_tag(t, tag))
		return 0;
	*raw = c->raw + delta;
	return 1;
}

/* -E linux:schedule: the pending kernel event, an interval off the CPU
 * inside a call, as a call of t->sched_site: its entry now, its exit
 * (when the thread came back) as the close due next.  The exit is held
 * to the thread's next call event, which the kernel's clock, mapped onto
 * the trace's, could otherwise pass by a little. */
static int sched_take(struct trace_iter *it, struct trace_cursor *c, struct trace_event *e, uint64_t ns,
		      uint64_t off_ns)
{
	struct trace *t = it->t;
	uint64_t end = ns + off_ns, next_raw;
	if (c->left && peek_raw(t, c, &next_raw)) {
		uint64_t next = trace_ns(t, next_raw);
		if (end > next)
			end = next > ns ? next : ns;
	}
	uint32_t node = 0;
	if (it->tree) {
		uint32_t key = t->sched_site;
		if (it->tree->site_key && key < it->tree->site_key_cnt)
			key = it->tree->site_key[key];
		uint32_t parent = c->stack.depth ? c->stack.v[c->stack.depth - 1].node : c->root;
		if (!(node = call_tree_child(it->tree, parent, key))) {
			reader_error(it->err, sizeof(it->err), "out of memory");
			return -1;
		}
	}
	*e = (struct trace_event){ .ns = ns, .tid = c->th->tid, .thread = c->index, .site = t->sched_site,
				   .kind = TEV_ENTRY, .depth = (uint32_t)c->stack.depth, .node = node };
	if (it->mark)
		e->mark = it->mark(e, it->mark_arg);
	if (thread_stack_push(&c->stack, t->sched_site, ns)) {
		reader_error(it->err, sizeof(it->err), "out of memory");
		return -1;
	}
	struct frame *f = &c->stack.v[c->stack.depth - 1];
	f->node = node;
	f->mark = e->mark;
	f->offcpu_ns = end - ns; /* the callers' share, as the kernel event's */
	c->close_to = c->stack.depth - 1;
	c->close_ns = end;
	c->close_flags = 0;
	c->last_ns = end;
	t->work++;
	return kernel_advance(it, c) ? -1 : 1;
}

/* The pending kernel event as the thread's next event, at the depth of
 * its calls open, and the one after it read: 1, or 0 when it is left out
 * (trace.sched), or -1. */
static int kernel_take(struct trace_iter *it, struct trace_cursor *c, struct trace_event *e)
{
	struct trace *t = it->t;
	uint64_t ns = trace_ns(t, c->kev.time);
	/* Its length on the trace's clock: the difference of the two ends,
	 * each converted, as every other duration. */
	uint64_t len = trace_ns(t, c->kev.time + c->kev.dur) - ns;
	if (t->sched && c->kev.kind == KEV_OFFCPU) {
		int preempted = c->kev.flags == 1;
		int call = (t->sched & TRACE_SCHED_CALLS) && (c->stack.depth || (t->sched & TRACE_SCHED_FULL));
		if ((t->sched & TRACE_SCHED_NONE) || (preempted && (t->sched & TRACE_SCHED_NO_PREEMPT)) ||
		    ((t->sched & TRACE_SCHED_CALLS) && !call)) {
			/* Left out as an event, not as time: the call it is in
			 * was off the CPU all the same (report's columns). */
			if (c->stack.depth)
				c->stack.v[c->stack.depth - 1].offcpu_ns += len;
			return kernel_advance(it, c) ? -1 : 0;
		}
		if (call)
			return sched_take(it, c, e, ns < c->last_ns ? c->last_ns : ns, len);
	}

	*e = (struct trace_event){ .ns = ns < c->last_ns ? c->last_ns : ns, .tid = c->th->tid, .thread = c->index,
				   .site = UINT32_MAX, .kind = TEV_KERNEL, .depth = (uint32_t)c->stack.depth,
				   .kev = c->kev };
	e->kev_ns = len;
	if (c->kev.kind == KEV_PROBE && c->kev.a < t->probe_cnt) {
		e->data = (const uint8_t *)t->probe_names[c->kev.a];
		e->data_len = (uint16_t)strlen(t->probe_names[c->kev.a]);
	}
	if (c->stack.depth) {
		struct frame *f = &c->stack.v[c->stack.depth - 1];
		e->site = f->site;
		e->mark = f->mark;
		/* The innermost call's share: its exit carries it, and adds
		 * it to its caller's. */
		if (c->kev.kind == KEV_SYSCALL)
			f->syscall_ns += e->kev_ns;
		else if (c->kev.kind == KEV_OFFCPU)
			f->offcpu_ns += e->kev_ns;
	}
	if (e->ns > c->last_ns)
		c->last_ns = e->ns;
	t->work++;
	return kernel_advance(it, c) ? -1 : 1;
}

/* A data block whose tag is at *q: its words into out (TRACE_DATA_MAX
 * bytes at most; NULL: only read) and the cursor's reference, *q past it.
 * The bytes kept in out, or -1 (the error said). */
/* One event (or data block) of the chunk read: 0, or -1 when it was the
 * last one the header counts and bytes remain. */
static int event_done(struct trace_iter *it, struct trace_cursor *c)
{
	c->event_no++;
	if (!--c->left && c->p != c->end) {
		reader_error(it->err, sizeof(it->err), "chunk at offset %llu has %zu stray bytes after its events",
			     (unsigned long long)c->chunk_off, (size_t)(c->end - c->p));
		return -1;
	}
	return 0;
}

static int data_alloc(struct trace_iter *it, struct trace_cursor *c)
{
	if (c->data)
		return 0;
	/* The ring and the reference, at the thread's first block. */
	c->data = malloc(TRACE_DATA_RING * sizeof(*c->data) + TRACE_DATA_REF_WORDS * sizeof(uint64_t));
	if (!c->data) {
		reader_error(it->err, sizeof(it->err), "out of memory");
		return -1;
	}
	c->data_ref = (uint64_t *)(c->data + TRACE_DATA_RING);
	c->data_ref_n = 0;
	return 0;
}

static long data_block(struct trace_iter *it, struct trace_cursor *c, const uint8_t **q, uint8_t *out)
{
	uint64_t tag, len, words;
	const uint8_t *p = *q;

	if (data_alloc(it, c))
		return -1;
	if (varint_get(&p, c->end, &tag) || varint_get(&p, c->end, &len) || len > (uint64_t)(c->end - p))
		goto cut;
	const uint8_t *block_end = p + len;
	size_t kept = 0;
	uint32_t ref_n = c->data_ref_n;
	if (tag == ((uint64_t)TAG_DATA << 2 | TAG_ENTRY)) {
		kept = len < TRACE_DATA_MAX ? (size_t)len : TRACE_DATA_MAX;
		if (out)
			memcpy(out, p, kept);
		c->data_ref_n = (uint32_t)(len / 8 < TRACE_DATA_REF_WORDS ? len / 8 : TRACE_DATA_REF_WORDS);
		memcpy(c->data_ref, p, c->data_ref_n * 8);
	} else {
		if (varint_get(&p, block_end, &words) || words > len)
			goto cut;
		uint64_t v;
		for (uint64_t i = 0; i < words; i++) {
			uint64_t z;
			if (varint_get(&p, block_end, &z))
				goto cut;
			v = varint_unzigzag(z) + (i < ref_n ? c->data_ref[i] : 0);
			if (i < TRACE_DATA_REF_WORDS)
				c->data_ref[i] = v;
			if (out && kept + 8 <= TRACE_DATA_MAX) {
				memcpy(out + kept, &v, 8);
				kept += 8;
			}
		}
		if (p != block_end)
			goto cut;
		c->data_ref_n = (uint32_t)(words < TRACE_DATA_REF_WORDS ? words : TRACE_DATA_REF_WORDS);
	}
	*q = block_end;
	return (long)kept;
cut:
	reader_error(it->err, sizeof(it->err), "chunk at offset %llu: a data block is cut short",
		     (unsigned long long)c->chunk_off);
	return -1;
}

/* The data block right after the event just decoded into e, if any: its
 * words go to the cursor's ring and e points at them.  0, or -1. */
static int take_data(struct trace_iter *it, struct trace_cursor *c, struct trace_event *e)
{
	const uint8_t *q = c->p;
	uint64_t tag;

	if (!c->left || varint_get(&q, c->end, &tag) || !is_data_tag(it->t, tag))
		return 0;
	if (data_alloc(it, c))
		return -1;
	uint8_t *slot = c->data[c->data_next++ % TRACE_DATA_RING];
	q = c->p;
	long kept = data_block(it, c, &q, slot);
	if (kept < 0)
		return -1;
	e->data = slot;
	e->data_len = (uint16_t)kept;
	c->p = q;
	return event_done(it, c);
}

static void close_top(struct trace_iter *it, struct trace_cursor *c, uint64_t ns, uint8_t flags,
		      struct trace_event *e)
{
	struct frame *f = &c->stack.v[--c->stack.depth];
	*e = (struct trace_event){
		.ns = ns < f->ns ? f->ns : ns,
		.entry_ns = f->ns,
		.child_ns = f->child_ns,
		.syscall_ns = f->syscall_ns,
		.offcpu_ns = f->offcpu_ns,
		.tid = c->th->tid,
		.thread = c->index,
		.site = f->site,
		.depth = (uint32_t)c->stack.depth,
		.node = f->node,
		.mark = f->mark,
		.kind = TEV_EXIT,
		.flags = (uint8_t)(flags | f->before),
	};
	if (c->stack.depth) {
		struct frame *parent = &c->stack.v[c->stack.depth - 1];
		parent->child_ns += e->ns - e->entry_ns;
		parent->syscall_ns += e->syscall_ns;
		parent->offcpu_ns += e->offcpu_ns;
	}
	it->t->work++;
}

static int load_chunk(struct trace_iter *it, struct trace_cursor *c)
{
	struct trace_chunk_ref *ref = &c->th->chunks[c->next_chunk++];
	struct trace *t = it->t;
	struct sec_chunk hdr;
	struct trace_section_header sh;
	size_t hsize = reader_chunk_header_size(t);

	if (ref->length > c->buf_cap) {
		uint8_t *b = realloc(c->buf, ref->length);
		if (!b) {
			reader_error(it->err, sizeof(it->err), "out of memory");
			return -1;
		}
		c->buf = b;
		c->buf_cap = ref->length;
	}
	c->chunk_off = ref->offset;
	if (ref->length < hsize || reader_read_at(t->f, ref->offset - sizeof(sh), &sh, sizeof(sh)) ||
	    reader_read_at(t->f, ref->offset, c->buf, ref->length)) {
		reader_error(it->err, sizeof(it->err), "cannot read the chunk at offset %llu", (unsigned long long)ref->offset);
		return -1;
	}
	if (section_crc32(c->buf, ref->length) != sh.crc32) {
		reader_error(it->err, sizeof(it->err), "chunk at offset %llu fails its CRC check: the file is corrupted",
			(unsigned long long)ref->offset);
		return -1;
	}
	reader_chunk_header(t, c->buf, &hdr);
	c->p = c->buf + hsize;
	c->end = c->buf + ref->length;
	c->left = hdr.event_count;
	c->event_no = 0;
	c->raw = hdr.base;
	c->data_ref_n = 0; /* packed blocks count from the chunk's own */
	if (!c->left && c->p != c->end) {
		reader_error(it->err, sizeof(it->err), "chunk at offset %llu has %zu stray bytes after its events",
			(unsigned long long)ref->offset, (size_t)(c->end - c->p));
		return -1;
	}
	/* A thread's first chunk that begins inside open calls, with no loss
	 * before it: a forked child's, its first open_depth entries those
	 * its parent had open; or a snapshot's chunk that says its first
	 * open_depth entries are the calls open where the window begins. */
	c->inherit_before = t->version >= 2 && (hdr.salvaged & CHUNK_ENTERED_BEFORE);
	c->inherit_left = t->version >= 2 && ((!hdr.seq && !hdr.lost_before) || c->inherit_before) ? hdr.open_depth : 0;
	if (hdr.lost_before) {
		/* Calls above the depth the thread had when it took this chunk
		 * returned during the loss (version 2; a version 1 writer did
		 * not cut, so neither does its reader). */
		const uint8_t *q = c->p;
		uint64_t first = 0;
		int first_is_exit = c->left && !varint_get(&q, c->end, &first) && (first & 3) != TAG_ENTRY;
		size_t cut = t->version >= 2 ? thread_stack_cut_depth(&c->stack, hdr.open_depth, first_is_exit)
					     : c->stack.depth;
		c->close_to = cut;
		c->close_ns = c->last_ns;
		c->close_flags = TEV_EXIT_LOST;
		c->later = (struct trace_event){ .ns = trace_ns(t, hdr.base), .tid = c->th->tid, .thread = c->index,
						 .kind = TEV_LOST, .lost = hdr.lost_before, .depth = (uint32_t)cut };
		c->then = THEN_EVENT;
	}
	return 0;
}

/* Decode the next event of the current chunk: 1 with *e set, 0 if it
 * produced no event of its own (a context left, or closes now due), -1. */
static int decode_one(struct trace_iter *it, struct trace_cursor *c, struct trace_event *e)
{
	struct trace *t = it->t;
	uint64_t tag, delta;
	const uint8_t *q = c->p;

	t->work++;
	if (!varint_get(&q, c->end, &tag) && is_data_tag(t, tag)) {
		/* A data block no event claimed (its event was a context
		 * switch, or an exit closed late): read, for the reference
		 * the chunk's next packed block counts from, and passed. */
		if (data_block(it, c, &c->p, NULL) < 0)
			return -1;
		if (event_done(it, c))
			return -1;
		return 0;
	}
	if (varint_get(&c->p, c->end, &tag) || varint_get(&c->p, c->end, &delta)) {
		reader_error(it->err, sizeof(it->err), "chunk at offset %llu: event %u is cut short",
			(unsigned long long)c->chunk_off, c->event_no);
		return -1;
	}
	if (event_done(it, c))
		return -1;
	c->raw += delta;
	uint64_t ns = trace_ns(t, c->raw);
	c->last_ns = ns;
	if (tag >> 2 > UINT32_MAX) {
		reader_error(it->err, sizeof(it->err), "chunk at offset %llu: event %u has an impossible site",
			(unsigned long long)c->chunk_off, c->event_no - 1);
		return -1;
	}
	uint32_t site = (uint32_t)(tag >> 2);
	if ((tag & 3) == TAG_ENTRY && site >= TAG_SWITCH_BASE) {
		uint32_t which = site - TAG_SWITCH_BASE;
		if (!(which & TAG_SWITCH_TO)) {
			thread_stack_switch_from(&c->stack, which);
			return 0;
		}
		if (thread_stack_switch_to(&c->stack, which & TAG_CONTEXT_MASK)) {
			reader_error(it->err, sizeof(it->err), "out of memory");
			return -1;
		}
		*e = (struct trace_event){ .ns = ns, .tid = c->th->tid, .thread = c->index, .site = which & TAG_CONTEXT_MASK,
					   .kind = TEV_SWITCH, .depth = (uint32_t)c->stack.depth };
		return 1;
	}
	switch (tag & 3) {
	case TAG_ENTRY: {
		int flat = (site & TAG_SITE_FLAT) != 0;
		uint32_t node = 0;
		if (it->tree) {
			uint32_t parent = c->stack.depth ? c->stack.v[c->stack.depth - 1].node : c->root;
			uint32_t key = site & ~TAG_SITE_FLAT;
			if (it->tree->site_key && key < it->tree->site_key_cnt)
				key = it->tree->site_key[key];
			node = call_tree_child(it->tree, parent, key);
			if (!node) {
				reader_error(it->err, sizeof(it->err), "out of memory");
				return -1;
			}
		}
		uint8_t inherited = !flat && c->inherit_left ? TEV_INHERITED : 0;
		if (inherited) {
			c->inherit_left--;
			if (c->inherit_before)
				inherited |= TEV_BEFORE;
		}
		*e = (struct trace_event){ .ns = ns, .tid = c->th->tid, .thread = c->index, .site = site & ~TAG_SITE_FLAT,
					   .kind = TEV_ENTRY, .flags = (uint8_t)(flat ? TEV_FLAT : inherited),
					   .depth = (uint32_t)c->stack.depth, .node = node };
		if (take_data(it, c, e))
			return -1;
		if (it->mark)
			e->mark = it->mark(e, it->mark_arg);
		if (!flat) {
			if (thread_stack_push(&c->stack, site, ns)) {
				reader_error(it->err, sizeof(it->err), "out of memory");
				return -1;
			}
			c->stack.v[c->stack.depth - 1].node = node;
			c->stack.v[c->stack.depth - 1].mark = e->mark;
			c->stack.v[c->stack.depth - 1].before = inherited & TEV_BEFORE ? TEV_BEFORE : inherited;
		}
		return 1;
	}
	case TAG_EXIT_TOP:
	case TAG_UNWIND_TOP:
		if (!c->stack.depth) {
			reader_error(it->err, sizeof(it->err), "chunk at offset %llu: an exit with no open frame",
				(unsigned long long)c->chunk_off);
			return -1;
		}
		close_top(it, c, ns, (tag & 3) == TAG_UNWIND_TOP ? TEV_UNWOUND : 0, e);
		return take_data(it, c, e) ? -1 : 1;
	default: { /* TAG_EXIT_SITE */
		long at = thread_stack_find(&c->stack, site);
		t->work += c->stack.depth - (at < 0 ? 0 : (size_t)at);
		if (at < 0) {
			*e = (struct trace_event){ .ns = ns, .entry_ns = ns, .tid = c->th->tid, .thread = c->index,
						   .site = site, .kind = TEV_EXIT, .flags = TEV_ORPHAN,
						   .depth = (uint32_t)c->stack.depth };
			return 1;
		}
		/* The calls above it never returned: closed by this exit. */
		c->close_to = (size_t)at + 1;
		c->close_ns = ns;
		c->close_flags = TEV_UNMATCHED;
		c->then = THEN_CLOSE_TOP;
		return 0;
	}
	}
}

/* The next event of a thread: 1, 0 (none left) or -1. */
static int cursor_next(struct trace_iter *it, struct trace_cursor *c, struct trace_event *e)
{
	for (;;) {
		if (c->close_to < c->stack.depth) {
			close_top(it, c, c->close_ns, c->close_flags, e);
			return 1;
		}
		c->close_to = SIZE_MAX;
		if (c->then == THEN_CLOSE_TOP) {
			c->then = THEN_NONE;
			if (c->stack.depth) {
				close_top(it, c, c->close_ns, 0, e);
				return 1;
			}
		}
		if (c->then == THEN_EVENT) {
			c->then = THEN_NONE;
			*e = c->later;
			/* The loss is the thread's latest event: calls that
			 * are closed after it (still open when the trace
			 * ends) must not go back before it. */
			if (e->ns > c->last_ns)
				c->last_ns = e->ns;
			return 1;
		}
		uint64_t next_raw;
		if (c->has_kev && c->left && peek_raw(it->t, c, &next_raw) && c->kev.time <= next_raw) {
			int r = kernel_take(it, c, e);
			if (r)
				return r;
			continue;
		}
		if (c->left) {
			int r = decode_one(it, c, e);
			if (r)
				return r;
			continue;
		}
		if (c->next_chunk < c->th->chunk_cnt) {
			if (load_chunk(it, c))
				return -1;
			continue;
		}
		if (c->ended)
			return 0;
		/* Kernel events after the thread's last call event. */
		if (c->has_kev) {
			int r = kernel_take(it, c, e);
			if (r)
				return r;
			continue;
		}
		/* The trace ended with frames still open: close them as open. */
		c->ended = 1;
		free(c->buf);
		c->buf = NULL;
		c->buf_cap = 0;
		c->close_to = 0;
		c->close_ns = c->last_ns;
		c->close_flags = TEV_OPEN;
	}
}

static int heap_less(struct trace_iter *it, size_t a, size_t b)
{
	const struct trace_event *x = &it->cursors[a].head, *y = &it->cursors[b].head;
	if (x->ns != y->ns)
		return x->ns < y->ns;
	if (x->tid != y->tid)
		return x->tid < y->tid;
	return x->thread < y->thread;
}

static void heap_down(struct trace_iter *it, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		it->t->work++;
		if (l < it->heap_cnt && heap_less(it, it->heap[l], it->heap[m]))
			m = l;
		if (r < it->heap_cnt && heap_less(it, it->heap[r], it->heap[m]))
			m = r;
		if (m == i)
			return;
		size_t tmp = it->heap[i];
		it->heap[i] = it->heap[m];
		it->heap[m] = tmp;
		i = m;
	}
}

/* Cursors for the threads [first, end) with tid (0: any), or for the
 * thread first alone (one). */
static int iter_init(struct trace_iter *it, struct trace *t, uint32_t tid, struct call_tree *tree, trace_mark_fn fn,
		     void *arg, size_t first, size_t end)
{
	size_t n = end - first;
	memset(it, 0, sizeof(*it));
	it->t = t;
	it->tree = tree;
	it->mark = fn;
	it->mark_arg = arg;
	it->cursors = calloc(n ? n : 1, sizeof(*it->cursors));
	it->heap = calloc(n ? n : 1, sizeof(*it->heap));
	if (!it->cursors || !it->heap) {
		reader_error(it->err, sizeof(it->err), "out of memory");
		return -1;
	}
	for (size_t i = first; i < end; i++) {
		if (tid && t->threads[i].tid != tid)
			continue;
		struct trace_cursor *c = &it->cursors[it->cursor_cnt++];
		c->th = &t->threads[i];
		c->index = (uint32_t)i;
		c->close_to = SIZE_MAX;
		c->stack.key = thread_key(c->th->tid, c->th->serial);
		if (kernel_advance(it, c))
			return -1;
		if (tree && !(c->root = call_tree_child(tree, 0, tree->thread_root ? tree->thread_root[i] : c->th->tid))) {
			reader_error(it->err, sizeof(it->err), "out of memory");
			return -1;
		}
		int r = cursor_next(it, c, &c->head);
		if (r < 0)
			return -1;
		if (r > 0) {
			c->has_head = 1;
			it->heap[it->heap_cnt++] = it->cursor_cnt - 1;
		}
	}
	for (size_t i = it->heap_cnt / 2; i-- > 0;)
		heap_down(it, i);
	return 0;
}

int trace_iter_init_mark(struct trace_iter *it, struct trace *t, uint32_t tid, struct call_tree *tree,
			 trace_mark_fn fn, void *arg)
{
	return iter_init(it, t, tid, tree, fn, arg, 0, t->thread_cnt);
}

int trace_iter_init_thread(struct trace_iter *it, struct trace *t, uint32_t index)
{
	if (index >= t->thread_cnt) {
		memset(it, 0, sizeof(*it));
		reader_error(it->err, sizeof(it->err), "no thread %u", index);
		return -1;
	}
	return iter_init(it, t, 0, NULL, NULL, NULL, index, (size_t)index + 1);
}

int trace_iter_init_tree(struct trace_iter *it, struct trace *t, uint32_t tid, struct call_tree *tree)
{
	return trace_iter_init_mark(it, t, tid, tree, NULL, NULL);
}

int trace_iter_init(struct trace_iter *it, struct trace *t, uint32_t tid)
{
	return trace_iter_init_mark(it, t, tid, NULL, NULL, NULL);
}

int trace_iter_next(struct trace_iter *it, struct trace_event *ev)
{
	if (!it->heap_cnt)
		return 0;
	struct trace_cursor *c = &it->cursors[it->heap[0]];
	*ev = c->head;
	it->last = c;
	int r = cursor_next(it, c, &c->head);
	if (r < 0)
		return -1;
	if (r == 0) {
		c->has_head = 0;
		it->heap[0] = it->heap[--it->heap_cnt];
	}
	heap_down(it, 0);
	return 1;
}

int trace_iter_peek_same_thread(struct trace_iter *it, struct trace_event *ev)
{
	struct trace_cursor *c = it->last;
	if (!c || !c->has_head)
		return 0;
	*ev = c->head;
	return 1;
}

int trace_iter_next_is_same_thread(const struct trace_iter *it)
{
	return it->heap_cnt && it->last == &it->cursors[it->heap[0]];
}

void trace_iter_free(struct trace_iter *it)
{
	for (size_t i = 0; i < it->cursor_cnt; i++) {
		thread_stack_free(&it->cursors[i].stack);
		free(it->cursors[i].data);
		free(it->cursors[i].buf);
		free(it->cursors[i].kbuf);
	}
	free(it->cursors);
	free(it->heap);
	memset(it, 0, sizeof(*it));
}
