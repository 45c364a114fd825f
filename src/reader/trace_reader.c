/* trace_reader.c - see trace_reader.h.
 *
 * Opening walks the section headers once: metadata sections are read and
 * checked (CRC), chunk sections are only indexed.  A length that points
 * past the end of the file, an unknown section type, a missing END section
 * or a bad CRC are reported with the offset where they were found. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "shm_layout.h"
#include "trace_reader.h"
#include "varint.h"

static void set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

static int read_at(FILE *f, uint64_t off, void *buf, size_t len)
{
	if (fseeko(f, (off_t)off, SEEK_SET))
		return -1;
	return fread(buf, 1, len, f) == len ? 0 : -1;
}

static int add_site(struct trace *t, uint32_t id, uint32_t module, uint64_t ip, const char *name, size_t nlen)
{
	if (id >= (1u << 22))
		return -1;
	if (id >= t->site_cap) {
		size_t cap = t->site_cap ? t->site_cap : 1024;
		while (cap <= id)
			cap *= 2;
		struct trace_site *s = realloc(t->sites, cap * sizeof(*s));
		if (!s)
			return -1;
		memset(s + t->site_cap, 0, (cap - t->site_cap) * sizeof(*s));
		t->sites = s;
		t->site_cap = cap;
	}
	if (t->names_len + nlen + 1 > t->names_cap) {
		size_t cap = t->names_cap ? t->names_cap * 2 : 65536;
		while (cap < t->names_len + nlen + 1)
			cap *= 2;
		char *n = realloc(t->names, cap);
		if (!n)
			return -1;
		t->names = n;
		t->names_cap = cap;
	}
	memcpy(t->names + t->names_len, name, nlen);
	t->names[t->names_len + nlen] = 0;
	t->sites[id] = (struct trace_site){ id, module, ip, (const char *)(uintptr_t)(t->names_len + 1) };
	t->names_len += nlen + 1;
	return 0;
}

static int parse_sites(struct trace *t, const uint8_t *p, uint64_t len)
{
	const uint8_t *end = p + len;
	while (p < end) {
		uint32_t id, module;
		uint64_t ip;
		uint16_t nlen;
		if (end - p < 18)
			return -1;
		memcpy(&id, p, 4);
		memcpy(&module, p + 4, 4);
		memcpy(&ip, p + 8, 8);
		memcpy(&nlen, p + 16, 2);
		p += 18;
		if ((uint64_t)(end - p) < nlen)
			return -1;
		if (add_site(t, id, module, ip, (const char *)p, nlen))
			return -1;
		p += nlen;
	}
	return 0;
}

struct trace_thread *trace_thread_find(struct trace *t, uint32_t tid)
{
	for (size_t i = 0; i < t->thread_cnt; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	return NULL;
}

static struct trace_thread *thread_get(struct trace *t, uint32_t tid)
{
	struct trace_thread *th = trace_thread_find(t, tid);
	if (th)
		return th;
	if (t->thread_cnt == t->thread_cap) {
		size_t cap = t->thread_cap ? t->thread_cap * 2 : 16;
		struct trace_thread *v = realloc(t->threads, cap * sizeof(*v));
		if (!v)
			return NULL;
		t->threads = v;
		t->thread_cap = cap;
	}
	th = &t->threads[t->thread_cnt++];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	return th;
}

static int chunk_cmp(const void *a, const void *b)
{
	const struct trace_chunk_ref *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int load_section(struct trace *t, const struct trace_section_header *sh, uint64_t off, char *err,
			size_t errlen)
{
	uint8_t *p;

	if (sh->type == SEC_CHUNK) {
		struct sec_chunk c;
		if (sh->length < sizeof(c) || read_at(t->f, off, &c, sizeof(c))) {
			set_err(err, errlen, "chunk section at offset %llu is too short", (unsigned long long)off);
			return -1;
		}
		struct trace_thread *th = thread_get(t, c.tid);
		if (!th)
			return -1;
		if (th->chunk_cnt == th->chunk_cap) {
			size_t cap = th->chunk_cap ? th->chunk_cap * 2 : 16;
			struct trace_chunk_ref *v = realloc(th->chunks, cap * sizeof(*v));
			if (!v)
				return -1;
			th->chunks = v;
			th->chunk_cap = cap;
		}
		th->chunks[th->chunk_cnt++] = (struct trace_chunk_ref){ off, sh->length, c.seq, c.lost_before,
									c.event_count };
		th->events += c.event_count;
		th->lost += c.lost_before;
		if (!t->first_raw || c.base < t->first_raw)
			t->first_raw = c.base;
		return 0;
	}
	if (!(p = malloc(sh->length + 1)))
		return -1;
	if (read_at(t->f, off, p, sh->length)) {
		set_err(err, errlen, "section at offset %llu is cut short", (unsigned long long)off);
		free(p);
		return -1;
	}
	p[sh->length] = 0;
	if ((uint32_t)crc32(0, p, (uInt)sh->length) != sh->crc32) {
		set_err(err, errlen, "section at offset %llu (type %u) fails its CRC check: the file is corrupted",
			(unsigned long long)off, sh->type);
		free(p);
		return -1;
	}
	int bad = 0;
	switch (sh->type) {
	case SEC_CLOCK:
		bad = sh->length != sizeof(t->clock);
		if (!bad) {
			memcpy(&t->clock, p, sizeof(t->clock));
			t->have_clock = 1;
		}
		break;
	case SEC_PROCESS:
		bad = sh->length < sizeof(t->process);
		if (!bad) {
			memcpy(&t->process, p, sizeof(t->process));
			t->have_process = 1;
			if (t->process.argc > 4096) {
				bad = 1;
				break;
			}
			t->argv = calloc(t->process.argc + 1, sizeof(char *));
			const char *s = (const char *)p + sizeof(t->process), *e = (const char *)p + sh->length;
			for (uint32_t i = 0; t->argv && i < t->process.argc && s < e; i++) {
				t->argv[i] = strndup(s, (size_t)(e - s));
				s += strlen(t->argv[i]) + 1;
			}
		}
		break;
	case SEC_MODULE: {
		bad = sh->length < 4;
		if (bad)
			break;
		char **m = realloc(t->modules, (t->module_cnt + 1) * sizeof(*m));
		if (!m)
			break;
		t->modules = m;
		m[t->module_cnt++] = strndup((const char *)p + 4, sh->length - 4);
		break;
	}
	case SEC_SITES:
		bad = parse_sites(t, p, sh->length);
		break;
	case SEC_THREAD: {
		bad = sh->length < 4;
		if (bad)
			break;
		uint32_t tid;
		memcpy(&tid, p, 4);
		struct trace_thread *th = thread_get(t, tid);
		if (th)
			snprintf(th->name, sizeof(th->name), "%.*s", (int)(sh->length - 4), (const char *)p + 4);
		break;
	}
	case SEC_END:
		bad = sh->length != sizeof(t->end);
		if (!bad)
			memcpy(&t->end, p, sizeof(t->end));
		break;
	default:
		set_err(err, errlen, "unknown section type %u at offset %llu: the file is corrupted or from a newer needle",
			sh->type, (unsigned long long)off);
		free(p);
		return -1;
	}
	free(p);
	if (bad) {
		set_err(err, errlen, "section at offset %llu (type %u) is malformed", (unsigned long long)off, sh->type);
		return -1;
	}
	return 0;
}

/* From libstdc++: the Itanium C++ ABI demangler. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* Drop the parameter list (and what follows it) of a demangled name, as
 * uftrace shows them: "ns::Class::method(int) const" -> "ns::Class::method". */
static void strip_parameters(char *d)
{
	char *close = strrchr(d, ')');
	int depth = 0;

	for (char *p = close; p && p > d; p--) {
		depth += *p == ')';
		depth -= *p == '(';
		if (!depth) {
			*p = 0;
			return;
		}
	}
}

/* C++ names are shown demangled ("thrower", not "_Z7throweri"). */
static void demangle_sites(struct trace *t)
{
	for (size_t i = 0; i < t->site_cap; i++) {
		const char *name = t->sites[i].name;
		int status;
		if (!name || name[0] != '_' || name[1] != 'Z')
			continue;
		char *d = __cxa_demangle(name, NULL, NULL, &status);
		char **v = d ? realloc(t->demangled, (t->demangled_cnt + 1) * sizeof(char *)) : NULL;
		if (!v) {
			free(d);
			continue;
		}
		strip_parameters(d);
		t->demangled = v;
		v[t->demangled_cnt++] = d;
		t->sites[i].name = d;
	}
}

struct trace *trace_open(const char *path, char *err, size_t errlen)
{
	struct trace *t = calloc(1, sizeof(*t));
	struct stat st;
	uint64_t off, size;
	int ended = 0;

	if (!t) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(t->path, sizeof(t->path), "%s", path);
	if (!(t->f = fopen(path, "rb")) || fstat(fileno(t->f), &st)) {
		set_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	size = (uint64_t)st.st_size;
	if (size < sizeof(t->header) || read_at(t->f, 0, &t->header, sizeof(t->header)) ||
	    memcmp(t->header.magic, TRACE_MAGIC, 8)) {
		set_err(err, errlen, "%s is not a needle trace (bad magic)", path);
		goto fail;
	}
	if (t->header.version != TRACE_VERSION || t->header.header_size != sizeof(t->header)) {
		set_err(err, errlen, "%s has format version %u; this needle reads version %u", path,
			t->header.version, TRACE_VERSION);
		goto fail;
	}
	t->tracer = (int)(t->header.flags & 0xff);
	if (t->tracer != TRACER_FUNCTION_GRAPH && t->tracer != TRACER_FUNCTION) {
		set_err(err, errlen, "%s: unknown tracer %d in the header", path, t->tracer);
		goto fail;
	}
	off = sizeof(t->header);
	while (off < size) {
		struct trace_section_header sh;
		if (ended) {
			set_err(err, errlen, "data after the END section at offset %llu: the file is corrupted",
				(unsigned long long)off);
			goto fail;
		}
		if (size - off < sizeof(sh) || read_at(t->f, off, &sh, sizeof(sh))) {
			set_err(err, errlen, "truncated: a section header at offset %llu is cut short", (unsigned long long)off);
			goto fail;
		}
		off += sizeof(sh);
		if (sh.length > TRACE_MAX_SECTION || sh.length > size - off) {
			set_err(err, errlen, "truncated or corrupted: the section at offset %llu claims %llu bytes, the file has %llu left",
				(unsigned long long)(off - sizeof(sh)), (unsigned long long)sh.length,
				(unsigned long long)(size - off));
			goto fail;
		}
		if (load_section(t, &sh, off, err, errlen))
			goto fail;
		ended = sh.type == SEC_END;
		off += sh.length;
	}
	if (!ended) {
		set_err(err, errlen, "truncated: %s ends before its END section (was the recording interrupted?)", path);
		goto fail;
	}
	if (!t->have_clock || t->clock.raw1 <= t->clock.raw0 || t->clock.ns1 < t->clock.ns0) {
		set_err(err, errlen, "%s has no valid clock section", path);
		goto fail;
	}
	t->ns_per_raw = (double)(t->clock.ns1 - t->clock.ns0) / (double)(t->clock.raw1 - t->clock.raw0);
	for (size_t i = 0; i < t->site_cap; i++)
		if (t->sites[i].name)
			t->sites[i].name = t->names + (uintptr_t)t->sites[i].name - 1;
	demangle_sites(t);
	for (size_t i = 0; i < t->thread_cnt; i++)
		qsort(t->threads[i].chunks, t->threads[i].chunk_cnt, sizeof(struct trace_chunk_ref), chunk_cmp);
	return t;
fail:
	trace_close(t);
	return NULL;
}

void trace_close(struct trace *t)
{
	if (!t)
		return;
	if (t->f)
		fclose(t->f);
	for (size_t i = 0; i < t->module_cnt; i++)
		free(t->modules[i]);
	free(t->modules);
	for (size_t i = 0; t->argv && t->argv[i]; i++)
		free(t->argv[i]);
	free(t->argv);
	for (size_t i = 0; i < t->thread_cnt; i++)
		free(t->threads[i].chunks);
	free(t->threads);
	for (size_t i = 0; i < t->demangled_cnt; i++)
		free(t->demangled[i]);
	free(t->demangled);
	free(t->sites);
	free(t->names);
	free(t);
}

int trace_verify(struct trace *t, char *err, size_t errlen)
{
	uint8_t *buf = NULL;
	size_t cap = 0;
	int ret = 0;

	for (size_t i = 0; i < t->thread_cnt && !ret; i++) {
		for (size_t j = 0; j < t->threads[i].chunk_cnt && !ret; j++) {
			struct trace_chunk_ref *ref = &t->threads[i].chunks[j];
			struct trace_section_header sh;
			if (ref->length > cap) {
				uint8_t *b = realloc(buf, ref->length);
				if (!b) {
					set_err(err, errlen, "out of memory");
					ret = -1;
					break;
				}
				buf = b;
				cap = ref->length;
			}
			if (read_at(t->f, ref->offset - sizeof(sh), &sh, sizeof(sh)) ||
			    read_at(t->f, ref->offset, buf, ref->length)) {
				set_err(err, errlen, "cannot read the chunk at offset %llu", (unsigned long long)ref->offset);
				ret = -1;
			} else if ((uint32_t)crc32(0, buf, (uInt)ref->length) != sh.crc32) {
				set_err(err, errlen, "chunk at offset %llu fails its CRC check: the file is corrupted",
					(unsigned long long)ref->offset);
				ret = -1;
			}
		}
	}
	free(buf);
	return ret;
}

const char *trace_site_name(const struct trace *t, uint32_t site)
{
	if (site < t->site_cap && t->sites[site].name)
		return t->sites[site].name;
	return "?";
}

uint64_t trace_ns(const struct trace *t, uint64_t raw)
{
	if (raw <= t->first_raw)
		return 0;
	return (uint64_t)((double)(raw - t->first_raw) * t->ns_per_raw + 0.5);
}

/* ---- iteration ---- */

struct trace_cursor {
	struct trace_thread *th;
	size_t next_chunk;
	struct trace_event *ev;   /* decoded events of the current chunk */
	size_t ev_cnt, ev_pos, ev_cap;
	struct thread_stack stack;
	uint64_t last_ns;
	int finished;             /* open frames flushed */
	uint8_t *buf;
	size_t buf_cap;
};

static int emit(struct trace_cursor *c, const struct trace_event *e)
{
	if (c->ev_cnt == c->ev_cap) {
		size_t cap = c->ev_cap ? c->ev_cap * 2 : 4096;
		struct trace_event *v = realloc(c->ev, cap * sizeof(*v));
		if (!v)
			return -1;
		c->ev = v;
		c->ev_cap = cap;
	}
	c->ev[c->ev_cnt++] = *e;
	return 0;
}

/* Close the innermost frame (an exit event, real or synthetic). */
static int close_top(struct trace_cursor *c, uint64_t ns, uint8_t flags)
{
	struct frame *f = &c->stack.v[--c->stack.depth];
	struct trace_event e = {
		.ns = ns < f->ns ? f->ns : ns,
		.entry_ns = f->ns,
		.child_ns = f->child_ns,
		.tid = c->th->tid,
		.site = f->site,
		.depth = (uint32_t)c->stack.depth,
		.kind = TEV_EXIT,
		.flags = flags,
	};
	if (c->stack.depth)
		c->stack.v[c->stack.depth - 1].child_ns += e.ns - e.entry_ns;
	return emit(c, &e);
}

static int decode_chunk(struct trace_iter *it, struct trace_cursor *c)
{
	struct trace_chunk_ref *ref = &c->th->chunks[c->next_chunk++];
	struct trace *t = it->t;
	struct sec_chunk hdr;
	struct trace_section_header sh;

	c->ev_cnt = c->ev_pos = 0;
	if (ref->length > c->buf_cap) {
		uint8_t *b = realloc(c->buf, ref->length);
		if (!b)
			return -1;
		c->buf = b;
		c->buf_cap = ref->length;
	}
	if (read_at(t->f, ref->offset - sizeof(sh), &sh, sizeof(sh)) || read_at(t->f, ref->offset, c->buf, ref->length)) {
		set_err(it->err, sizeof(it->err), "cannot read the chunk at offset %llu", (unsigned long long)ref->offset);
		return -1;
	}
	if ((uint32_t)crc32(0, c->buf, (uInt)ref->length) != sh.crc32) {
		set_err(it->err, sizeof(it->err), "chunk at offset %llu fails its CRC check: the file is corrupted",
			(unsigned long long)ref->offset);
		return -1;
	}
	memcpy(&hdr, c->buf, sizeof(hdr));
	if (hdr.lost_before) {
		struct trace_event e = { .ns = trace_ns(t, hdr.base), .tid = c->th->tid, .kind = TEV_LOST,
					 .lost = hdr.lost_before, .depth = (uint32_t)c->stack.depth };
		if (emit(c, &e))
			return -1;
	}
	const uint8_t *p = c->buf + sizeof(hdr), *end = c->buf + ref->length;
	uint64_t raw = hdr.base;
	for (uint32_t i = 0; i < hdr.event_count; i++) {
		uint64_t tag, delta;
		if (varint_get(&p, end, &tag) || varint_get(&p, end, &delta)) {
			set_err(it->err, sizeof(it->err), "chunk at offset %llu: event %u is cut short",
				(unsigned long long)ref->offset, i);
			return -1;
		}
		raw += delta;
		uint64_t ns = trace_ns(t, raw);
		uint32_t site = (uint32_t)(tag >> 2);
		c->last_ns = ns;
		if ((tag & 3) == TAG_ENTRY && site >= TAG_SWITCH_BASE) {
			uint32_t which = site - TAG_SWITCH_BASE;
			if (which & EV_SWITCH_TO) {
				if (thread_stack_switch_to(&c->stack, which & EV_CONTEXT_MASK))
					return -1;
				struct trace_event e = { .ns = ns, .tid = c->th->tid, .site = which & EV_CONTEXT_MASK,
							 .kind = TEV_SWITCH, .depth = (uint32_t)c->stack.depth };
				if (emit(c, &e))
					return -1;
			} else {
				thread_stack_switch_from(&c->stack, which);
			}
			continue;
		}
		switch (tag & 3) {
		case TAG_ENTRY: {
			int flat = (site & EV_ENTRY_FLAT) != 0;
			struct trace_event e = { .ns = ns, .tid = c->th->tid, .site = site & ~EV_ENTRY_FLAT,
						 .kind = TEV_ENTRY, .flags = flat ? TEV_FLAT : 0,
						 .depth = (uint32_t)c->stack.depth };
			if (emit(c, &e))
				return -1;
			if (!flat && thread_stack_push(&c->stack, site, ns))
				return -1;
			break;
		}
		case TAG_EXIT_TOP:
		case TAG_UNWIND_TOP:
			if (!c->stack.depth) {
				set_err(it->err, sizeof(it->err), "chunk at offset %llu: an exit with no open frame",
					(unsigned long long)ref->offset);
				return -1;
			}
			if (close_top(c, ns, (tag & 3) == TAG_UNWIND_TOP ? TEV_UNWOUND : 0))
				return -1;
			break;
		case TAG_EXIT_SITE: {
			long at = thread_stack_find(&c->stack, site);
			if (at < 0) {
				struct trace_event e = { .ns = ns, .entry_ns = ns, .tid = c->th->tid, .site = site,
							 .kind = TEV_EXIT, .flags = TEV_ORPHAN,
							 .depth = (uint32_t)c->stack.depth };
				if (emit(c, &e))
					return -1;
				break;
			}
			while (c->stack.depth > (size_t)at + 1)
				if (close_top(c, ns, TEV_UNMATCHED))
					return -1;
			if (close_top(c, ns, 0))
				return -1;
			break;
		}
		}
	}
	if (p != end) {
		set_err(it->err, sizeof(it->err), "chunk at offset %llu has %zu stray bytes after its events",
			(unsigned long long)ref->offset, (size_t)(end - p));
		return -1;
	}
	return 0;
}

/* Make sure the cursor has an event ready: 1, 0 (exhausted), -1. */
static int cursor_fill(struct trace_iter *it, struct trace_cursor *c)
{
	while (c->ev_pos >= c->ev_cnt) {
		if (c->next_chunk < c->th->chunk_cnt) {
			if (decode_chunk(it, c))
				return -1;
			continue;
		}
		if (c->finished)
			return 0;
		/* The trace ended with frames still open: close them as open. */
		c->ev_cnt = c->ev_pos = 0;
		while (c->stack.depth)
			if (close_top(c, c->last_ns, TEV_OPEN))
				return -1;
		c->finished = 1;
	}
	return 1;
}

static int heap_less(struct trace_iter *it, size_t a, size_t b)
{
	const struct trace_cursor *x = &it->cursors[a], *y = &it->cursors[b];
	uint64_t tx = x->ev[x->ev_pos].ns, ty = y->ev[y->ev_pos].ns;
	return tx != ty ? tx < ty : x->th->tid < y->th->tid;
}

static void heap_down(struct trace_iter *it, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
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

int trace_iter_init(struct trace_iter *it, struct trace *t, uint32_t tid)
{
	memset(it, 0, sizeof(*it));
	it->t = t;
	it->cursors = calloc(t->thread_cnt ? t->thread_cnt : 1, sizeof(*it->cursors));
	it->heap = calloc(t->thread_cnt ? t->thread_cnt : 1, sizeof(*it->heap));
	if (!it->cursors || !it->heap) {
		set_err(it->err, sizeof(it->err), "out of memory");
		return -1;
	}
	for (size_t i = 0; i < t->thread_cnt; i++) {
		if (tid && t->threads[i].tid != tid)
			continue;
		struct trace_cursor *c = &it->cursors[it->cursor_cnt++];
		c->th = &t->threads[i];
		c->stack.tid = c->th->tid;
		int r = cursor_fill(it, c);
		if (r < 0)
			return -1;
		if (r > 0)
			it->heap[it->heap_cnt++] = it->cursor_cnt - 1;
	}
	for (size_t i = it->heap_cnt / 2; i-- > 0;)
		heap_down(it, i);
	return 0;
}

int trace_iter_next(struct trace_iter *it, struct trace_event *ev)
{
	if (!it->heap_cnt)
		return 0;
	struct trace_cursor *c = &it->cursors[it->heap[0]];
	*ev = c->ev[c->ev_pos++];
	it->last = c;
	int r = cursor_fill(it, c);
	if (r < 0)
		return -1;
	if (r == 0)
		it->heap[0] = it->heap[--it->heap_cnt];
	heap_down(it, 0);
	return 1;
}

int trace_iter_peek_same_thread(struct trace_iter *it, struct trace_event *ev)
{
	struct trace_cursor *c = it->last;
	if (!c)
		return 0;
	int r = cursor_fill(it, c);
	if (r <= 0)
		return r;
	*ev = c->ev[c->ev_pos];
	return 1;
}

void trace_iter_free(struct trace_iter *it)
{
	for (size_t i = 0; i < it->cursor_cnt; i++) {
		free(it->cursors[i].ev);
		thread_stack_free(&it->cursors[i].stack);
		free(it->cursors[i].buf);
	}
	free(it->cursors);
	free(it->heap);
	memset(it, 0, sizeof(*it));
}
