/* trace_writer.c - see trace_writer.h.
 *
 * Invariants:
 *  - the file is written front to back, never rewritten: a recording that
 *    stops at any point leaves a prefix that readers can use up to its last
 *    complete section;
 *  - the writer keeps, per thread (tid, serial), the stack of open calls
 *    that every reader rebuilds, and encodes an exit as "the innermost
 *    call" only when that is what the readers will find there: so it
 *    applies the same cut after lost events as they do (thread_stack.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/section_crc.h"
#include "common/shm_layout.h"
#include "format/trace_writer.h"
#include "format/varint.h"

static void put(struct trace_writer *w, const void *p, size_t n)
{
	if (!w->err && n && fwrite(p, 1, n, w->f) != n)
		w->err = errno ? errno : EIO;
	w->bytes += n;
}

int trace_writer_open(struct trace_writer *w, FILE *f, int tracer)
{
	struct trace_file_header h;

	memset(w, 0, sizeof(*w));
	w->f = f;
	w->tracer = tracer;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, TRACE_MAGIC, sizeof(h.magic));
	h.version = TRACE_VERSION;
	h.header_size = sizeof(h);
	h.flags = (uint64_t)tracer;
	put(w, &h, sizeof(h));
	return w->err ? -w->err : 0;
}

int trace_writer_section(struct trace_writer *w, uint32_t type, const void *payload, uint64_t len)
{
	struct trace_section_header sh = {
		.type = type,
		.crc32 = section_crc32(payload, len),
		.length = len,
	};
	put(w, &sh, sizeof(sh));
	put(w, payload, len);
	return w->err ? -w->err : 0;
}

static int reserve(struct trace_writer *w, size_t need)
{
	if (need <= w->buf_cap)
		return 0;
	uint8_t *b = realloc(w->buf, need);
	if (!b)
		return -ENOMEM;
	w->buf = b;
	w->buf_cap = need;
	return 0;
}

/* varint_put with the lengths nearly every tag and delta has (one or two
 * bytes) taken without its loop: the reader runs this for each event the
 * program records, beside it, and on a machine whose two CPUs share a
 * core every instruction here is one the program waits for. */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	if (v < 0x80) {
		*p = (uint8_t)v;
		return p + 1;
	}
	if (v < 0x4000) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)(v >> 7);
		return p + 2;
	}
	return p + varint_put(p, v);
}

/* A data block of `words` words at p: packed (TAG_DATA_PACKED) where
 * that is smaller, else raw (TAG_DATA); *ref, *ref_n the chunk's block
 * before it (its words in the chunk), updated.  Returns the bytes
 * written: at most 20 a word plus 20, the budget of the words + 1 events
 * the block took in the chunk. */
static size_t put_data_block(uint8_t *p, const uint64_t *v, uint64_t words, const uint64_t **refp, uint32_t *ref_n)
{
	const uint64_t *ref = *refp;
	uint64_t n_ref = *ref_n < words ? *ref_n : words;
	uint8_t *start = p;
	size_t packed = varint_len(words);

	for (uint64_t i = 0; i < n_ref; i++)
		packed += varint_len(varint_zigzag(v[i] - ref[i]));
	for (uint64_t i = n_ref; i < words; i++)
		packed += varint_len(varint_zigzag(v[i]));
	if (packed < words * 8) {
		p = put_varint(p, (uint64_t)TAG_DATA_PACKED << 2 | TAG_ENTRY);
		p = put_varint(p, packed);
		p = put_varint(p, words);
		for (uint64_t i = 0; i < n_ref; i++)
			p = put_varint(p, varint_zigzag(v[i] - ref[i]));
		for (uint64_t i = n_ref; i < words; i++)
			p = put_varint(p, varint_zigzag(v[i]));
	} else {
		p = put_varint(p, (uint64_t)TAG_DATA << 2 | TAG_ENTRY);
		p = put_varint(p, words * 8);
		memcpy(p, v, words * 8);
		p += words * 8;
	}
	*refp = v;
	*ref_n = words < TRACE_DATA_REF_WORDS ? (uint32_t)words : TRACE_DATA_REF_WORDS;
	return (size_t)(p - start);
}

int trace_writer_chunk(struct trace_writer *w, const struct sec_chunk *hdr, const uint64_t *events, uint32_t n)
{
	const uint64_t *ref = NULL;
	uint32_t ref_n = 0;

	/* Worst case: a 10-byte tag and a 10-byte delta per event. */
	if (reserve(w, sizeof(*hdr) + (size_t)n * 20))
		return -ENOMEM;
	struct thread_stack *st = stack_map_get(&w->stacks, thread_key(hdr->tid, hdr->serial));
	if (!st)
		return -ENOMEM;
	/* The calls above open_depth returned while events were dropped. */
	if (hdr->lost_before)
		st->depth = thread_stack_cut_depth(st, hdr->open_depth,
						   n && (ev_type(events[0]) == EV_EXIT || ev_type(events[0]) == EV_UNWIND));
	uint8_t *p = w->buf + sizeof(*hdr);
	const uint64_t base = hdr->base;
	uint64_t prev = base;
	uint32_t file_events = 0, calls = 0;
	/* The stack in locals: a store through p may alias st's fields, so
	 * the compiler would load them again after every byte.  st is
	 * brought up to date (st_sync) before anything else uses it, and the
	 * locals from it after (st_load).  The writer's frames need their
	 * site alone (no other field of a writer's frame is ever read). */
	struct frame *frames = st->v;
	size_t depth = st->depth, cap = st->cap;
#define st_sync() (st->depth = depth)
#define st_load() (frames = st->v, depth = st->depth, cap = st->cap)

	for (uint32_t i = 0; i < n; i++) {
		uint64_t ev = events[i];
		unsigned type = ev_type(ev);
		uint32_t site = ev_site(ev);
		uint64_t t = base + ev_delta(ev);
		uint64_t tag;

		file_events++;
		if (type == EV_ENTRY) {
			int flat = (site & EV_ENTRY_FLAT) != 0;
			uint32_t id = site & ~EV_ENTRY_FLAT;
			tag = (uint64_t)(id | (flat ? TAG_SITE_FLAT : 0)) << 2 | TAG_ENTRY;
			if (!flat) {
				if (depth < cap) {
					frames[depth++].site = site;
				} else {
					st_sync();
					if (thread_stack_push(st, site, 0))
						return -ENOMEM;
					st_load();
				}
			}
		} else if (type != EV_SWITCH) {
			if (depth && frames[depth - 1].site == site) {
				tag = type == EV_UNWIND ? TAG_UNWIND_TOP : TAG_EXIT_TOP;
				depth--;
			} else {
				tag = (uint64_t)site << 2 | TAG_EXIT_SITE;
				st_sync();
				long at = thread_stack_find(st, site);
				if (at >= 0)
					depth = (size_t)at;
			}
		} else if (site == EV_DATA_SITE) {
			/* A data block: its words, raw or packed, no delta.  A
			 * block cut by the end of the chunk (a crash mid-write) is
			 * dropped. */
			uint64_t words = ev_delta(ev);
			if (words > n - 1 - i) {
				file_events--;
				break;
			}
			p += put_data_block(p, &events[i + 1], words, &ref, &ref_n);
			i += (uint32_t)words;
			continue;
		} else {
			/* Buffer constants in, file constants out. */
			uint32_t ctx = site & EV_CONTEXT_MASK;
			uint32_t file_site = (site & EV_SWITCH_TO ? TAG_SWITCH_TO : 0) | ctx;
			tag = (uint64_t)(TAG_SWITCH_BASE + file_site) << 2 | TAG_ENTRY;
			st_sync();
			if (site & EV_SWITCH_TO) {
				if (thread_stack_switch_to(st, ctx))
					return -ENOMEM;
			} else {
				thread_stack_switch_from(st, ctx);
			}
			st_load();
		}
		calls++;
		p = put_varint(p, tag);
		/* Events of one chunk are in time order; guard anyway. */
		p = put_varint(p, t >= prev ? t - prev : 0);
		prev = t >= prev ? t : prev;
	}
	st_sync();
#undef st_sync
#undef st_load
	/* The header counts the file's events: a data block is one. */
	struct sec_chunk out = *hdr;
	out.event_count = file_events;
	memcpy(w->buf, &out, sizeof(out));
	w->events += calls;
	w->chunks++;
	w->salvaged += (hdr->salvaged & CHUNK_SALVAGED) != 0;
	return trace_writer_section(w, SEC_CHUNK, w->buf, (uint64_t)(p - w->buf));
}

int trace_writer_finish(struct trace_writer *w)
{
	if (!w->err && fflush(w->f))
		w->err = errno;
	if (!w->err && fsync(fileno(w->f)))
		w->err = errno;
	stack_map_free(&w->stacks);
	free(w->buf);
	w->buf = NULL;
	return w->err ? -w->err : 0;
}
