/* trace_reader.c - opening a trace file: see trace_reader.h.
 *
 * Opening walks the section headers once: metadata sections are read and
 * checked (CRC), chunk sections are only indexed (their CRC is checked
 * when they are decoded, or by trace_verify).  An unknown section type, a
 * length beyond any section's limit or a bad CRC are errors, reported with
 * the offset where they were found.  A file that simply stops (the
 * recording was killed before it wrote the END section) is not an error:
 * what is complete is read, and the file is marked incomplete.
 * Iterating over what was opened is trace_iter.c's. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/section_crc.h"
#include "reader/trace_reader.h"
#include "reader/reader_internal.h"
#include "common/cxx_name.h"
#include "common/tsc.h"
#include "format/varint.h"

void reader_error(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

int reader_read_at(FILE *f, uint64_t off, void *buf, size_t len)
{
	if (fseeko(f, (off_t)off, SEEK_SET))
		return -1;
	return fread(buf, 1, len, f) == len ? 0 : -1;
}

size_t reader_chunk_header_size(const struct trace *t)
{
	return t->version >= 2 ? sizeof(struct sec_chunk) : sizeof(struct sec_chunk_v1);
}

/* The chunk header at the start of payload p (len >= chunk_header_size),
 * as a version 2 header: a version 1 one has no open depth, serial or
 * name. */
void reader_chunk_header(const struct trace *t, const uint8_t *p, struct sec_chunk *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c, p, reader_chunk_header_size(t));
}

static int add_name(struct trace *t, char *s)
{
	char **v = realloc(t->owned, (t->owned_cnt + 1) * sizeof(*v));
	if (!v)
		return -1;
	t->owned = v;
	v[t->owned_cnt++] = s;
	return 0;
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
	/* An offset into the arena until it stops moving (trace_open). */
	t->sites[id] = (struct trace_site){ .id = id, .module = module, .func_ip = ip, .name = (const char *)(uintptr_t)(t->names_len + 1) };
	t->names_len += nlen + 1;
	return 0;
}

const char *trace_info_value(const struct trace *t, const char *key, const char *after, size_t *len)
{
	size_t kl = strlen(key);
	const char *p = t->info;
	if (after) {
		const char *nl = strchr(after, '\n');
		p = nl ? nl + 1 : NULL;
	}
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n > kl && !strncmp(p, key, kl) && p[kl] == '\t') {
			*len = n - kl - 1;
			return p + kl + 1;
		}
		p = nl ? nl + 1 : p + n;
	}
	return NULL;
}

int trace_set_sched(struct trace *t, unsigned mode)
{
	static const char sched[] = "linux:schedule";
	if ((mode & TRACE_SCHED_CALLS) && !t->sched_site) {
		/* A site after the program's: a name outside the arena, so
		 * that it can be added once the arena's names are fixed. */
		uint32_t id = 0;
		for (size_t i = 0; i < t->site_cap; i++)
			if (t->sites[i].name)
				id = (uint32_t)i + 1;
		if (id >= t->site_cap) {
			size_t cap = t->site_cap ? t->site_cap * 2 : 1024;
			struct trace_site *v = realloc(t->sites, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			memset(v + t->site_cap, 0, (cap - t->site_cap) * sizeof(*v));
			t->sites = v;
			t->site_cap = cap;
		}
		t->sites[id] = (struct trace_site){ .id = id, .name = sched, .sym = sched, .flags = TRACE_SITE_EVENT };
		t->sched_site = id;
	}
	t->sched = mode;
	return 0;
}

/* -E linux:schedule at record time: its views read the intervals off the
 * CPU as calls. */
static int apply_events(struct trace *t)
{
	static const char sched[] = "linux:schedule";
	size_t n;
	for (const char *v = trace_info_value(t, "event", NULL, &n); v; v = trace_info_value(t, "event", v, &n))
		if (n == sizeof(sched) - 1 && !memcmp(v, sched, n) && t->kernel_recorded)
			return trace_set_sched(t, TRACE_SCHED_CALLS);
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

static size_t thread_slot(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int thread_slots_grow(struct trace *t)
{
	size_t cap = t->thread_slot_cap ? t->thread_slot_cap * 2 : 64;
	uint32_t *s = calloc(cap, sizeof(*s));

	if (!s)
		return -1;
	for (size_t i = 0; i < t->thread_cnt; i++) {
		size_t j = thread_slot(thread_key(t->threads[i].tid, t->threads[i].serial), cap);
		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(t->thread_slots);
	t->thread_slots = s;
	t->thread_slot_cap = cap;
	return 0;
}

/* The thread (tid, serial) if a chunk named it, else NULL. */
static struct trace_thread *thread_find(struct trace *t, uint32_t tid, uint32_t serial)
{
	if (!t->thread_slot_cap)
		return NULL;
	size_t j = thread_slot(thread_key(tid, serial), t->thread_slot_cap);
	for (uint32_t id; (id = t->thread_slots[j]); j = (j + 1) & (t->thread_slot_cap - 1))
		if (t->threads[id - 1].tid == tid && t->threads[id - 1].serial == serial)
			return &t->threads[id - 1];
	return NULL;
}

/* The thread (tid, serial), created on first sight: one hash lookup, so
 * that indexing is linear in chunks however many threads there are. */
static struct trace_thread *thread_get(struct trace *t, uint32_t tid, uint32_t serial)
{
	if ((t->thread_cnt + 1) * 2 > t->thread_slot_cap && thread_slots_grow(t))
		return NULL;
	size_t j = thread_slot(thread_key(tid, serial), t->thread_slot_cap);
	for (uint32_t id; (id = t->thread_slots[j]); j = (j + 1) & (t->thread_slot_cap - 1))
		if (t->threads[id - 1].tid == tid && t->threads[id - 1].serial == serial)
			return &t->threads[id - 1];
	if (t->thread_cnt == t->thread_cap) {
		size_t cap = t->thread_cap ? t->thread_cap * 2 : 16;
		struct trace_thread *v = realloc(t->threads, cap * sizeof(*v));
		if (!v)
			return NULL;
		t->threads = v;
		t->thread_cap = cap;
	}
	struct trace_thread *th = &t->threads[t->thread_cnt++];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->serial = serial;
	t->thread_slots[j] = (uint32_t)t->thread_cnt;
	return th;
}

static int chunk_cmp(const void *a, const void *b)
{
	const struct trace_chunk_ref *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* THREAD sections name a tid; they are applied once every thread is known,
 * to the threads of that tid whose chunks carry no name. */
struct thread_name {
	uint32_t tid;
	char name[64];
};

/* KERNEL sections are indexed by tid and given to threads once every
 * thread is known. */
struct kernel_pending {
	uint32_t tid;
	struct trace_kernel_ref ref;
};

struct open_state {
	struct thread_name *names;
	size_t name_cnt;
	struct trace_thread *last_chunk_thread; /* of the last section, if a chunk */
	struct kernel_pending *kernel;
	size_t kernel_cnt, kernel_cap;
	/* The last section was a KERNEL section whose CRC fails: the end of
	 * a file whose recording did not finish, unless a section follows. */
	uint64_t bad_kernel_off, bad_kernel_len;
	uint64_t kernel_first;    /* raw time of the earliest kernel event */
	/* KEV_COMM events, with their tid, given to threads as the KERNEL
	 * sections are (apply_kernel). */
	struct pending_rename {
		uint32_t tid;
		struct trace_rename r;
	} *renames;
	size_t rename_cnt, rename_cap;
};

/* A KERNEL section: checked whole (its CRC, its version, its length),
 * indexed, not kept. */
static int index_kernel(struct trace *t, struct open_state *os, const struct trace_section_header *sh, uint64_t off,
			char *err, size_t errlen)
{
	struct sec_kernel k;
	uint8_t *p;

	if (sh->length < sizeof(k) || reader_read_at(t->f, off, &k, sizeof(k))) {
		reader_error(err, errlen, "KERNEL section at offset %llu is too short", (unsigned long long)off);
		return -1;
	}
	if (k.version != SEC_KERNEL_VERSION) {
		reader_error(err, errlen, "KERNEL section at offset %llu is of version %u: from a newer needle",
			     (unsigned long long)off, k.version);
		return -1;
	}
	if (sh->length != sizeof(k) + (uint64_t)k.count * sizeof(struct kernel_event)) {
		reader_error(err, errlen, "KERNEL section at offset %llu is malformed", (unsigned long long)off);
		return -1;
	}
	if (!(p = malloc(sh->length)) || reader_read_at(t->f, off, p, sh->length)) {
		free(p);
		reader_error(err, errlen, "cannot read the KERNEL section at offset %llu", (unsigned long long)off);
		return -1;
	}
	int crc_ok = section_crc32(p, sh->length) == sh->crc32;
	if (!crc_ok) {
		free(p);
		os->bad_kernel_off = off;
		os->bad_kernel_len = sh->length;
		return 0;
	}
	/* The counts by kind, and the earliest time: the program's start
	 * (its exec, the dynamic loader) comes before its first call. */
	for (uint32_t e = 0; e < k.count; e++) {
		struct kernel_event ev;
		memcpy(&ev, p + sizeof(k) + (size_t)e * sizeof(ev), sizeof(ev));
		if (ev.kind && ev.kind < KEV_KINDS)
			t->kernel_events[ev.kind]++;
		if (ev.kind == KEV_COMM && k.tid) {
			if (os->rename_cnt == os->rename_cap) {
				size_t cap = os->rename_cap ? 2 * os->rename_cap : 16;
				struct pending_rename *v = realloc(os->renames, cap * sizeof(*v));
				if (!v) {
					free(p);
					reader_error(err, errlen, "out of memory");
					return -1;
				}
				os->renames = v;
				os->rename_cap = cap;
			}
			struct pending_rename *pr = &os->renames[os->rename_cnt++];
			pr->tid = k.tid;
			pr->r.raw = ev.time;
			pr->r.exec = ev.flags & KEV_COMM_EXEC;
			memcpy(pr->r.name, &ev.a, 8);
			memcpy(pr->r.name + 8, &ev.b, 8);
			pr->r.name[15] = 0;
		}
		if (!os->kernel_first || ev.time < os->kernel_first)
			os->kernel_first = ev.time;
	}
	free(p);
	t->kernel_events[0] += k.count;
	t->kernel_recorded = 1;
	t->kernel_lost += k.lost;
	if (!k.tid) /* the marker: no thread's */
		return 0;
	if (os->kernel_cnt == os->kernel_cap) {
		size_t cap = os->kernel_cap ? 2 * os->kernel_cap : 16;
		struct kernel_pending *v = realloc(os->kernel, cap * sizeof(*v));
		if (!v) {
			reader_error(err, errlen, "out of memory");
			return -1;
		}
		os->kernel = v;
		os->kernel_cap = cap;
	}
	os->kernel[os->kernel_cnt++] = (struct kernel_pending){ k.tid, { off, sh->length, k.seq, 0, k.count } };
	return 0;
}

static int kernel_ref_cmp(const void *a, const void *b)
{
	const struct trace_kernel_ref *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* The threads of a tid, by when their first chunk begins: a tid is the
 * shell's, then the program it exec'ed (a thread of its own in the
 * trace), or recycled. */
struct tid_start {
	uint32_t tid;
	uint32_t index;
	uint64_t start;
};

static int tid_start_cmp(const void *a, const void *b)
{
	const struct tid_start *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int kernel_add(struct trace_thread *th, struct trace_kernel_ref ref)
{
	if (th->kernel_cnt == th->kernel_cap) {
		size_t cap = th->kernel_cap ? 2 * th->kernel_cap : 8;
		struct trace_kernel_ref *v = realloc(th->kernel, cap * sizeof(*v));
		if (!v)
			return -1;
		th->kernel = v;
		th->kernel_cap = cap;
	}
	th->kernel[th->kernel_cnt++] = ref;
	th->kernel_events += ref.count;
	return 0;
}

static int rename_cmp(const void *a, const void *b)
{
	const struct trace_rename *x = a, *y = b;
	return x->raw < y->raw ? -1 : x->raw > y->raw;
}

/* The renames to their threads, as the kernel events are (the tid's
 * thread running then); ts: the threads' starts, by tid. */
static int apply_renames(struct trace *t, struct open_state *os, const struct tid_start *ts, size_t nts)
{
	for (size_t i = 0; i < os->rename_cnt; i++) {
		const struct pending_rename *pr = &os->renames[i];
		size_t lo = 0, hi = nts;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (ts[mid].tid < pr->tid)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == nts || ts[lo].tid != pr->tid)
			continue; /* a tid with no chunk: named by no line */
		size_t w = lo;
		while (w + 1 < nts && ts[w + 1].tid == pr->tid && ts[w + 1].start <= pr->r.raw)
			w++;
		struct trace_thread *th = &t->threads[ts[w].index];
		struct trace_rename *v = realloc(th->renames, (th->rename_cnt + 1) * sizeof(*v));
		if (!v)
			return -1;
		th->renames = v;
		th->renames[th->rename_cnt++] = pr->r;
	}
	for (size_t i = 0; i < t->thread_cnt; i++)
		if (t->threads[i].rename_cnt > 1)
			qsort(t->threads[i].renames, t->threads[i].rename_cnt, sizeof(struct trace_rename), rename_cmp);
	return 0;
}

/* Each KERNEL section's events to the thread of their tid that was
 * running then: the one whose first chunk began last before the event
 * (the first one for events before any); a thread of its own when the
 * tid has no chunk.  A section of a tid with several threads is read
 * again for its events' times and split where the next thread begins. */
static int apply_kernel(struct trace *t, struct open_state *os)
{
	struct tid_start *ts = malloc((t->thread_cnt ? t->thread_cnt : 1) * sizeof(*ts));
	size_t nts = t->thread_cnt;
	if (!ts)
		return -1;
	for (size_t i = 0; i < nts; i++) {
		const struct trace_thread *th = &t->threads[i];
		uint64_t start = UINT64_MAX;
		for (size_t c = 0; c < th->chunk_cnt; c++)
			if (th->chunks[c].base < start)
				start = th->chunks[c].base;
		ts[i] = (struct tid_start){ th->tid, (uint32_t)i, start };
	}
	qsort(ts, nts, sizeof(*ts), tid_start_cmp);
	int err = 0;
	for (size_t i = 0; i < os->kernel_cnt && !err; i++) {
		const struct kernel_pending *k = &os->kernel[i];
		struct tid_start key = { k->tid, 0, 0 };
		size_t lo = 0, hi = nts;
		while (lo < hi) { /* the tid's first */
			size_t mid = lo + (hi - lo) / 2;
			if (ts[mid].tid < key.tid)
				lo = mid + 1;
			else
				hi = mid;
		}
		size_t n = 0;
		while (lo + n < nts && ts[lo + n].tid == k->tid)
			n++;
		if (n <= 1) {
			struct trace_thread *th = n ? &t->threads[ts[lo].index] : trace_thread_find(t, k->tid);
			if (!th && !(th = thread_get(t, k->tid, 0)))
				err = -1;
			else
				err = kernel_add(th, k->ref);
			continue;
		}
		struct kernel_event *ev = malloc(k->ref.count * sizeof(*ev) + 1);
		if (!ev || reader_read_at(t->f, k->ref.offset + sizeof(struct sec_kernel), ev,
					  k->ref.count * sizeof(*ev))) {
			free(ev);
			err = -1;
			break;
		}
		for (uint32_t e = 0; e < k->ref.count && !err;) {
			size_t w = 0; /* the thread running at ev[e] */
			while (w + 1 < n && ts[lo + w + 1].start <= ev[e].time)
				w++;
			uint64_t until = w + 1 < n ? ts[lo + w + 1].start : UINT64_MAX;
			uint32_t f = e;
			while (e < k->ref.count && ev[e].time < until)
				e++;
			struct trace_kernel_ref part = k->ref;
			part.first = f;
			part.count = e - f;
			err = kernel_add(&t->threads[ts[lo + w].index], part);
		}
		free(ev);
	}
	if (!err)
		err = apply_renames(t, os, ts, nts);
	free(ts);
	if (err)
		return -1;
	if (os->kernel_first && (!t->first_raw || os->kernel_first < t->first_raw))
		t->first_raw = os->kernel_first;
	for (size_t i = 0; i < t->thread_cnt; i++)
		if (t->threads[i].kernel_cnt)
			qsort(t->threads[i].kernel, t->threads[i].kernel_cnt, sizeof(struct trace_kernel_ref),
			      kernel_ref_cmp);
	return 0;
}

static int load_section(struct trace *t, struct open_state *os, const struct trace_section_header *sh, uint64_t off,
			char *err, size_t errlen)
{
	uint8_t *p;

	os->last_chunk_thread = NULL;
	if (os->bad_kernel_len) {
		reader_error(err, errlen, "section at offset %llu (type %u) fails its CRC check: the file is corrupted",
			     (unsigned long long)os->bad_kernel_off, SEC_KERNEL);
		return -1;
	}
	if (sh->type == SEC_KERNEL)
		return index_kernel(t, os, sh, off, err, errlen);
	if (sh->type == SEC_CHUNK) {
		uint8_t raw[sizeof(struct sec_chunk)];
		struct sec_chunk c;
		size_t hsize = reader_chunk_header_size(t);
		if (sh->length < hsize || reader_read_at(t->f, off, raw, hsize)) {
			reader_error(err, errlen, "chunk section at offset %llu is too short", (unsigned long long)off);
			return -1;
		}
		reader_chunk_header(t, raw, &c);
		struct trace_thread *th = thread_get(t, c.tid, c.serial);
		if (!th) {
			reader_error(err, errlen, "out of memory");
			return -1;
		}
		if (th->chunk_cnt == th->chunk_cap) {
			size_t cap = th->chunk_cap ? th->chunk_cap * 2 : 16;
			struct trace_chunk_ref *v = realloc(th->chunks, cap * sizeof(*v));
			if (!v) {
				reader_error(err, errlen, "out of memory");
				return -1;
			}
			th->chunks = v;
			th->chunk_cap = cap;
		}
		th->chunks[th->chunk_cnt++] = (struct trace_chunk_ref){ off, sh->length, c.seq, c.lost_before,
									c.event_count, c.base };
		th->events += c.event_count;
		th->lost += c.lost_before;
		t->lost_in_chunks += c.lost_before;
		/* The thread's name as of its latest chunk: a name set after
		 * the thread began (pthread_setname_np) wins. */
		if (c.comm[0] && c.seq + 1 > th->name_seq) {
			snprintf(th->name, sizeof(th->name), "%.*s", (int)sizeof(c.comm), c.comm);
			th->name_seq = c.seq + 1;
		}
		if (!t->have_end) {
			t->end.events += c.event_count;
			t->end.lost_events += c.lost_before;
			t->end.chunks++;
			t->end.salvaged_chunks += (c.salvaged & CHUNK_SALVAGED) != 0;
		}
		if (!t->first_raw || c.base < t->first_raw)
			t->first_raw = c.base;
		os->last_chunk_thread = th;
		return 0;
	}
	if (!(p = malloc(sh->length + 1))) {
		reader_error(err, errlen, "out of memory");
		return -1;
	}
	if (reader_read_at(t->f, off, p, sh->length)) {
		reader_error(err, errlen, "section at offset %llu is cut short", (unsigned long long)off);
		free(p);
		return -1;
	}
	p[sh->length] = 0;
	if (section_crc32(p, sh->length) != sh->crc32) {
		reader_error(err, errlen, "section at offset %llu (type %u) fails its CRC check: the file is corrupted",
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
		bad = sh->length < sizeof(t->process) || t->have_process;
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
				if (!t->argv[i])
					break;
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
		if ((m[t->module_cnt] = strndup((const char *)p + 4, sh->length - 4)))
			t->module_cnt++;
		break;
	}
	case SEC_MODULE_BIAS:
		/* Of modules already read (the writer puts it after their
		 * MODULE sections). */
		bad = sh->length % MODULE_BIAS_RECORD != 0;
		for (uint64_t k = 0; !bad && k < sh->length; k += MODULE_BIAS_RECORD) {
			uint32_t idx;
			uint64_t bias;
			memcpy(&idx, p + k, 4);
			memcpy(&bias, p + k + 4, 8);
			if (idx >= t->module_cnt)
				continue;
			if (idx >= t->module_ids_cnt) {
				struct trace_module_id *v = realloc(t->module_ids, t->module_cnt * sizeof(*v));
				if (!v)
					break;
				for (size_t i = t->module_ids_cnt; i < t->module_cnt; i++)
					v[i] = (struct trace_module_id){ .bias = TRACE_BIAS_UNKNOWN };
				t->module_ids = v;
				t->module_ids_cnt = t->module_cnt;
			}
			struct trace_module_id *m = &t->module_ids[idx];
			m->bias = bias;
			m->id_len = p[k + 12] <= sizeof(m->id) ? p[k + 12] : sizeof(m->id);
			memcpy(m->id, p + k + 16, sizeof(m->id));
		}
		break;
	case SEC_SITES:
		bad = parse_sites(t, p, sh->length);
		break;
	case SEC_SITE_SIZES:
		/* Of sites already read (the writer puts it after their
		 * SITES): an id not known is left out. */
		bad = sh->length % 8 != 0;
		for (uint64_t k = 0; !bad && k < sh->length; k += 8) {
			uint32_t id, size;
			memcpy(&id, p + k, 4);
			memcpy(&size, p + k + 4, 4);
			if (id < t->site_cap && t->sites[id].name)
				t->sites[id].func_size = size;
		}
		break;
	case SEC_THREAD: {
		bad = sh->length < 4;
		if (bad)
			break;
		struct thread_name *v = realloc(os->names, (os->name_cnt + 1) * sizeof(*v));
		if (!v)
			break;
		os->names = v;
		memcpy(&v[os->name_cnt].tid, p, 4);
		snprintf(v[os->name_cnt].name, sizeof(v[0].name), "%.*s", (int)(sh->length - 4), (const char *)p + 4);
		os->name_cnt++;
		break;
	}
	case SEC_TASKS:
		/* Written after the chunks: a record for a thread no chunk
		 * named is ignored. */
		bad = sh->length % sizeof(struct task_record) != 0;
		for (uint64_t k = 0; !bad && k < sh->length; k += sizeof(struct task_record)) {
			struct task_record rec;
			memcpy(&rec, p + k, sizeof(rec));
			struct trace_thread *th = thread_find(t, rec.tid, rec.serial);
			if (th) {
				th->pid = rec.pid;
				th->ppid = rec.ppid;
			}
		}
		break;
	case SEC_ARGS:
		/* Malformed: dropped whole; values then show by register. */
		arg_names_parse(&t->arg_names, (const char *)p, sh->length);
		break;
	case SEC_VIEW_OPTS:
		/* Words, the last one terminated (else malformed). */
		bad = !sh->length || p[sh->length - 1];
		if (!bad && !t->view_opts && (t->view_opts = malloc(sh->length))) {
			memcpy(t->view_opts, p, sh->length);
			t->view_opts_len = sh->length;
		}
		break;
	case SEC_OBJECTS:
		free(t->objects);
		t->objects = strndup((const char *)p, sh->length);
		break;
	case SEC_PROBES: {
		/* "INDEX\tPROVIDER:NAME\tOBJECT\tOFFSET" lines, indexes from 0
		 * in order. */
		const char *q = (const char *)p, *end = q + sh->length;
		while (!bad && q < end) {
			const char *nl = memchr(q, '\n', (size_t)(end - q));
			const char *tab = memchr(q, '\t', (size_t)((nl ? nl : end) - q));
			const char *tab2 = tab ? memchr(tab + 1, '\t', (size_t)((nl ? nl : end) - tab - 1)) : NULL;
			if (!nl || !tab2 || strtoull(q, NULL, 10) != t->probe_cnt) {
				bad = 1;
				break;
			}
			char **v = realloc(t->probe_names, (t->probe_cnt + 1) * sizeof(*v));
			if (!v || !(v[t->probe_cnt] = strndup(tab + 1, (size_t)(tab2 - tab - 1)))) {
				if (v)
					t->probe_names = v;
				bad = 1;
				break;
			}
			t->probe_names = v;
			t->probe_cnt++;
			q = nl + 1;
		}
		break;
	}
	case SEC_INFO:
		/* Written once, at the end. */
		free(t->info);
		bad = !(t->info = strndup((const char *)p, sh->length));
		break;
	case SEC_ATTACH:
		bad = sh->length != sizeof(t->attach) && sh->length != SEC_ATTACH_V1_SIZE;
		if (!bad) {
			memset(&t->attach, 0, sizeof(t->attach));
			memcpy(&t->attach, p, sh->length);
			if (sh->length == SEC_ATTACH_V1_SIZE)
				t->attach.borrowed_hold_ns = t->attach.max_hold_ns;
			t->have_attach = 1;
		}
		break;
	case SEC_SNAPSHOT:
		bad = sh->length != sizeof(t->snapshot);
		if (!bad) {
			memcpy(&t->snapshot, p, sizeof(t->snapshot));
			t->snapshot.trigger[sizeof(t->snapshot.trigger) - 1] = 0;
			t->have_snapshot = 1;
		}
		break;
	case SEC_END:
		bad = sh->length != sizeof(t->end) && sh->length != SEC_END_V1_SIZE && sh->length != SEC_END_V2_SIZE &&
		      sh->length != SEC_END_V3_SIZE;
		if (!bad) {
			memset(&t->end, 0, sizeof(t->end));
			memcpy(&t->end, p, sh->length);
			t->have_end = 1;
		}
		break;
	default:
		reader_error(err, errlen, "unknown section type %u at offset %llu: the file is corrupted or from a newer needle",
			sh->type, (unsigned long long)off);
		free(p);
		return -1;
	}
	free(p);
	if (bad) {
		reader_error(err, errlen, "section at offset %llu (type %u) is malformed", (unsigned long long)off, sh->type);
		return -1;
	}
	return 0;
}

/* From libstdc++: the Itanium C++ ABI demangler. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* Drop a shown name's template arguments, in place, as uftrace's simple
 * demangling does ("std::vector<int>::push_back" is "std::vector::
 * push_back"): every <...> but an operator's own < or >; an ABI tag
 * ("[abi:cxx11]", 5 bytes longer than its "::cxx11") becomes a scope. */
static void drop_template_args(char *d)
{
	/* An operator's symbols, longest first. */
	static const char *const ops[] = { "<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "==", "!=", "&&",
					   "||", "++", "--", "->", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
					   "^=", "()", "[]", "<", ">", "=", "-", "!", "+", "*", "/", "%", "^",
					   "&", "|", "~", "," };
	char *out = d;
	int depth = 0;

	for (const char *p = d; *p;) {
		if (!depth && !strncmp(p, "operator", 8) && (p == d || p[-1] == ':' || p[-1] == ' ')) {
			size_t n = 8;
			for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
				if (!strncmp(p + 8, ops[i], strlen(ops[i]))) {
					n += strlen(ops[i]);
					break;
				}
			memmove(out, p, n);
			out += n;
			p += n;
			continue;
		}
		/* An ABI tag, "f[abi:cxx11]", as uftrace shows it: f::cxx11. */
		if (!depth && !strncmp(p, "[abi:", 5) && strchr(p, ']')) {
			const char *q = strchr(p, ']');
			*out++ = ':';
			*out++ = ':';
			memmove(out, p + 5, (size_t)(q - p - 5));
			out += q - p - 5;
			p = q + 1;
			continue;
		}
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth)
			depth--;
		else if (!depth)
			*out++ = *p;
		p++;
	}
	*out = 0;
}

void reader_demangle_site(struct trace *t, size_t i, enum trace_demangle mode)
{
	const char *sym = t->sites[i].sym;
	int status;
	if (!sym || !cxx_name_is_mangled(sym))
		return;
	if (mode == TRACE_DEMANGLE_NO) {
		t->sites[i].name = sym;
		return;
	}
	char *d = __cxa_demangle(sym, NULL, NULL, &status);
	if (!d)
		return;
	if (add_name(t, d)) {
		free(d);
		return;
	}
	if (mode == TRACE_DEMANGLE_SIMPLE) {
		d[cxx_name_shown(d)] = 0;
		drop_template_args(d);
	}
	t->sites[i].name = d;
}

int reader_own_name(struct trace *t, char *s)
{
	return add_name(t, s);
}

void trace_set_demangle(struct trace *t, enum trace_demangle mode)
{
	for (size_t i = 0; i < t->site_cap; i++)
		reader_demangle_site(t, i, mode);
}

/* C++ names are shown demangled ("thrower", not "_Z7throweri"): "ns::Class::method(int) const"
 * as "ns::Class::method", "long ns::twice<long>(long)" as "ns::twice" (uftrace's simple form). */
static void demangle_sites(struct trace *t)
{
	for (size_t i = 0; i < t->site_cap; i++)
		t->sites[i].sym = t->sites[i].name;
	trace_set_demangle(t, TRACE_DEMANGLE_SIMPLE);
}

static int name_cmp(const void *a, const void *b)
{
	const struct thread_name *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Names from THREAD sections for the threads whose chunks named none
 * (version 1 files; chunks of a thread that had no name). */
static void apply_thread_names(struct trace *t, struct open_state *os)
{
	if (!os->name_cnt)
		return;
	qsort(os->names, os->name_cnt, sizeof(*os->names), name_cmp);
	for (size_t i = 0; i < t->thread_cnt; i++) {
		struct trace_thread *th = &t->threads[i];
		struct thread_name key = { .tid = th->tid };
		struct thread_name *n = bsearch(&key, os->names, os->name_cnt, sizeof(key), name_cmp);
		if (th->name_seq || !n)
			continue;
		/* Of several sections for one tid, the last one written. */
		while (n + 1 < os->names + os->name_cnt && n[1].tid == th->tid)
			n++;
		snprintf(th->name, sizeof(th->name), "%s", n->name);
	}
}

/* The recording did not finish: the chunk written last may have been
 * complete in length but not in content (the writer died in the middle
 * of it, or the blocks never reached the disk).  Check its CRC now and
 * leave it out if it fails, so that the views show every chunk up to the
 * last good one instead of stopping at the damage. */
static void drop_torn_chunk(struct trace *t, struct open_state *os)
{
	struct trace_thread *th = os->last_chunk_thread;
	if (!th)
		return;
	struct trace_chunk_ref *ref = &th->chunks[th->chunk_cnt - 1];
	struct trace_section_header sh;
	uint8_t *buf = malloc(ref->length ? ref->length : 1);
	int good = buf && !reader_read_at(t->f, ref->offset - sizeof(sh), &sh, sizeof(sh)) &&
		   !reader_read_at(t->f, ref->offset, buf, ref->length) &&
		   section_crc32(buf, ref->length) == sh.crc32;
	free(buf);
	if (good)
		return;
	t->tail_bytes += sizeof(sh) + ref->length;
	th->events -= ref->event_count;
	th->lost -= ref->lost_before;
	t->lost_in_chunks -= ref->lost_before;
	t->end.events -= ref->event_count;
	t->end.lost_events -= ref->lost_before;
	t->end.chunks--;
	th->chunk_cnt--;
}

/* An incomplete file may stop before its CLOCK section.  Its chunk bases
 * are then either this machine's TSC or CLOCK_MONOTONIC nanoseconds: a
 * value above the monotonic clock now can only be a TSC reading (it runs
 * faster than 1 GHz), and its rate is measured here over a millisecond.  The
 * views say that times are estimated. */
static void guess_clock(struct trace *t)
{
	uint64_t mono0 = monotonic_ns(), tsc0 = tsc_read();

	t->clock_guessed = 1;
	t->clock = (struct sec_clock){ .source = TRACE_CLOCK_MONOTONIC, .raw0 = 0, .ns0 = 0, .raw1 = 1, .ns1 = 1 };
	if (t->first_raw <= mono0)
		return;
	struct timespec d = { 0, 1000000 };
	nanosleep(&d, NULL);
	uint64_t mono1 = monotonic_ns(), tsc1 = tsc_read();
	if (tsc1 > tsc0 && mono1 > mono0)
		t->clock = (struct sec_clock){ .source = TRACE_CLOCK_TSC, .raw0 = tsc0, .ns0 = mono0, .raw1 = tsc1,
					       .ns1 = mono1 };
}

struct trace *trace_open(const char *path, char *err, size_t errlen)
{
	struct trace *t = calloc(1, sizeof(*t));
	struct open_state os = { 0 };
	struct stat st;
	uint64_t off, size;
	int ended = 0;

	if (!t) {
		reader_error(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(t->path, sizeof(t->path), "%s", path);
	if (!(t->f = fopen(path, "rb")) || fstat(fileno(t->f), &st)) {
		reader_error(err, errlen, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	t->size = size = (uint64_t)st.st_size;
	if (S_ISDIR(st.st_mode)) {
		/* uftrace's traces are directories (uftrace.data/) */
		reader_error(err, errlen, "%s is a directory, not a needle trace (a file: needle record -o FILE)", path);
		goto fail;
	}
	char magic[8] = { 0 };
	size_t have = size < sizeof(magic) ? (size_t)size : sizeof(magic);
	if (have && reader_read_at(t->f, 0, magic, have)) {
		reader_error(err, errlen, "cannot read %s: %s", path, strerror(errno ? errno : EIO));
		goto fail;
	}
	if (!size) {
		reader_error(err, errlen, "%s is empty (nothing was written to it)", path);
		goto fail;
	}
	if (size < sizeof(t->header) && !memcmp(magic, TRACE_MAGIC, have)) {
		reader_error(err, errlen, "%s is cut off: %llu bytes, less than a trace's %zu-byte header", path,
			     (unsigned long long)size, sizeof(t->header));
		goto fail;
	}
	if (size < sizeof(t->header) || reader_read_at(t->f, 0, &t->header, sizeof(t->header)) ||
	    memcmp(t->header.magic, TRACE_MAGIC, 8)) {
		reader_error(err, errlen, "%s is not a needle trace (bad magic)", path);
		goto fail;
	}
	if (t->header.version < TRACE_VERSION_MIN || t->header.version > TRACE_VERSION ||
	    t->header.header_size != sizeof(t->header)) {
		reader_error(err, errlen, "%s has format version %u; this needle reads versions %u to %u", path,
			t->header.version, TRACE_VERSION_MIN, TRACE_VERSION);
		goto fail;
	}
	t->version = (int)t->header.version;
	t->tracer = (int)(t->header.flags & 0xff);
	if (t->tracer != TRACER_FUNCTION_GRAPH && t->tracer != TRACER_FUNCTION) {
		reader_error(err, errlen, "%s: unknown tracer %d in the header", path, t->tracer);
		goto fail;
	}
	off = sizeof(t->header);
	while (off < size) {
		struct trace_section_header sh;
		if (ended) {
			reader_error(err, errlen, "data after the END section at offset %llu: the file is corrupted",
				(unsigned long long)off);
			goto fail;
		}
		/* A header or payload cut short by the end of the file: the
		 * recording stopped while writing it. */
		if (size - off < sizeof(sh) || reader_read_at(t->f, off, &sh, sizeof(sh)))
			break;
		if (sh.length > TRACE_MAX_SECTION) {
			reader_error(err, errlen, "corrupted: the section at offset %llu claims %llu bytes",
				(unsigned long long)off, (unsigned long long)sh.length);
			goto fail;
		}
		if (sh.length > size - off - sizeof(sh))
			break;
		if (load_section(t, &os, &sh, off + sizeof(sh), err, errlen))
			goto fail;
		ended = sh.type == SEC_END;
		off += sizeof(sh) + sh.length;
	}
	if (!ended) {
		t->incomplete = 1;
		t->tail_bytes = size - off;
		drop_torn_chunk(t, &os);
		/* A last KERNEL section that never reached the disk whole. */
		if (os.bad_kernel_len)
			t->tail_bytes += sizeof(struct trace_section_header) + os.bad_kernel_len;
	}
	if (t->have_clock) {
		if (t->clock.raw1 <= t->clock.raw0 || t->clock.ns1 < t->clock.ns0) {
			reader_error(err, errlen, "%s has no valid clock section", path);
			goto fail;
		}
	} else if (t->incomplete) {
		guess_clock(t);
	} else {
		reader_error(err, errlen, "%s has no clock section", path);
		goto fail;
	}
	t->ns_per_raw = (double)(t->clock.ns1 - t->clock.ns0) / (double)(t->clock.raw1 - t->clock.raw0);
	for (size_t i = 0; i < t->site_cap; i++)
		if (t->sites[i].name)
			t->sites[i].name = t->names + (uintptr_t)t->sites[i].name - 1;
	demangle_sites(t);
	if (apply_events(t)) {
		reader_error(err, errlen, "out of memory");
		goto fail;
	}
	apply_thread_names(t, &os);
	if (apply_kernel(t, &os)) {
		reader_error(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < t->thread_cnt; i++)
		if (t->threads[i].chunk_cnt) /* a THREAD section may name a tid with no chunk */
			qsort(t->threads[i].chunks, t->threads[i].chunk_cnt, sizeof(struct trace_chunk_ref),
			      chunk_cmp);
	free(os.names);
	free(os.kernel);
	free(os.renames);
	return t;
fail:
	free(os.names);
	free(os.kernel);
	free(os.renames);
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
	free(t->module_ids);
	trace_data_free(t);
	trace_src_lines_free(t);
	free(t->objects);
	free(t->info);
	for (size_t i = 0; i < t->probe_cnt; i++)
		free(t->probe_names[i]);
	free(t->probe_names);
	free(t->view_opts);
	arg_names_free(&t->arg_names);
	for (size_t i = 0; t->argv && t->argv[i]; i++)
		free(t->argv[i]);
	free(t->argv);
	for (size_t i = 0; i < t->thread_cnt; i++) {
		free(t->threads[i].chunks);
		free(t->threads[i].kernel);
		free(t->threads[i].renames);
	}
	free(t->threads);
	free(t->thread_slots);
	for (size_t i = 0; i < t->owned_cnt; i++)
		free(t->owned[i]);
	free(t->owned);
	for (size_t i = 0; i < t->placeholder_cap; i++)
		free(t->placeholders[i]);
	free(t->placeholders);
	free(t->sites);
	free(t->by_ip);
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
			t->work++;
			if (ref->length > cap) {
				uint8_t *b = realloc(buf, ref->length);
				if (!b) {
					reader_error(err, errlen, "out of memory");
					ret = -1;
					break;
				}
				buf = b;
				cap = ref->length;
			}
			if (reader_read_at(t->f, ref->offset - sizeof(sh), &sh, sizeof(sh)) ||
			    reader_read_at(t->f, ref->offset, buf, ref->length)) {
				reader_error(err, errlen, "cannot read the chunk at offset %llu", (unsigned long long)ref->offset);
				ret = -1;
			} else if (section_crc32(buf, ref->length) != sh.crc32) {
				reader_error(err, errlen, "chunk at offset %llu fails its CRC check: the file is corrupted",
					(unsigned long long)ref->offset);
				ret = -1;
			}
		}
	}
	free(buf);
	return ret;
}

/* Placeholders for sites the file has no name for, in a hash of their
 * own: ids come from the events, and a damaged file may name any id up to
 * 2^22, which must not size the sites array. */
struct placeholder {
	uint32_t site;
	char name[20];
};

static const char *placeholder(struct trace *t, uint32_t site)
{
	if ((t->placeholder_cnt + 1) * 2 > t->placeholder_cap) {
		size_t cap = t->placeholder_cap ? t->placeholder_cap * 2 : 64;
		struct placeholder **v = calloc(cap, sizeof(*v));
		if (!v)
			return "?";
		for (size_t i = 0; i < t->placeholder_cap; i++) {
			if (!t->placeholders[i])
				continue;
			size_t j = (t->placeholders[i]->site * 2654435761u) & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = t->placeholders[i];
		}
		free(t->placeholders);
		t->placeholders = v;
		t->placeholder_cap = cap;
	}
	size_t j = (site * 2654435761u) & (t->placeholder_cap - 1);
	while (t->placeholders[j] && t->placeholders[j]->site != site)
		j = (j + 1) & (t->placeholder_cap - 1);
	if (!t->placeholders[j]) {
		struct placeholder *p = malloc(sizeof(*p));
		if (!p)
			return "?";
		p->site = site;
		snprintf(p->name, sizeof(p->name), "site#%u", site);
		t->placeholders[j] = p;
		t->placeholder_cnt++;
	}
	return t->placeholders[j]->name;
}

const struct arg_names_func *trace_site_arg_names(struct trace *t, uint32_t site)
{
	if (!t->arg_names.func_cnt || site >= t->site_cap || !t->sites[site].sym)
		return NULL;
	return arg_names_find(&t->arg_names, t->sites[site].sym);
}

const char *trace_site_name(struct trace *t, uint32_t site)
{
	if (site < t->site_cap && t->sites[site].name)
		return t->sites[site].name;
	/* Not in the file's SITES sections (they are written when the
	 * recording ends, so an incomplete file may have none). */
	return placeholder(t, site);
}

static int by_ip_cmp(const void *a, const void *b, void *trace)
{
	const struct trace *t = trace;
	uint64_t x = t->sites[*(const uint32_t *)a].func_ip;
	uint64_t y = t->sites[*(const uint32_t *)b].func_ip;
	return x < y ? -1 : x > y;
}

const struct trace_site *trace_site_at(struct trace *t, uint64_t ip)
{
	if (!t->by_ip_built) {
		t->by_ip_built = 1;
		size_t n = 0;
		for (size_t i = 0; i < t->site_cap; i++)
			n += t->sites[i].name && t->sites[i].func_ip;
		if (n && (t->by_ip = malloc(n * sizeof(*t->by_ip)))) {
			for (size_t i = 0; i < t->site_cap; i++)
				if (t->sites[i].name && t->sites[i].func_ip)
					t->by_ip[t->by_ip_cnt++] = (uint32_t)i;
			qsort_r(t->by_ip, t->by_ip_cnt, sizeof(*t->by_ip), by_ip_cmp, t);
		}
	}
	size_t lo = 0, hi = t->by_ip_cnt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->sites[t->by_ip[mid]].func_ip < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->by_ip_cnt && t->sites[t->by_ip[lo]].func_ip == ip ? &t->sites[t->by_ip[lo]] : NULL;
}

uint64_t trace_monotonic_base(const struct trace *t)
{
	const struct sec_clock *c = &t->clock;
	if (!t->have_clock || c->raw1 <= c->raw0 || c->ns1 < c->ns0 || t->first_raw < c->raw0)
		return 1000000000ull;
	double off = (double)(t->first_raw - c->raw0) * (double)(c->ns1 - c->ns0) / (double)(c->raw1 - c->raw0);
	if (!(off < 9.0e18))
		return 1000000000ull;
	return c->ns0 + (uint64_t)off;
}

uint64_t trace_ns(const struct trace *t, uint64_t raw)
{
	if (raw <= t->first_raw)
		return 0;
	double ns = (double)(raw - t->first_raw) * t->ns_per_raw + 0.5;
	/* A damaged clock (valid CRC, absurd values) must not make the
	 * conversion undefined: saturate. */
	if (!(ns < 18446744073709549568.0))
		return ns != ns ? 0 : UINT64_MAX;
	return (uint64_t)ns;
}

static uint64_t thread_start_raw(const struct trace_thread *th)
{
	uint64_t start = UINT64_MAX;
	for (size_t c = 0; c < th->chunk_cnt; c++)
		if (th->chunks[c].base < start)
			start = th->chunks[c].base;
	return start;
}

static const char *name_at(const struct trace *t, const struct trace_thread *th, uint64_t ns, int hops)
{
	if (!th->rename_cnt)
		return th->name;
	size_t lo = 0, hi = th->rename_cnt; /* the renames at or before ns */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (trace_ns(t, th->renames[mid].raw) <= ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo)
		return th->renames[lo - 1].name;
	/* Before its first: the name it began with. */
	if (th->tid == t->process.pid && trace_thread_find((struct trace *)t, th->tid) == th && t->argv &&
	    t->argv[0]) {
		const char *slash = strrchr(t->argv[0], '/');
		return slash ? slash + 1 : t->argv[0];
	}
	uint32_t up_tid = th->tid != th->pid ? th->pid : th->ppid;
	const struct trace_thread *up = th->pid && up_tid ? trace_thread_find((struct trace *)t, up_tid) : NULL;
	if (up && up != th && hops < 8)
		return name_at(t, up, trace_ns(t, thread_start_raw(th)), hops + 1);
	return th->name;
}

const char *trace_thread_name_at(const struct trace *t, const struct trace_thread *th, uint64_t ns)
{
	return name_at(t, th, ns, 0);
}
