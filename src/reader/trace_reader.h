/* trace_reader.h - reads needle.data for the views, streaming: metadata is
 * loaded, chunks are indexed by offset and decoded one at a time per
 * thread, and events of all threads come out merged in time order.  Memory
 * grows with the number of chunks and threads, not with the events. */
#ifndef NEEDLE_TRACE_READER_H
#define NEEDLE_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "thread_stack.h"
#include "trace_format.h"

struct trace_site {
	uint32_t id;
	uint32_t module;
	uint64_t func_ip;
	const char *name;
};

struct trace_chunk_ref {
	uint64_t offset;     /* of the section payload */
	uint64_t length;
	uint64_t seq;
	uint32_t lost_before;
	uint32_t event_count;
};

struct trace_thread {
	uint32_t tid;
	char name[64];
	struct trace_chunk_ref *chunks;
	size_t chunk_cnt, chunk_cap;
	uint64_t events, lost;
};

struct trace {
	FILE *f;
	char path[4096];
	struct trace_file_header header;
	int tracer;
	struct sec_clock clock;
	int have_clock;
	struct sec_process process;
	char **argv;
	int have_process;
	struct sec_end end;
	char **modules;
	size_t module_cnt;
	struct trace_site *sites; /* by id */
	size_t site_cap;
	char *names;              /* arena of site names */
	size_t names_len, names_cap;
	char **demangled;         /* demangled C++ names, owned */
	size_t demangled_cnt;
	struct trace_thread *threads;
	size_t thread_cnt, thread_cap;
	uint64_t first_raw;       /* smallest chunk base */
	double ns_per_raw;
};

/* Open and index a trace.  On failure returns NULL and puts in err a
 * message that says what is wrong with the file. */
struct trace *trace_open(const char *path, char *err, size_t errlen);
void trace_close(struct trace *t);
/* Check the CRC of every chunk (open checks the other sections).  0, or
 * -1 with err saying which chunk is damaged. */
int trace_verify(struct trace *t, char *err, size_t errlen);

const char *trace_site_name(const struct trace *t, uint32_t site);
/* Nanoseconds since the first event of the trace. */
uint64_t trace_ns(const struct trace *t, uint64_t raw);
struct trace_thread *trace_thread_find(struct trace *t, uint32_t tid);

enum trace_event_kind {
	TEV_ENTRY = 1,
	TEV_EXIT = 2,
	TEV_LOST = 3,     /* events were dropped here (count in .lost) */
	TEV_SWITCH = 4,   /* the thread switched to coroutine context .site */
};

/* Flags of an exit. */
#define TEV_UNMATCHED 0x1 /* its own exit was lost or unwound: closed by an outer exit */
#define TEV_OPEN 0x2      /* never returned before the trace ended */
#define TEV_ORPHAN 0x4    /* an exit whose entry is not in the trace */
#define TEV_UNWOUND 0x8   /* ended by longjmp, an exception or thread exit */
#define TEV_FLAT 0x10     /* an entry with no exit (recorded by the function tracer) */

struct trace_event {
	uint64_t ns;
	uint64_t entry_ns;  /* exits: when the call began */
	uint64_t child_ns;  /* exits: time spent in traced children */
	uint64_t lost;
	uint32_t tid;
	uint32_t site;
	uint32_t depth;     /* nesting depth of the call, 0 = outermost */
	uint8_t kind;
	uint8_t flags;
};

struct trace_cursor;

struct trace_iter {
	struct trace *t;
	struct trace_cursor *cursors;
	size_t cursor_cnt;
	size_t *heap;
	size_t heap_cnt;
	struct trace_cursor *last; /* cursor of the last event returned */
	char err[256];
};

/* Iterate over all threads (tid 0) or one.  0 or -1 with it->err set. */
int trace_iter_init(struct trace_iter *it, struct trace *t, uint32_t tid);
/* 1: an event, 0: the end, -1: the file is damaged (it->err says how). */
int trace_iter_next(struct trace_iter *it, struct trace_event *ev);
/* The next event of the same thread as the last one returned, without
 * consuming it: 1, 0 (none) or -1. */
int trace_iter_peek_same_thread(struct trace_iter *it, struct trace_event *ev);
void trace_iter_free(struct trace_iter *it);

#endif
