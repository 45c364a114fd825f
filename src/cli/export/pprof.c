/* pprof.c - `needle export --format=pprof`: a gzipped profile.proto
 * (Google's pprof format, read by `go tool pprof`, Pyroscope, Parca) of
 * the trace's call stacks.  Not sampled: every distinct call stack of a
 * thread is one sample, with three values for the calls that ended at its
 * innermost function:
 *
 *   calls      count        how many calls
 *   wall-time  nanoseconds  their time, children's included
 *   self-time  nanoseconds  their time, children's excluded (the default)
 *
 * so that pprof's flat column of self-time is report's self time and its
 * cum column report's total (pprof counts a stack once when a function is
 * in it twice, as report counts a recursion's outermost calls).  A
 * location per function (its address; the function's name, symbol,
 * source file and line from DWARF where there is debug information); a
 * mapping per object, with its build-id read from its file.  Samples
 * carry the thread as labels (thread: its name, tid: its number).
 *
 * Invariants: one pass over the events, O(1) per event (the reader gives
 * every call its node in a call tree of (parent, site), call_tree.h);
 * memory grows with the distinct stacks and functions, not the events;
 * the profile is built in memory (its size is the stacks') and written
 * gzipped through zlib. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli/export/export.h"
#include "cli/export/protobuf.h"
#include "cli/util/build_id.h"
#include "cli/view/view.h"
#include "cli/view/view_format.h"

/* profile.proto's field numbers. */
enum {
	P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4, P_FUNCTION = 5, P_STRING_TABLE = 6,
	P_TIME_NANOS = 9, P_DURATION_NANOS = 10, P_PERIOD_TYPE = 11, P_PERIOD = 12, P_COMMENT = 13,
	P_DEFAULT_SAMPLE_TYPE = 14,
};

struct strtab {
	char **v;
	size_t cnt, cap;
	uint32_t *slots; /* hash -> index + 1 */
	size_t slot_cap;
};

struct pprof {
	struct trace *t;
	struct call_tree tree;
	uint64_t *calls, *wall, *self; /* by node */
	size_t cap;
	struct strtab st;
	int oom;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The string's index in the table, added at first use (0 is ""). */
static int64_t str_index(struct pprof *x, const char *s)
{
	struct strtab *st = &x->st;
	if (2 * (st->cnt + 1) > st->slot_cap) {
		size_t cap = st->slot_cap ? st->slot_cap * 2 : 1024;
		uint32_t *slots = calloc(cap, sizeof(*slots));
		if (!slots) {
			x->oom = 1;
			return 0;
		}
		for (size_t i = 0; i < st->cnt; i++) {
			size_t h = str_hash(st->v[i]) & (cap - 1);
			while (slots[h])
				h = (h + 1) & (cap - 1);
			slots[h] = (uint32_t)i + 1;
		}
		free(st->slots);
		st->slots = slots;
		st->slot_cap = cap;
	}
	size_t h = str_hash(s) & (st->slot_cap - 1);
	while (st->slots[h]) {
		if (!strcmp(st->v[st->slots[h] - 1], s))
			return st->slots[h] - 1;
		h = (h + 1) & (st->slot_cap - 1);
	}
	if (st->cnt == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 1024;
		char **v = realloc(st->v, cap * sizeof(*v));
		if (!v) {
			x->oom = 1;
			return 0;
		}
		st->v = v;
		st->cap = cap;
	}
	if (!(st->v[st->cnt] = strdup(s))) {
		x->oom = 1;
		return 0;
	}
	st->slots[h] = (uint32_t)st->cnt + 1;
	return (int64_t)st->cnt++;
}

static int grow(struct pprof *x, size_t need)
{
	if (need <= x->cap)
		return 0;
	size_t cap = x->cap ? x->cap : 1024;
	while (cap < need)
		cap *= 2;
	uint64_t *a = realloc(x->calls, cap * sizeof(*a));
	if (a)
		x->calls = a;
	uint64_t *b = realloc(x->wall, cap * sizeof(*b));
	if (b)
		x->wall = b;
	uint64_t *c = realloc(x->self, cap * sizeof(*c));
	if (c)
		x->self = c;
	if (!a || !b || !c)
		return -1;
	memset(x->calls + x->cap, 0, (cap - x->cap) * sizeof(*a));
	memset(x->wall + x->cap, 0, (cap - x->cap) * sizeof(*b));
	memset(x->self + x->cap, 0, (cap - x->cap) * sizeof(*c));
	x->cap = cap;
	return 0;
}

static int pprof_event(const struct trace_event *ev, void *arg)
{
	struct pprof *x = arg;

	if (ev->kind != TEV_ENTRY && ev->kind != TEV_EXIT)
		return 0;
	if (grow(x, (size_t)ev->node + 1)) {
		x->oom = 1;
		return 1;
	}
	if (ev->kind == TEV_ENTRY) {
		if (!(ev->flags & TEV_INHERITED))
			x->calls[ev->node]++;
		return 0;
	}
	/* As report: a time only from a recorded entry and exit. */
	if (ev->flags & TEV_UNTIMED)
		return 0;
	uint64_t d = ev->ns - ev->entry_ns;
	x->wall[ev->node] += d;
	x->self[ev->node] += d > ev->child_ns ? d - ev->child_ns : 0;
	return 0;
}

/* A value_type message: {type, unit} as string indices. */
static void value_type(struct pprof *x, struct view_buf *out, unsigned field, const char *type, const char *unit)
{
	struct view_buf m = { 0 };
	pb_uint(&m, 1, (uint64_t)str_index(x, type));
	pb_uint(&m, 2, (uint64_t)str_index(x, unit));
	pb_bytes(out, field, m.p, m.len);
	x->oom |= m.oom;
	free(m.p);
}

static int write_gzip(const struct view_buf *b, FILE *out)
{
	z_stream z = { 0 };
	unsigned char chunk[65536];
	/* 16 + 15: a gzip header and trailer around the deflate stream. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	z.next_in = (unsigned char *)b->p;
	z.avail_in = (uInt)b->len;
	int r;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		r = deflate(&z, Z_FINISH);
		if (r == Z_STREAM_ERROR)
			break;
		fwrite_unlocked(chunk, 1, sizeof(chunk) - z.avail_out, out);
	} while (r != Z_STREAM_END);
	deflateEnd(&z);
	return r == Z_STREAM_END ? 0 : -1;
}

int export_pprof(struct trace *t, FILE *out)
{
	struct pprof x = { .t = t };
	struct view_buf p = { 0 }, m = { 0 };
	uint32_t *path = NULL;
	size_t path_cap = 0;
	uint8_t *site_used = NULL, *module_used = NULL;
	uint64_t *mod_lo = NULL, *mod_hi = NULL;
	int err = 1;

	if (call_tree_init(&x.tree, &t->work) || str_index(&x, "") || x.oom)
		goto oom;
	if (view_each_event_tree(t, 0, &x.tree, pprof_event, &x))
		goto out;
	if (x.oom || grow(&x, x.tree.cnt))
		goto oom;

	/* The sample types first: index 0 of the string table is "". */
	value_type(&x, &p, P_SAMPLE_TYPE, "calls", "count");
	value_type(&x, &p, P_SAMPLE_TYPE, "wall-time", "nanoseconds");
	value_type(&x, &p, P_SAMPLE_TYPE, "self-time", "nanoseconds");

	site_used = calloc(t->site_cap ? t->site_cap : 1, 1);
	module_used = calloc(t->module_cnt ? t->module_cnt : 1, 1);
	mod_lo = calloc(t->module_cnt ? t->module_cnt : 1, sizeof(*mod_lo));
	mod_hi = calloc(t->module_cnt ? t->module_cnt : 1, sizeof(*mod_hi));
	if (!site_used || !module_used || !mod_lo || !mod_hi)
		goto oom;
	int64_t k_thread = str_index(&x, "thread"), k_tid = str_index(&x, "tid");

	/* Samples: every node of a call with a count or a time; its stack
	 * innermost first, up to its thread's node (a child of the root). */
	for (uint32_t n = 1; n < x.tree.cnt; n++) {
		const struct call_node *cn = &x.tree.v[n];
		if (!cn->parent || (!x.calls[n] && !x.wall[n]))
			continue;
		size_t len = 0;
		uint32_t thread_node = n;
		for (uint32_t k = n; x.tree.v[k].parent; k = x.tree.v[k].parent) {
			if (len == path_cap) {
				size_t c = path_cap ? path_cap * 2 : 64;
				uint32_t *v = realloc(path, c * sizeof(*v));
				if (!v)
					goto oom;
				path = v;
				path_cap = c;
			}
			path[len++] = x.tree.v[k].site;
			thread_node = x.tree.v[k].parent;
			t->work++;
		}
		/* The walk stopped at the thread's node (a child of the
		 * root), keyed by the tid. */
		uint32_t tid = x.tree.v[thread_node].site;
		struct view_buf s = { 0 }, ids = { 0 }, vals = { 0 }, lab = { 0 };
		for (size_t i = 0; i < len; i++) {
			uint32_t site = path[i];
			pb_varint(&ids, (uint64_t)site + 1);
			if (site < t->site_cap) {
				site_used[site] = 1;
				uint32_t mod = t->sites[site].module;
				/* An event the reader adds (linux:schedule) is in no object. */
				if (mod < t->module_cnt && !(t->sites[site].flags & TRACE_SITE_EVENT)) {
					uint64_t ip = t->sites[site].func_ip, end = ip + (t->sites[site].func_size ? t->sites[site].func_size : 1);
					if (!module_used[mod] || ip < mod_lo[mod])
						mod_lo[mod] = ip;
					if (!module_used[mod] || end > mod_hi[mod])
						mod_hi[mod] = end;
					module_used[mod] = 1;
				}
			}
		}
		pb_bytes(&s, 1, ids.p, ids.len); /* location_id, packed */
		pb_varint(&vals, x.calls[n]);
		pb_varint(&vals, x.wall[n]);
		pb_varint(&vals, x.self[n]);
		pb_bytes(&s, 2, vals.p, vals.len); /* value, packed */
		struct trace_thread *th = trace_thread_find(t, tid);
		pb_uint(&lab, 1, (uint64_t)k_thread);
		pb_uint(&lab, 2, (uint64_t)str_index(&x, th && th->name[0] ? th->name : "?"));
		pb_bytes(&s, 3, lab.p, lab.len);
		lab.len = 0;
		pb_uint(&lab, 1, (uint64_t)k_tid);
		pb_uint(&lab, 3, tid);
		pb_bytes(&s, 3, lab.p, lab.len);
		pb_bytes(&p, P_SAMPLE, s.p, s.len);
		x.oom |= s.oom | ids.oom | vals.oom | lab.oom;
		free(s.p);
		free(ids.p);
		free(vals.p);
		free(lab.p);
	}

	/* Mappings: each object a sample's function is in, its range the
	 * functions' (page-aligned), its build-id from its file. */
	for (uint32_t mod = 0; mod < t->module_cnt; mod++) {
		if (!module_used[mod])
			continue;
		char id[129];
		build_id_of(t->modules[mod], id, sizeof(id));
		m.len = 0;
		pb_uint(&m, 1, (uint64_t)mod + 1);
		pb_uint(&m, 2, mod_lo[mod] & ~0xfffull);
		pb_uint(&m, 3, (mod_hi[mod] + 0xfff) & ~0xfffull);
		pb_uint(&m, 5, (uint64_t)str_index(&x, t->modules[mod]));
		if (id[0])
			pb_uint(&m, 6, (uint64_t)str_index(&x, id));
		pb_uint(&m, 7, 1); /* has_functions */
		pb_bytes(&p, P_MAPPING, m.p, m.len);
	}

	/* A location and a function per site used: the same id. */
	for (uint32_t site = 0; site < t->site_cap; site++) {
		if (!site_used[site])
			continue;
		const struct trace_site *ts = &t->sites[site];
		const char *file = NULL;
		unsigned line = 0;
		int have_line = trace_site_srcline(t, site, &file, &line);
		struct view_buf ln = { 0 };
		m.len = 0;
		pb_uint(&m, 1, (uint64_t)site + 1);
		if (ts->module < t->module_cnt && !(ts->flags & TRACE_SITE_EVENT)) {
			pb_uint(&m, 2, (uint64_t)ts->module + 1);
			pb_uint(&m, 3, ts->func_ip);
		}
		pb_uint(&ln, 1, (uint64_t)site + 1);
		if (have_line)
			pb_uint(&ln, 2, line);
		pb_bytes(&m, 4, ln.p, ln.len);
		pb_bytes(&p, P_LOCATION, m.p, m.len);
		m.len = 0;
		pb_uint(&m, 1, (uint64_t)site + 1);
		pb_uint(&m, 2, (uint64_t)str_index(&x, trace_site_name(t, site)));
		pb_uint(&m, 3, (uint64_t)str_index(&x, ts->sym && *ts->sym ? ts->sym : trace_site_name(t, site)));
		if (have_line) {
			pb_uint(&m, 4, (uint64_t)str_index(&x, file));
			pb_uint(&m, 5, line);
		}
		pb_bytes(&p, P_FUNCTION, m.p, m.len);
		x.oom |= ln.oom;
		free(ln.p);
	}

	/* When and how long: the recording's clock. */
	struct stat stt;
	if (!stat(t->path, &stt))
		pb_uint(&p, P_TIME_NANOS, (uint64_t)stt.st_mtim.tv_sec * 1000000000ull + (uint64_t)stt.st_mtim.tv_nsec);
	if (t->have_clock && t->clock.ns1 > t->clock.ns0)
		pb_uint(&p, P_DURATION_NANOS, t->clock.ns1 - t->clock.ns0);
	value_type(&x, &p, P_PERIOD_TYPE, "calls", "count");
	pb_uint(&p, P_PERIOD, 1);
	pb_uint(&p, P_COMMENT, (uint64_t)str_index(&x, "needle: every call recorded, not sampled"));
	pb_uint(&p, P_DEFAULT_SAMPLE_TYPE, (uint64_t)str_index(&x, "self-time"));
	/* The string table last: every index is known now. */
	for (size_t i = 0; i < x.st.cnt; i++)
		pb_string(&p, P_STRING_TABLE, x.st.v[i]);
	if (x.oom || p.oom || m.oom)
		goto oom;
	if (write_gzip(&p, out)) {
		fprintf(stderr, "needle: export: zlib failed to compress the profile\n");
		goto out;
	}
	err = 0;
	goto out;
oom:
	fprintf(stderr, "needle: out of memory while building the profile\n");
out:
	for (size_t i = 0; i < x.st.cnt; i++)
		free(x.st.v[i]);
	free(x.st.v);
	free(x.st.slots);
	free(x.calls);
	free(x.wall);
	free(x.self);
	free(p.p);
	free(m.p);
	free(path);
	free(site_used);
	free(module_used);
	free(mod_lo);
	free(mod_hi);
	call_tree_free(&x.tree);
	return err;
}
