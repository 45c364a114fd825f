/* event_writer.h - the recorder's hot path: one thread's events stored
 * into its chunk of the shared trace buffer (common/shm_layout.h).
 *
 * Invariants, for everything here and in event_writer.c:
 *   - It runs inside a traced function's entry or exit handler, on the
 *     thread being traced, possibly from a signal handler: no lock, no
 *     allocation, no call into the C library that may take one.
 *   - The inline part (event_room, event_write, event_write_args) makes no
 *     system call and no atomic read-modify-write: plain stores into the
 *     thread's own chunk, then a release store of its fill level.
 *   - The out-of-line part runs once per chunk (about 2,000 events) or
 *     when data is lost: one CAS on the free list, one fetch_add on the
 *     ring, prctl(PR_GET_NAME) (a thread's first chunk, then at most every
 *     few milliseconds, never in snapshot mode), and a futex wake only
 *     when the reader sleeps and the wake policy asks for one.  Lost events are counted with an atomic
 *     add: exact totals matter more than speed once data is lost.
 *   - shm, ring and use_tsc are set by recorder.c before the link is
 *     attached and cleared only after it is destroyed (a grace period
 *     later): a handler never sees them change.
 * Only recorder.c includes this header. */
#ifndef NEEDLE_EVENT_WRITER_H
#define NEEDLE_EVENT_WRITER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/record/args.h"
#include "agent/record/overwrite.h"
#include "common/shm_layout.h"
#include "common/tsc.h"
#include "needle.h"

/* The recording's buffer, its ring of published chunks, and its clock
 * (owned by recorder.c: recorder_start sets them, recorder_stop clears
 * them). */
extern struct shm_header *shm;
extern struct shm_ring_slot *ring;
extern int use_tsc;
/* The program image this process runs (shm_chunk.image): 0, or the
 * number an exec'ing process handed the program it became. */
extern uint32_t rec_image;

/* A thread's recording state: the link's per-thread storage. */
#define REC_OPEN_SITES 64 /* open calls a forked child re-enters (deeper: their exits are orphans) */

struct rec_thread {
	struct shm_chunk *chunk;
	uint64_t *pos, *end;
	uint64_t base;         /* timestamp the chunk's deltas count from */
	uint64_t seq;          /* number of the next chunk this thread takes */
	uint32_t chunk_idx;
	uint32_t depth;        /* function_graph calls open */
	/* -F / -N subtrees (uftrace's filters): the -F calls open, the -N
	 * calls open, and the depth recording stops at (0: max_depth), set
	 * by the innermost -F call open. */
	uint32_t in_count, out_count, limit;
	uint8_t lib_top;       /* the innermost call recorded is a library call */
	/* The span of the library the full path last found a library call's
	 * return address in (libcall_recorded): a return address there is a
	 * library's call of its own function, which the direct entry skips
	 * without the search.  Spans never change while the process runs. */
	uint64_t lib_lo, lib_hi;
	uint32_t tid;          /* 0 until the first chunk */
	uint32_t lost;         /* events dropped since the last chunk */
	uint32_t serial;       /* shm_chunk.serial of this thread lifetime */
	uint32_t pid, ppid;    /* shm_chunk's: set with tid, at the first chunk */
	char comm[16];         /* thread name, read when a chunk is taken (event_writer.c) */
	uint64_t comm_at;      /* the clock when it was read */
	struct overwrite_list full; /* snapshot mode: its full chunks, oldest first */
	/* A forked child's thread begins inside the calls its parent's had
	 * open: the sites of the open calls by depth (those below
	 * REC_OPEN_SITES), and how many of them the first chunk enters again
	 * (the depth at the fork: an exit may have run since). */
	uint32_t inherit;
	uint32_t open_site[REC_OPEN_SITES];
	/* The thread switched contexts (swapcontext): its depth and open
	 * sites mix the calls of its contexts, which are no one stack. */
	uint8_t switched;
	/* --estimate-return: the calls open, by stack pointer (recorder.c,
	 * estimate_entry); mapped at the thread's first such call. */
	struct estimated_call *est;
	uint32_t est_top, est_cap;
	/* The last entry recorded of a function that jumps to another
	 * entry-only one (SF_JUMPS: setjmp to __sigsetjmp): its stack
	 * pointer, and where the thread's next event goes after it
	 * (recorder.c, jumped_to). */
	uint64_t jump_sp;
	uint64_t *jump_pos;
	/* -W cpu: the CPU the thread's last watched event noted, plus one
	 * (0: none yet). */
	uint32_t watch_cpu;
};

/* The calling thread's recording state once it has taken a chunk (NULL
 * before), for what runs outside a handler: the process's exit. */
struct rec_thread *rec_thread_self(void);

/* Publish the thread's chunk: to the ring for needle record's drain, or,
 * in snapshot mode, to the thread's own list of full chunks. */
void chunk_publish(struct rec_thread *rt);
/* The calling thread's chunk published now, if it has one: before an
 * exec, which ends the thread without a thread exit (a failed exec takes
 * a fresh chunk at its next event). */
void chunk_publish_current(void);
/* The slow path: publish the full chunk, take a fresh one (timestamps
 * from now) for an event of this type and site taking words words, or
 * for none (REC_NO_EVENT: a chunk that carries a thread's lost count).
 * 1, or 0 when no chunk is free. */
#define REC_NO_EVENT 0xffu
int chunk_next(struct rec_thread *rt, uint64_t now, unsigned type, uint32_t site, size_t words);
/* One event dropped: counted for the thread and in the buffer header. */
void event_lost(struct rec_thread *rt);
/* An event and its data block (-A / -R), and one of register values only. */
int event_write_data(struct rec_thread *rt, unsigned type, uint32_t site, const struct arg_spec *as, int at_exit,
		     const struct needle_ctx *ctx);
int event_write_fixed(struct rec_thread *rt, unsigned type, uint32_t site, const struct arg_item *items, uint8_t cnt,
		      const struct needle_ctx *ctx);

static inline uint64_t clock_now(void)
{
	return use_tsc ? tsc_read() : monotonic_ns();
}

/* Room for words more words of the thread's events (the next one of this
 * type and site), in its chunk or a fresh one: 1 with *delta the next event's, or 0 when there is none
 * (the event is counted lost; so is a block bigger than a whole chunk,
 * a tiny --chunk-size, which no chunk would hold). */
static inline int event_room(struct rec_thread *rt, size_t words, unsigned type, uint32_t site, uint64_t *delta)
{
	uint64_t now = clock_now();

	*delta = now - rt->base;
	if (__builtin_expect(rt->pos + words > rt->end || *delta > EV_DELTA_MASK, 0)) {
		if (!chunk_next(rt, now, type, site, words) || rt->pos + words > rt->end) {
			event_lost(rt);
			return 0;
		}
		*delta = 0;
	}
	return 1;
}

/* Release: the events are visible before the fill level that covers
 * them, to a reader salvaging the chunk of a dead process (it loads used
 * with acquire).  A plain store under x86-TSO. */
static inline void events_publish(struct rec_thread *rt)
{
	atomic_store_explicit(&rt->chunk->used,
			      (uint32_t)((char *)rt->pos - (char *)shm_chunk_events(rt->chunk)),
			      memory_order_release);
}

static inline int event_write(struct rec_thread *rt, unsigned type, uint32_t site)
{
	uint64_t delta;

	if (!event_room(rt, 1, type, site, &delta))
		return 0;
	*rt->pos++ = ev_make(type, site, delta);
	events_publish(rt);
	return 1;
}

/* -W cpu (uftrace's --watch): every event notes the CPU its thread runs
 * on when it changed since the thread's last one (rec_watch_cpu set
 * before the recording starts; 0: not watched). */
extern int rec_watch_cpu;
/* The event, its values if as asks for some, and the CPU it runs on now,
 * when that changed (event_writer.c). */
int event_write_watched(struct rec_thread *rt, unsigned type, uint32_t site, const struct needle_ctx *ctx,
			const struct arg_spec *as, int at_exit);

/* The event, with its values when -A / -R asked for some. */
static inline int event_write_args(struct rec_thread *rt, unsigned type, uint32_t site, const struct needle_ctx *ctx,
				   const struct arg_spec *as, int at_exit)
{
	uint8_t cnt = as ? (at_exit ? as->exit_cnt : as->entry_cnt) : 0;

	if (__builtin_expect(rec_watch_cpu, 0))
		return event_write_watched(rt, type, site, ctx, as, at_exit);
	if (__builtin_expect(!cnt, 1))
		return event_write(rt, type, site);
	if (at_exit ? as->exit_fixed : as->entry_fixed)
		return event_write_fixed(rt, type, site, at_exit ? as->exit : as->entry, cnt, ctx);
	return event_write_data(rt, type, site, as, at_exit, ctx);
}

#endif
