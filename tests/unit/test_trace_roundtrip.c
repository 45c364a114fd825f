/* test_trace_roundtrip [SEED...] - the trace writer (src/format) and the
 * reader (src/reader) agree, event by event, on random but valid
 * recordings.
 *
 * For each seed, a generator plays several threads the way the agent's
 * recorder does (src/agent/record/recorder.c): raw 8-byte events in
 * chunks of the shared buffer, a chunk taken at the first event that does
 * not fit (full, or a time delta beyond 40 bits), events dropped while no
 * chunk is free (counted in the next chunk's lost_before, with the
 * thread's open call count in open_depth, one less when the event that
 * takes the chunk is an exit), entries and exits of the function_graph
 * tracer, exits that name an outer call, unwinds, function-tracer entries,
 * exits of calls never entered, coroutine context switches, a recycled
 * tid with another serial, thread names changing, an empty chunk that
 * hands over the losses of a thread that ended.  The chunks go through
 * trace_writer_chunk in the order `needle record` writes them (each
 * thread's in sequence, threads interleaved), between the sections
 * record writes before and after them (modules, sites, clock; clock,
 * process, threads, end).
 *
 * The generator also keeps, per thread, the events a reader must give
 * back (docs/file-format.md, trace_reader.h): entries, exits with their
 * entry time and time in children, calls closed as never returned by an
 * outer exit, calls closed as lost at a loss and then the loss itself,
 * context switches, and at the end the calls still open.  The file is
 * read back with trace_open and the iterator; each thread's events must
 * be exactly those (kind, flags, site, depth, ns, entry ns, child ns,
 * lost, tid), merged in time order across threads.
 *
 * The clock section makes one raw unit one nanosecond, so times are
 * compared exactly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "common/shm_layout.h"
#include "format/trace_format.h"
#include "reader/trace_reader.h"
#include "format/trace_writer.h"

/* ---- random numbers ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rng() % n : 0;
}

static int chance(unsigned percent)
{
	return below(100) < percent;
}

#define PUSH(arr, cnt, cap, val)                                                   \
	do {                                                                       \
		if ((cnt) == (cap)) {                                              \
			(cap) = (cap) ? (cap) * 2 : 16;                            \
			(arr) = realloc((arr), (cap) * sizeof(*(arr)));            \
			if (!(arr)) {                                              \
				printf("FAIL: out of memory\n");                   \
				exit(1);                                           \
			}                                                          \
		}                                                                  \
		(arr)[(cnt)++] = (val);                                            \
	} while (0)

/* ---- the model ---- */

struct mframe {
	uint32_t site;
	uint64_t raw;   /* entry time */
	uint64_t child; /* time in closed children */
};

struct mstack {
	struct mframe *v;
	size_t n, cap;
};

struct saved_ctx {
	uint32_t id;
	struct mstack st;
};

/* An event the reader must return; times raw (ns = raw - first base). */
struct xev {
	uint8_t kind, flags;
	uint32_t site, depth;
	uint64_t raw, entry_raw, child, lost;
};

struct gchunk {
	struct sec_chunk hdr;
	uint64_t *ev;
	size_t n, cap;
};

struct gthread {
	uint32_t tid, serial;
	char comm[16];
	/* The reader's view of the thread's open calls: the current
	 * context's stack, and those set aside under other contexts. */
	struct mstack cur;
	uint32_t cur_ctx;
	struct saved_ctx *saved;
	size_t nsaved, saved_cap;
	/* Calls of the current stack really still open: below cur.n while
	 * events are being dropped (their exits were lost). */
	size_t kept;
	uint64_t last_raw; /* the last recorded event */
	struct xev *ev;
	size_t nev, ev_cap;
	/* Production of chunks. */
	uint64_t t;        /* now */
	uint64_t last_try; /* time of the last event written or dropped */
	int have_chunk, no_loss_start;
	uint32_t chunk_room;
	uint64_t seq;
	uint32_t lost;        /* dropped since the last chunk */
	uint32_t loss_budget; /* writes that will still find no free chunk */
	struct gchunk *chunks;
	size_t nchunks, chunks_cap;
	uint64_t events, lost_in_chunks, lost_total;
	char thread_section_name[17];
};

static void xpush(struct gthread *g, struct xev e)
{
	PUSH(g->ev, g->nev, g->ev_cap, e);
}

static size_t saved_frames(const struct gthread *g)
{
	size_t n = 0;
	for (size_t i = 0; i < g->nsaved; i++)
		n += g->saved[i].st.n;
	return n;
}

/* The innermost open call is closed at raw with flags. */
static void close_top(struct gthread *g, uint64_t raw, uint8_t flags)
{
	struct mframe f = g->cur.v[--g->cur.n];
	xpush(g, (struct xev){ .kind = TEV_EXIT, .flags = flags, .site = f.site, .depth = (uint32_t)g->cur.n, .raw = raw,
			       .entry_raw = f.raw, .child = f.child });
	if (g->cur.n)
		g->cur.v[g->cur.n - 1].child += raw - f.raw;
}

/* A chunk with lost_before: the calls that returned while events were
 * dropped close at the thread's last event, then the loss shows. */
static void model_loss(struct gthread *g, uint64_t base, uint32_t lost)
{
	while (g->cur.n > g->kept)
		close_top(g, g->last_raw, TEV_EXIT_LOST);
	xpush(g, (struct xev){ .kind = TEV_LOST, .depth = (uint32_t)g->kept, .raw = base, .lost = lost });
	/* The thread was running when it took the chunk: calls still open
	 * at the end of the trace close no earlier. */
	if (base > g->last_raw)
		g->last_raw = base;
}

static void publish(struct gthread *g, int salvaged)
{
	struct gchunk *c = &g->chunks[g->nchunks - 1];
	c->hdr.event_count = (uint32_t)c->n;
	c->hdr.salvaged = (uint32_t)salvaged;
	g->have_chunk = 0;
	/* The buffer runs out of free chunks now and then. */
	if (!g->no_loss_start && chance(15))
		g->loss_budget = 1 + (uint32_t)below(12);
}

static void take_chunk(struct gthread *g, uint64_t base, uint32_t open_depth, int events)
{
	struct gchunk c;
	memset(&c, 0, sizeof(c));
	c.hdr.tid = g->tid;
	c.hdr.serial = g->serial;
	c.hdr.seq = g->seq++;
	c.hdr.base = base;
	c.hdr.lost_before = g->lost;
	c.hdr.open_depth = open_depth;
	memcpy(c.hdr.comm, g->comm, sizeof(c.hdr.comm));
	PUSH(g->chunks, g->nchunks, g->chunks_cap, c);
	g->lost_in_chunks += g->lost;
	if (g->lost)
		model_loss(g, base, g->lost);
	g->lost = 0;
	g->have_chunk = events;
	g->chunk_room = 1 + (uint32_t)below(chance(10) ? 400 : 40);
}

static int is_exit_type(unsigned type)
{
	return type == EV_EXIT || type == EV_UNWIND;
}

/* The recorder's event_write: 1 if the event was written, 0 if dropped. */
static int gwrite(struct gthread *g, unsigned type, uint32_t site)
{
	uint64_t now = g->t;
	struct gchunk *c = g->nchunks ? &g->chunks[g->nchunks - 1] : NULL;

	if (!g->have_chunk || c->n >= g->chunk_room || now - c->hdr.base > EV_DELTA_MASK) {
		if (g->have_chunk)
			publish(g, 0);
		if (g->loss_budget) {
			g->loss_budget--;
			g->last_try = now;
			return 0;
		}
		/* The recorder counts an exit's call as returned before it
		 * writes the exit (and so takes the chunk). */
		size_t open = g->kept + saved_frames(g);
		if (is_exit_type(type) && open)
			open--;
		uint64_t base = now;
		if (chance(25)) {
			uint64_t back = now - g->last_try;
			base = now - below((back < 50 ? back : 50) + 1);
		}
		take_chunk(g, base, (uint32_t)open, 1);
		c = &g->chunks[g->nchunks - 1];
	}
	PUSH(c->ev, c->n, c->cap, ev_make(type, site, now - c->hdr.base));
	g->events++;
	g->last_raw = now;
	g->last_try = now;
	return 1;
}

/* ---- one thread's events ---- */

struct gen {
	uint32_t *sites; /* site ids entries use */
	size_t nsites;
	uint32_t orphan_base; /* ids of exits without entry: never entered */
	uint64_t big_gaps;
};

static void op_entry(struct gen *G, struct gthread *g, int flat)
{
	uint32_t site = G->sites[below(G->nsites)];
	if (!flat && g->kept && chance(10))
		site = g->cur.v[g->kept - 1].site; /* recursion */
	if (flat) {
		if (gwrite(g, EV_ENTRY, site | EV_ENTRY_FLAT))
			xpush(g, (struct xev){ .kind = TEV_ENTRY, .flags = TEV_FLAT, .site = site,
					       .depth = (uint32_t)g->cur.n, .raw = g->t });
		else
			g->lost++;
		return;
	}
	if (gwrite(g, EV_ENTRY, site)) {
		xpush(g, (struct xev){ .kind = TEV_ENTRY, .site = site, .depth = (uint32_t)g->cur.n, .raw = g->t });
		PUSH(g->cur.v, g->cur.n, g->cur.cap, ((struct mframe){ .site = site, .raw = g->t }));
		g->kept = g->cur.n;
	} else {
		/* Its exit will not be written either; both are counted now. */
		g->lost += 2;
	}
}

static void op_exit_top(struct gthread *g, int unwind)
{
	uint32_t site = g->cur.v[g->kept - 1].site;
	if (gwrite(g, unwind ? EV_UNWIND : EV_EXIT, site)) {
		close_top(g, g->t, unwind ? TEV_UNWOUND : 0);
		g->kept = g->cur.n;
	} else {
		g->lost++;
		g->kept--;
	}
}

/* The exit of an outer call: the calls above it never returned. */
static void op_exit_outer(struct gthread *g)
{
	size_t k = below(g->kept - 1);
	uint32_t site = g->cur.v[k].site;
	for (size_t i = k + 1; i < g->kept; i++)
		if (g->cur.v[i].site == site)
			return; /* an exit names the innermost call of its site */
	if (gwrite(g, EV_EXIT, site)) {
		while (g->cur.n > k + 1)
			close_top(g, g->t, TEV_UNMATCHED);
		close_top(g, g->t, 0);
		g->kept = g->cur.n;
	} else {
		g->lost++;
		g->kept = k;
	}
}

static void op_exit_orphan(struct gen *G, struct gthread *g)
{
	uint32_t site = G->orphan_base + (uint32_t)below(4);
	/* Not as the first event after a loss that closed every call: the
	 * chunk's open depth would be 0 either way, and readers keep one
	 * call open for an exit that comes first (the format cannot tell
	 * an exit without entry from the exit of a call it counted). */
	if (!g->have_chunk && g->lost && !g->kept && !saved_frames(g) && g->cur.n)
		return;
	if (gwrite(g, EV_EXIT, site))
		xpush(g, (struct xev){ .kind = TEV_EXIT, .flags = TEV_ORPHAN, .site = site, .depth = (uint32_t)g->cur.n,
				       .raw = g->t, .entry_raw = g->t });
	else
		g->lost++;
}

static int ctx_in_use(const struct gthread *g, uint32_t id)
{
	if (id == g->cur_ctx)
		return 1;
	for (size_t i = 0; i < g->nsaved; i++)
		if (g->saved[i].id == id)
			return 1;
	return 0;
}

static uint32_t new_ctx(const struct gthread *g)
{
	for (;;) {
		uint32_t id = chance(90) ? 1 + (uint32_t)below(12) : 1 + (uint32_t)below(EV_CONTEXT_MASK);
		if (!ctx_in_use(g, id))
			return id;
	}
}

/* swapcontext: the context left, then the context entered, each written
 * as an event (both always written: switches are not made while events
 * are dropped). */
static void op_switch(struct gthread *g)
{
	g->no_loss_start = 1;
	if (chance(80)) {
		uint32_t from = g->cur_ctx && chance(85) ? g->cur_ctx : new_ctx(g);
		if (!gwrite(g, EV_SWITCH, from))
			abort();
		g->cur_ctx = from;
	}
	uint32_t to;
	uint64_t r = below(10);
	if (r < 6 && g->nsaved)
		to = g->saved[below(g->nsaved)].id;
	else if (r < 9)
		to = new_ctx(g);
	else
		to = g->cur_ctx;
	if (!to)
		to = new_ctx(g);
	g->t += below(3);
	if (!gwrite(g, EV_SWITCH, EV_SWITCH_TO | to))
		abort();
	g->no_loss_start = 0;
	if (to != g->cur_ctx) {
		struct saved_ctx s = { g->cur_ctx, g->cur };
		PUSH(g->saved, g->nsaved, g->saved_cap, s);
		memset(&g->cur, 0, sizeof(g->cur));
		for (size_t i = 0; i + 1 < g->nsaved; i++) {
			if (g->saved[i].id != to)
				continue;
			g->cur = g->saved[i].st;
			g->saved[i] = g->saved[--g->nsaved];
			break;
		}
		g->cur_ctx = to;
		g->kept = g->cur.n;
	}
	xpush(g, (struct xev){ .kind = TEV_SWITCH, .site = to, .depth = (uint32_t)g->cur.n, .raw = g->t });
}

static void advance(struct gen *G, struct gthread *g)
{
	uint64_t r = below(1000);
	if (r < 300)
		return; /* same timestamp */
	if (r < 800)
		g->t += 1 + below(50);
	else if (r < 990)
		g->t += below(100000);
	else if (r < 999 || G->big_gaps >= 3)
		g->t += below(1ull << 34);
	else {
		/* Beyond a 40-bit delta: the event needs a chunk of its own base. */
		g->t += EV_DELTA_MASK + below(1000);
		G->big_gaps++;
	}
}

static void gen_thread(struct gen *G, struct gthread *g)
{
	int ops = (int)below(chance(10) ? 3000 : 600);
	int names = chance(80);
	int entry_bias = (int)below(15); /* some threads go deep */

	g->t = 1000000000000ull + below(1000000);
	g->last_try = g->t;
	if (names)
		snprintf(g->comm, sizeof(g->comm), "worker-%u", g->tid % 1000);
	if (chance(10))
		g->loss_budget = 1 + (uint32_t)below(5); /* drops before its first chunk */
	for (int i = 0; i < ops; i++) {
		advance(G, g);
		if (names && chance(1)) {
			/* pthread_setname_np: up to 15 characters, or 16 bytes
			 * without a NUL in the chunk header. */
			if (chance(30))
				memcpy(g->comm, "sixteen-chars-xx", 16);
			else
				snprintf(g->comm, sizeof(g->comm), "renamed-%llu", (unsigned long long)below(100000));
		}
		int in_loss = g->loss_budget && !g->have_chunk;
		/* Out of 100 + entry_bias: entries, flat entries, exits,
		 * exits of an outer call, exits without entry, switches, a
		 * chunk handed over early (the next write may find none). */
		uint64_t r = below(100 + (uint64_t)entry_bias);
		if (r < 34 + (uint64_t)entry_bias) {
			if (g->kept < 300)
				op_entry(G, g, 0);
		} else if ((r -= (uint64_t)entry_bias) < 40) {
			op_entry(G, g, 1);
		} else if (r < 80) {
			if (g->kept)
				op_exit_top(g, chance(15));
		} else if (r < 86) {
			if (g->kept >= 2)
				op_exit_outer(g);
		} else if (r < 88) {
			op_exit_orphan(G, g);
		} else if (r < 95) {
			if (!in_loss)
				op_switch(g);
		} else if (r < 97) {
			if (g->have_chunk)
				publish(g, 0);
		}
	}
	/* The thread ends: its chunk is published or salvaged; its losses
	 * since are handed over in an empty chunk if one is free. */
	if (g->have_chunk)
		publish(g, chance(30));
	if (g->lost && chance(70)) {
		g->t += below(100);
		take_chunk(g, g->t, (uint32_t)(g->kept + saved_frames(g)), 0);
		g->chunks[g->nchunks - 1].hdr.event_count = 0;
	}
	g->lost_total = g->lost_in_chunks + g->lost;
	/* The trace ends with these calls open (the current context's). */
	while (g->cur.n)
		close_top(g, g->last_raw, TEV_OPEN);
}

static void gthread_free(struct gthread *g)
{
	free(g->cur.v);
	for (size_t i = 0; i < g->nsaved; i++)
		free(g->saved[i].st.v);
	free(g->saved);
	free(g->ev);
	for (size_t i = 0; i < g->nchunks; i++)
		free(g->chunks[i].ev);
	free(g->chunks);
}

/* ---- one seed ---- */

/* What the seeds covered, summed (printed at the end). */
static struct {
	uint64_t entries, flat, exits, unwound, unmatched, orphan, exit_lost, open, losses, switches;
	uint64_t chunks, lost_chunks, handover, big_delta, recycled, threads, seeds_failed;
} cover;

static void count_cover(const struct gthread *g)
{
	for (size_t i = 0; i < g->nev; i++) {
		const struct xev *x = &g->ev[i];
		if (x->kind == TEV_ENTRY) {
			cover.entries++;
			cover.flat += (x->flags & TEV_FLAT) != 0;
		} else if (x->kind == TEV_EXIT) {
			cover.exits++;
			cover.unwound += (x->flags & TEV_UNWOUND) != 0;
			cover.unmatched += (x->flags & TEV_UNMATCHED) != 0;
			cover.orphan += (x->flags & TEV_ORPHAN) != 0;
			cover.exit_lost += (x->flags & TEV_EXIT_LOST) != 0;
			cover.open += (x->flags & TEV_OPEN) != 0;
		} else if (x->kind == TEV_LOST) {
			cover.losses++;
		} else if (x->kind == TEV_SWITCH) {
			cover.switches++;
		}
	}
	for (size_t i = 0; i < g->nchunks; i++) {
		cover.chunks++;
		cover.lost_chunks += g->chunks[i].hdr.lost_before != 0;
		cover.handover += g->chunks[i].hdr.event_count == 0;
	}
	cover.threads += g->nchunks != 0;
}

#define MAX_THREADS 7

static char path[4096];

static const char *kind_name(unsigned k)
{
	return k == TEV_ENTRY ? "entry" : k == TEV_EXIT ? "exit" : k == TEV_LOST ? "lost" : k == TEV_SWITCH ? "switch" : "?";
}

static void show(const char *what, const struct trace_event *e)
{
	printf("      %s: %s site %u depth %u ns %llu entry_ns %llu child_ns %llu lost %llu flags 0x%x tid %u\n", what,
	       kind_name(e->kind), e->site, e->depth, (unsigned long long)e->ns, (unsigned long long)e->entry_ns,
	       (unsigned long long)e->child_ns, (unsigned long long)e->lost, e->flags, e->tid);
}

static uint64_t to_ns(uint64_t raw, uint64_t first)
{
	return raw > first ? raw - first : 0;
}

static struct trace_event expected_event(const struct gthread *g, const struct xev *x, uint64_t first)
{
	struct trace_event e;
	memset(&e, 0, sizeof(e));
	e.kind = x->kind;
	e.flags = x->flags;
	e.site = x->site;
	e.depth = x->depth;
	e.ns = to_ns(x->raw, first);
	e.tid = g->tid;
	e.lost = x->lost;
	if (x->kind == TEV_EXIT) {
		e.entry_ns = to_ns(x->entry_raw, first);
		e.child_ns = x->child;
	}
	return e;
}

static int same_event(const struct trace_event *a, const struct trace_event *b)
{
	return a->kind == b->kind && a->flags == b->flags && a->site == b->site && a->depth == b->depth && a->ns == b->ns &&
	       a->entry_ns == b->entry_ns && a->child_ns == b->child_ns && a->lost == b->lost && a->tid == b->tid;
}

struct site_rec {
	uint32_t id;
	char name[32];
};

/* Read the whole trace (or the threads of one tid) and compare. */
static int compare_iteration(struct trace *t, struct gthread *gs, int ng, const int *map, uint32_t tid,
			     uint64_t first, uint64_t seed, const char *what)
{
	struct trace_iter it;
	size_t pos[MAX_THREADS] = { 0 };
	int ok = 1;

	if (trace_iter_init(&it, t, tid)) {
		printf("      seed %llu %s: trace_iter_init: %s\n", (unsigned long long)seed, what, it.err);
		return 0;
	}
	struct trace_event e, prev = { 0 };
	int have_prev = 0;
	uint64_t n = 0;
	int r;
	while ((r = trace_iter_next(&it, &e)) == 1) {
		n++;
		if (e.thread >= t->thread_cnt || map[e.thread] < 0) {
			printf("      seed %llu %s: event of unknown thread %u\n", (unsigned long long)seed, what, e.thread);
			ok = 0;
			break;
		}
		struct gthread *g = &gs[map[e.thread]];
		if (tid && e.tid != tid) {
			printf("      seed %llu %s: an event of tid %u\n", (unsigned long long)seed, what, e.tid);
			ok = 0;
			break;
		}
		size_t i = pos[map[e.thread]]++;
		if (i >= g->nev) {
			printf("      seed %llu %s: thread (%u, %u) has more events than its %zu\n", (unsigned long long)seed,
			       what, g->tid, g->serial, g->nev);
			show("extra", &e);
			ok = 0;
			break;
		}
		struct trace_event want = expected_event(g, &g->ev[i], first);
		if (!same_event(&e, &want)) {
			printf("      seed %llu %s: thread (%u, %u) event %zu of %zu differs\n", (unsigned long long)seed, what,
			       g->tid, g->serial, i, g->nev);
			show("expected", &want);
			show("read    ", &e);
			ok = 0;
			break;
		}
		/* Merged in order of (time, tid, thread). */
		if (have_prev && (e.ns < prev.ns || (e.ns == prev.ns && (e.tid < prev.tid ||
									  (e.tid == prev.tid && e.thread < prev.thread))))) {
			printf("      seed %llu %s: event %llu comes out of time order\n", (unsigned long long)seed, what,
			       (unsigned long long)n);
			show("before", &prev);
			show("after ", &e);
			ok = 0;
			break;
		}
		/* The thread's next event, without consuming it. */
		struct trace_event peek;
		int pr = trace_iter_peek_same_thread(&it, &peek);
		if (i + 1 < g->nev) {
			struct trace_event want_next = expected_event(g, &g->ev[i + 1], first);
			if (pr != 1 || !same_event(&peek, &want_next)) {
				printf("      seed %llu %s: peeking after event %zu of thread (%u, %u) gives %d\n",
				       (unsigned long long)seed, what, i, g->tid, g->serial, pr);
				show("expected", &want_next);
				if (pr == 1)
					show("peeked  ", &peek);
				ok = 0;
				break;
			}
		} else if (pr != 0) {
			printf("      seed %llu %s: peeking after the last event of a thread gives %d\n",
			       (unsigned long long)seed, what, pr);
			ok = 0;
			break;
		}
		prev = e;
		have_prev = 1;
	}
	if (r < 0) {
		printf("      seed %llu %s: trace_iter_next: %s\n", (unsigned long long)seed, what, it.err);
		ok = 0;
	}
	for (int k = 0; ok && k < ng; k++) {
		if (tid && gs[k].tid != tid)
			continue;
		if (pos[k] != gs[k].nev) {
			printf("      seed %llu %s: thread (%u, %u) gave %zu of its %zu events\n", (unsigned long long)seed,
			       what, gs[k].tid, gs[k].serial, pos[k], gs[k].nev);
			ok = 0;
		}
	}
	trace_iter_free(&it);
	return ok;
}

static int run_seed(uint64_t seed, uint64_t *events_out)
{
	struct gthread gs[MAX_THREADS];
	struct gen G;
	int ok = 1;

	rng_state = seed * 0x2545F4914F6CDD1Dull;
	int ng = 1 + (int)below(MAX_THREADS);
	memset(gs, 0, sizeof(gs));
	memset(&G, 0, sizeof(G));

	/* Sites: ids with gaps; some seeds use ids near the 21-bit limit. */
	G.nsites = 1 + below(chance(20) ? 3 : 200);
	G.sites = calloc(G.nsites, sizeof(*G.sites));
	uint32_t id = (uint32_t)below(50);
	for (size_t i = 0; i < G.nsites; i++) {
		G.sites[i] = id;
		id += 1 + (uint32_t)below(chance(5) ? 5000 : 3);
	}
	if (chance(20))
		G.sites[below(G.nsites)] = EV_ENTRY_FLAT - 1 - (uint32_t)below(10);
	G.orphan_base = id + 100;

	uint32_t tid = 1000 + (uint32_t)below(100000), serial = 0;
	for (int i = 0; i < ng; i++) {
		/* A recycled tid: a new thread (serial) with an old one's tid. */
		if (i && chance(30)) {
			gs[i].tid = gs[below((uint64_t)i)].tid;
		} else {
			gs[i].tid = tid + (uint32_t)below(50);
			tid += 100;
		}
		gs[i].serial = ++serial;
		gen_thread(&G, &gs[i]);
	}

	/* The file, section by section as `needle record` writes it. */
	FILE *f = fopen(path, "w+");
	struct trace_writer w;
	if (!f || trace_writer_open(&w, f, TRACER_FUNCTION_GRAPH)) {
		printf("FAIL: seed %llu: cannot open %s\n", (unsigned long long)seed, path);
		return 0;
	}
	int werr = 0;
	static const char *mods[] = { "/usr/bin/prog", "/lib/x86_64-linux-gnu/libc.so.6" };
	for (uint32_t m = 0; m < 2; m++) {
		uint8_t buf[64];
		size_t len = strlen(mods[m]);
		memcpy(buf, &m, 4);
		memcpy(buf + 4, mods[m], len);
		werr |= trace_writer_section(&w, SEC_MODULE, buf, 4 + len);
	}
	/* Names for the sites (not for every one: unnamed ones are shown
	 * as site#N), one of them a C++ name shown demangled. */
	struct site_rec *named = calloc(G.nsites, sizeof(*named));
	size_t nnamed = 0;
	uint8_t *sites = malloc(G.nsites * 64 + 64), *sp = sites;
	for (size_t i = 0; i < G.nsites; i++) {
		if (G.sites[i] >= 1u << 20 || chance(10))
			continue;
		struct site_rec *s = &named[nnamed++];
		s->id = G.sites[i];
		if (i == 0)
			snprintf(s->name, sizeof(s->name), "_ZN2ns5Klass6methodEi");
		else
			snprintf(s->name, sizeof(s->name), "func_%u", s->id);
		uint32_t mod = (uint32_t)(i % 2);
		uint64_t ip = 0x401000 + (uint64_t)s->id * 32;
		uint16_t nlen = (uint16_t)strlen(s->name);
		memcpy(sp, &s->id, 4);
		memcpy(sp + 4, &mod, 4);
		memcpy(sp + 8, &ip, 8);
		memcpy(sp + 16, &nlen, 2);
		memcpy(sp + 18, s->name, nlen);
		sp += 18 + nlen;
	}
	werr |= trace_writer_section(&w, SEC_SITES, sites, (uint64_t)(sp - sites));
	free(sites);
	/* A first clock whose rate the last one replaces. */
	struct sec_clock clock0 = { .source = TRACE_CLOCK_TSC, .raw0 = 100, .ns0 = 0, .raw1 = 400, .ns1 = 100 };
	werr |= trace_writer_section(&w, SEC_CLOCK, &clock0, sizeof(clock0));

	size_t next[MAX_THREADS] = { 0 }, left = 0;
	uint64_t events = 0, chunks = 0, salvaged = 0, lost = 0, first = UINT64_MAX;
	for (int i = 0; i < ng; i++) {
		left += gs[i].nchunks;
		for (size_t k = 0; k < gs[i].nchunks; k++) {
			if (gs[i].chunks[k].hdr.base < first)
				first = gs[i].chunks[k].hdr.base;
			salvaged += gs[i].chunks[k].hdr.salvaged != 0;
		}
		events += gs[i].events;
		lost += gs[i].lost_total;
		chunks += gs[i].nchunks;
	}
	if (!chunks)
		first = 0; /* a trace without a chunk */
	while (left) {
		int i = (int)below((uint64_t)ng);
		while (next[i] == gs[i].nchunks)
			i = (i + 1) % ng;
		struct gchunk *c = &gs[i].chunks[next[i]++];
		left--;
		int r = trace_writer_chunk(&w, &c->hdr, c->ev, (uint32_t)c->n);
		if (r) {
			printf("      seed %llu: trace_writer_chunk: %d\n", (unsigned long long)seed, r);
			werr = 1;
		}
	}
	if (w.events != events || w.chunks != chunks || w.salvaged != salvaged) {
		printf("      seed %llu: the writer counted %llu events, %llu chunks, %llu salvaged\n",
		       (unsigned long long)seed, (unsigned long long)w.events, (unsigned long long)w.chunks,
		       (unsigned long long)w.salvaged);
		ok = 0;
	}

	struct sec_clock clock = { .source = TRACE_CLOCK_TSC, .raw0 = 0, .ns0 = 0, .raw1 = 1ull << 40, .ns1 = 1ull << 40 };
	werr |= trace_writer_section(&w, SEC_CLOCK, &clock, sizeof(clock));
	{
		static const char args[] = "prog\0--flag\0";
		uint8_t buf[sizeof(struct sec_process) + sizeof(args)];
		struct sec_process p = { .pid = 4242, .tracer = TRACER_FUNCTION_GRAPH, .argc = 2,
					 .buffer_bytes = 16u << 20 };
		memcpy(buf, &p, sizeof(p));
		memcpy(buf + sizeof(p), args, sizeof(args) - 1);
		werr |= trace_writer_section(&w, SEC_PROCESS, buf, sizeof(p) + sizeof(args) - 1);
	}
	/* THREAD sections: one per thread as it was last seen, by tid. */
	for (int i = 0; i < ng; i++) {
		uint8_t buf[4 + 16];
		snprintf(gs[i].thread_section_name, sizeof(gs[i].thread_section_name), "thr-%u-%u", gs[i].tid % 100,
			 gs[i].serial);
		size_t n = strlen(gs[i].thread_section_name);
		memcpy(buf, &gs[i].tid, 4);
		memcpy(buf + 4, gs[i].thread_section_name, n);
		werr |= trace_writer_section(&w, SEC_THREAD, buf, 4 + n);
	}
	struct sec_end end = { .events = events, .lost_events = lost, .chunks = chunks, .producer_wakeups = 7,
			       .salvaged_chunks = salvaged, .sites_traced = G.nsites };
	werr |= trace_writer_section(&w, SEC_END, &end, sizeof(end));
	werr |= trace_writer_finish(&w);
	fclose(f);
	if (werr) {
		printf("      seed %llu: writing failed\n", (unsigned long long)seed);
		ok = 0;
	}

	/* Read it back. */
	char err[512];
	struct trace *t = trace_open(path, err, sizeof(err));
	if (!t) {
		printf("      seed %llu: trace_open: %s\n", (unsigned long long)seed, err);
		ok = 0;
		goto out;
	}
	if (t->version != TRACE_VERSION || t->tracer != TRACER_FUNCTION_GRAPH || t->incomplete || !t->have_end ||
	    t->tail_bytes || t->end.events != events || t->end.lost_events != lost || t->end.chunks != chunks ||
	    t->end.salvaged_chunks != salvaged || t->first_raw != first || t->clock.raw1 != clock.raw1 ||
	    t->module_cnt != 2 || strcmp(t->modules[1], mods[1]) || !t->have_process || t->process.argc != 2 ||
	    strcmp(t->argv[0], "prog") || strcmp(t->argv[1], "--flag")) {
		printf("      seed %llu: the file's metadata reads back wrong: version %d tracer %d incomplete %d end %d "
		       "tail %llu events %llu/%llu lost %llu/%llu chunks %llu/%llu salvaged %llu/%llu first %llu/%llu\n",
		       (unsigned long long)seed, t->version, t->tracer, t->incomplete, t->have_end,
		       (unsigned long long)t->tail_bytes, (unsigned long long)t->end.events, (unsigned long long)events,
		       (unsigned long long)t->end.lost_events, (unsigned long long)lost, (unsigned long long)t->end.chunks,
		       (unsigned long long)chunks, (unsigned long long)t->end.salvaged_chunks, (unsigned long long)salvaged,
		       (unsigned long long)t->first_raw, (unsigned long long)first);
		ok = 0;
	}
	if (trace_verify(t, err, sizeof(err))) {
		printf("      seed %llu: trace_verify: %s\n", (unsigned long long)seed, err);
		ok = 0;
	}
	for (size_t i = 0; i < nnamed; i++) {
		const char *want = i == 0 && named[0].name[0] == '_' ? "ns::Klass::method" : named[i].name;
		if (strcmp(trace_site_name(t, named[i].id), want)) {
			printf("      seed %llu: site %u is named %s, not %s\n", (unsigned long long)seed, named[i].id,
			       trace_site_name(t, named[i].id), want);
			ok = 0;
		}
	}
	{
		char want[32];
		snprintf(want, sizeof(want), "site#%u", G.orphan_base);
		if (strcmp(trace_site_name(t, G.orphan_base), want)) {
			printf("      seed %llu: an unnamed site is %s\n", (unsigned long long)seed,
			       trace_site_name(t, G.orphan_base));
			ok = 0;
		}
	}

	/* Threads: one per (tid, serial) that wrote a chunk. */
	int map[64];
	int with_chunks = 0;
	for (int i = 0; i < ng; i++)
		with_chunks += gs[i].nchunks > 0;
	if (t->thread_cnt != (size_t)with_chunks || t->thread_cnt > 64) {
		printf("      seed %llu: %zu threads read, %d written\n", (unsigned long long)seed, t->thread_cnt,
		       with_chunks);
		ok = 0;
		goto close;
	}
	for (size_t k = 0; k < t->thread_cnt; k++) {
		struct trace_thread *th = &t->threads[k];
		map[k] = -1;
		for (int i = 0; i < ng; i++)
			if (gs[i].tid == th->tid && gs[i].serial == th->serial)
				map[k] = i;
		if (map[k] < 0) {
			printf("      seed %llu: thread (%u, %u) was not written\n", (unsigned long long)seed, th->tid,
			       th->serial);
			ok = 0;
			continue;
		}
		struct gthread *g = &gs[map[k]];
		/* Its name: the comm of its latest chunk that has one, else the
		 * last THREAD section of its tid. */
		char want[64] = "";
		for (size_t c = g->nchunks; c-- > 0;) {
			if (g->chunks[c].hdr.comm[0]) {
				snprintf(want, sizeof(want), "%.*s", 16, g->chunks[c].hdr.comm);
				break;
			}
		}
		if (!want[0])
			for (int i = 0; i < ng; i++)
				if (gs[i].tid == g->tid)
					snprintf(want, sizeof(want), "%s", gs[i].thread_section_name);
		if (th->events != g->events || th->lost != g->lost_in_chunks || th->chunk_cnt != g->nchunks ||
		    strcmp(th->name, want)) {
			printf("      seed %llu: thread (%u, %u): %llu events, %llu lost, %zu chunks, name '%s'; "
			       "written %llu, %llu, %zu, '%s'\n",
			       (unsigned long long)seed, g->tid, g->serial, (unsigned long long)th->events,
			       (unsigned long long)th->lost, th->chunk_cnt, th->name, (unsigned long long)g->events,
			       (unsigned long long)g->lost_in_chunks, g->nchunks, want);
			ok = 0;
		}
	}
	if (!ok)
		goto close;

	ok &= compare_iteration(t, gs, ng, map, 0, first, seed, "all threads");
	/* The threads of one tid (two of them when it was recycled). */
	if (ok && ng)
		ok &= compare_iteration(t, gs, ng, map, gs[below((uint64_t)ng)].tid, first, seed, "one tid");
	*events_out = 0;
	for (int i = 0; i < ng; i++) {
		*events_out += gs[i].nev;
		count_cover(&gs[i]);
		for (int j = 0; j < i; j++)
			if (gs[j].tid == gs[i].tid && gs[i].nchunks && gs[j].nchunks) {
				cover.recycled++;
				break;
			}
	}
	cover.big_delta += G.big_gaps;
close:
	trace_close(t);
out:
	free(named);
	free(G.sites);
	for (int i = 0; i < ng; i++)
		gthread_free(&gs[i]);
	return ok;
}

int main(int argc, char **argv)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : ".";
	snprintf(path, sizeof(path), "%s/needle-roundtrip-%d.data", dir, (int)getpid());

	uint64_t seeds[400];
	size_t nseeds = 0;
	if (argc > 1) {
		for (int i = 1; i < argc && nseeds < 400; i++)
			seeds[nseeds++] = strtoull(argv[i], NULL, 0);
	} else {
		/* The fixed list: 1..300. */
		for (uint64_t s = 1; s <= 300; s++)
			seeds[nseeds++] = s;
	}
	for (size_t i = 0; i < nseeds; i++) {
		uint64_t n = 0;
		int ok = run_seed(seeds[i], &n);
		CHECK(ok, "seed %llu: %llu events read back as written", (unsigned long long)seeds[i], (unsigned long long)n);
	}
	unlink(path);
	printf("      covered: %llu threads, %llu chunks (%llu after losses, %llu empty hand-overs), %llu recycled tids, "
	       "%llu deltas beyond 40 bits\n"
	       "      %llu entries (%llu flat), %llu exits: %llu unwound, %llu never returned, %llu without entry, "
	       "%llu lost, %llu still open; %llu losses, %llu context switches\n",
	       (unsigned long long)cover.threads, (unsigned long long)cover.chunks, (unsigned long long)cover.lost_chunks,
	       (unsigned long long)cover.handover, (unsigned long long)cover.recycled,
	       (unsigned long long)cover.big_delta, (unsigned long long)cover.entries, (unsigned long long)cover.flat,
	       (unsigned long long)cover.exits, (unsigned long long)cover.unwound, (unsigned long long)cover.unmatched,
	       (unsigned long long)cover.orphan, (unsigned long long)cover.exit_lost, (unsigned long long)cover.open,
	       (unsigned long long)cover.losses, (unsigned long long)cover.switches);
	return harness_exit();
}
