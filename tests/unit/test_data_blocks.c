/* test_data_blocks - the values of -A / -R through the file (trace_format.h:
 * TAG_DATA, TAG_DATA_PACKED): data blocks of every shape written by
 * trace_writer_chunk and read back by the iterator, word for word.
 *
 * One thread's chunks hold entries and exits, each entry followed by a
 * block and some exits too, as the recorder writes them.  The blocks:
 * a function's arguments (the same item words each time, small values
 * that change a little), negative numbers, random 64-bit words (which
 * the writer keeps raw: packing would make them bigger), string bytes,
 * empty blocks, blocks longer than the reference (TRACE_DATA_REF_WORDS)
 * and than what the reader keeps (TRACE_DATA_MAX).  Some blocks follow
 * an exit that names an outer call, which claims no block: the reader
 * must still read them, since the chunk's next packed block counts from
 * them.  A block cut by the end of its chunk is dropped.  Every block an
 * event claims must come back with exactly the
 * words written (cut at TRACE_DATA_MAX bytes), in order; and a recording
 * of argument blocks must take less than half the bytes of raw words. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "common/shm_layout.h"
#include "format/trace_format.h"
#include "format/trace_writer.h"
#include "reader/trace_reader.h"

#define CHUNK_WORDS 2000u
#define MAX_WORDS 160u

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
	return harness_xorshift(&rng_state);
}

/* What the reader must give back: per event that claims a block, its
 * kind, site and words. */
struct want {
	unsigned kind;
	uint32_t site;
	uint32_t words;
	uint64_t v[MAX_WORDS];
};

struct gen {
	uint64_t ev[CHUNK_WORDS];
	uint32_t n;
	uint64_t t, base, seq;
	struct trace_writer *w;
	struct want *wants;
	size_t nwant, cap;
	uint64_t raw_bytes; /* what the blocks take as raw words */
	uint64_t events;
	int err;
	int shapes; /* 0: every shape; 1: arguments only */
	uint64_t arg_counter;
};

static void flush_chunk(struct gen *g)
{
	if (!g->n)
		return;
	struct sec_chunk hdr = { .tid = 77, .serial = 1, .seq = g->seq++, .base = g->base };
	memcpy(hdr.comm, "blocks", 7);
	g->err |= trace_writer_chunk(g->w, &hdr, g->ev, g->n) != 0;
	g->n = 0;
}

/* An event and, if words >= 0, its block, in one chunk. */
static void emit(struct gen *g, unsigned type, uint32_t site, const uint64_t *v, int words)
{
	uint32_t need = 1 + (words >= 0 ? 1 + (uint32_t)words : 0);
	g->t += 1 + rng() % 50;
	if (g->n && g->n + need > CHUNK_WORDS)
		flush_chunk(g);
	if (!g->n)
		g->base = g->t;
	g->ev[g->n++] = ev_make(type, site, g->t - g->base);
	g->events++;
	if (words >= 0) {
		g->ev[g->n++] = ev_make(EV_SWITCH, EV_DATA_SITE, (uint64_t)words);
		memcpy(&g->ev[g->n], v, (size_t)words * 8);
		g->n += (uint32_t)words;
		g->raw_bytes += (uint64_t)words * 8;
	}
}

static void want(struct gen *g, unsigned kind, uint32_t site, const uint64_t *v, int words)
{
	if (g->nwant == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 1024;
		g->wants = realloc(g->wants, g->cap * sizeof(*g->wants));
		if (!g->wants)
			abort();
	}
	struct want *x = &g->wants[g->nwant++];
	x->kind = kind;
	x->site = site;
	x->words = (uint32_t)words;
	memcpy(x->v, v, (size_t)words * 8);
}

/* A block of some shape into v: its word count. */
static int make_block(struct gen *g, uint64_t *v)
{
	unsigned shape = g->shapes ? 0 : (unsigned)(rng() % 8);
	int n;

	switch (shape) {
	case 0: /* arguments: two or three items, the same item words */
	case 1:
		n = 0;
		for (unsigned i = 0; i < 2 + shape; i++) {
			v[n++] = arg_item_word(0, i + 1, 1, 64, 8, 0);
			v[n++] = g->arg_counter * (i + 1) + (rng() % 4);
		}
		g->arg_counter++;
		return n;
	case 2: /* negative numbers */
		n = 1 + (int)(rng() % 6);
		for (int i = 0; i < n; i++)
			v[i] = (uint64_t) - (int64_t)(rng() % 1000);
		return n;
	case 3: /* random words: raw is smaller */
		n = 1 + (int)(rng() % 8);
		for (int i = 0; i < n; i++)
			v[i] = rng();
		return n;
	case 4: { /* a string's bytes after its item word */
		static const char text[] = "the quick brown fox jumps over the lazy dog, twice over";
		size_t len = 1 + rng() % (sizeof(text) - 1);
		v[0] = arg_item_word(0, 1, 5, 0, (uint32_t)len, 0);
		memset(&v[1], 0, (len + 7) / 8 * 8);
		memcpy(&v[1], text, len);
		return 1 + (int)((len + 7) / 8);
	}
	case 5: /* empty */
		return 0;
	case 6: /* longer than the reference */
		n = TRACE_DATA_REF_WORDS + 6;
		for (int i = 0; i < n; i++)
			v[i] = rng() % 3 ? (uint64_t)i : rng();
		return n;
	default: /* longer than the reader keeps */
		n = TRACE_DATA_MAX / 8 + 20;
		for (int i = 0; i < n; i++)
			v[i] = (uint64_t)i * 1000 + rng() % 7;
		return n;
	}
}

static void generate(struct gen *g, int rounds)
{
	uint64_t v[MAX_WORDS];
	int n;

	for (int r = 0; r < rounds; r++) {
		if (!g->shapes && r % 500 == 499) {
			/* A block cut by the end of its chunk (a crash mid-write):
			 * the writer drops it, its entry comes back without one,
			 * and the next chunk's blocks count from their own. */
			n = make_block(g, v);
			emit(g, EV_ENTRY, 1, v, n);
			want(g, TEV_ENTRY, 1, v, n);
			n = make_block(g, v);
			emit(g, EV_ENTRY, 2, NULL, -1);
			if (g->n + 1 + (uint32_t)n > CHUNK_WORDS)
				flush_chunk(g);
			g->ev[g->n++] = ev_make(EV_SWITCH, EV_DATA_SITE, (uint64_t)n + 5);
			memcpy(&g->ev[g->n], v, (size_t)n * 8);
			g->n += (uint32_t)n;
			flush_chunk(g);
			emit(g, EV_EXIT, 2, NULL, -1);
			emit(g, EV_EXIT, 1, NULL, -1);
			continue;
		}
		if (rng() % 5) {
			/* An entry with its block; its exit, with one or none. */
			n = make_block(g, v);
			emit(g, EV_ENTRY, 1, v, n);
			want(g, TEV_ENTRY, 1, v, n);
			if (rng() % 2) {
				n = make_block(g, v);
				emit(g, EV_EXIT, 1, v, n);
				want(g, TEV_EXIT, 1, v, n);
			} else {
				emit(g, EV_EXIT, 1, NULL, -1);
			}
		} else {
			/* Two entries, then an exit of the outer one (it names
			 * site 1 while site 2 is on top): its block is claimed
			 * by no event, and read all the same. */
			n = make_block(g, v);
			emit(g, EV_ENTRY, 1, v, n);
			want(g, TEV_ENTRY, 1, v, n);
			n = make_block(g, v);
			emit(g, EV_ENTRY, 2, v, n);
			want(g, TEV_ENTRY, 2, v, n);
			n = make_block(g, v);
			emit(g, EV_EXIT, 1, v, n);
		}
	}
	flush_chunk(g);
}

/* Write a trace of `rounds` rounds; 0 on success. */
static int write_trace(const char *path, struct gen *g, int rounds)
{
	FILE *f = fopen(path, "w+");
	struct trace_writer w;
	int err = 0;

	if (!f || trace_writer_open(&w, f, TRACER_FUNCTION_GRAPH))
		return -1;
	g->w = &w;
	static const char mod[] = "/usr/bin/prog";
	uint8_t buf[64];
	uint32_t m = 0;
	memcpy(buf, &m, 4);
	memcpy(buf + 4, mod, sizeof(mod) - 1);
	err |= trace_writer_section(&w, SEC_MODULE, buf, 4 + sizeof(mod) - 1);
	uint8_t sites[2 * 32], *sp = sites;
	for (uint32_t id = 1; id <= 2; id++) {
		char name[8];
		snprintf(name, sizeof(name), "fn%u", id);
		uint16_t nlen = (uint16_t)strlen(name);
		uint64_t ip = 0x401000 + id * 32;
		memcpy(sp, &id, 4);
		memcpy(sp + 4, &m, 4);
		memcpy(sp + 8, &ip, 8);
		memcpy(sp + 16, &nlen, 2);
		memcpy(sp + 18, name, nlen);
		sp += 18 + nlen;
	}
	err |= trace_writer_section(&w, SEC_SITES, sites, (uint64_t)(sp - sites));
	struct sec_clock clock = { .source = TRACE_CLOCK_TSC, .raw0 = 0, .ns0 = 0, .raw1 = 1ull << 40, .ns1 = 1ull << 40 };
	err |= trace_writer_section(&w, SEC_CLOCK, &clock, sizeof(clock));
	generate(g, rounds);
	err |= g->err;
	err |= trace_writer_section(&w, SEC_CLOCK, &clock, sizeof(clock));
	struct sec_end end = { .events = w.events, .chunks = w.chunks, .sites_traced = 2 };
	err |= trace_writer_section(&w, SEC_END, &end, sizeof(end));
	err |= trace_writer_finish(&w);
	fclose(f);
	return err;
}

/* Read the trace back: the events that carry data, against the wants.
 * Returns the number of mismatches; *claimed the blocks read. */
static size_t read_back(const char *path, const struct gen *g, size_t *claimed)
{
	char err[512];
	struct trace *t = trace_open(path, err, sizeof(err));
	size_t bad = 0, k = 0;

	*claimed = 0;
	if (!t) {
		printf("      trace_open: %s\n", err);
		return 1;
	}
	struct trace_iter it;
	if (trace_iter_init(&it, t, 0)) {
		trace_close(t);
		return 1;
	}
	struct trace_event e;
	int r;
	while ((r = trace_iter_next(&it, &e)) > 0) {
		if (e.kind != TEV_ENTRY && e.kind != TEV_EXIT)
			continue;
		/* An event claims a block, empty or not, exactly where a want
		 * says so: the wants are in event order. */
		if (k < g->nwant && g->wants[k].kind == e.kind && g->wants[k].site == e.site && e.data) {
			const struct want *x = &g->wants[k++];
			size_t len = (size_t)x->words * 8 < TRACE_DATA_MAX ? (size_t)x->words * 8 : TRACE_DATA_MAX;
			if (e.data_len != len || memcmp(e.data, x->v, len)) {
				if (bad < 3)
					printf("      block %zu (%u words): %u bytes back, %s\n", k - 1, x->words, e.data_len,
					       e.data_len == len ? "different words" : "a different length");
				bad++;
			}
			(*claimed)++;
		} else if (e.data && e.data_len) {
			if (bad < 3)
				printf("      an event (kind %u, site %u) has a block it should not\n", e.kind, e.site);
			bad++;
		}
	}
	if (r < 0) {
		printf("      iterator: %s\n", it.err);
		bad++;
	}
	bad += g->nwant - k;
	trace_iter_free(&it);
	trace_close(t);
	return bad;
}

int main(void)
{
	char path[4096];
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(path, sizeof(path), "%s/needle-data-blocks-%d.data", dir, (int)getpid());

	/* Every shape, mixed. */
	struct gen g = { 0 };
	CHECK_EQ(write_trace(path, &g, 20000), 0, "a trace with 20000 rounds of data blocks is written");
	size_t claimed;
	size_t bad = read_back(path, &g, &claimed);
	CHECK_EQ(bad, 0, "every claimed block reads back word for word (%zu blocks, every shape)", g.nwant);
	CHECK_EQ(claimed, g.nwant, "each block an event claims is given to that event, in order");
	free(g.wants);

	/* Arguments only: packed, the file a fraction of the raw words. */
	struct gen a = { .shapes = 1 };
	CHECK_EQ(write_trace(path, &a, 20000), 0, "a trace of argument blocks is written");
	bad = read_back(path, &a, &claimed);
	CHECK_EQ(bad, 0, "argument blocks read back word for word (%zu blocks)", a.nwant);
	FILE *f = fopen(path, "r");
	long size = -1;
	if (f && !fseek(f, 0, SEEK_END))
		size = ftell(f);
	if (f)
		fclose(f);
	CHECK(size > 0 && (uint64_t)size * 2 < a.raw_bytes,
	      "packed, the whole file takes %ld bytes where the blocks' raw words alone take %llu (under half)", size,
	      (unsigned long long)a.raw_bytes);
	free(a.wants);
	unlink(path);
	return harness_exit();
}
