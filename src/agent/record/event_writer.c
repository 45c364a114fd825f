/* event_writer.c - the out-of-line half of the recorder's hot path (see
 * event_writer.h for the invariants every function here keeps): taking and
 * publishing chunks, counting lost events, and the events that carry a
 * data block.  Nothing here allocates or locks; the system calls are
 * prctl(PR_GET_NAME) at a thread's first chunk and then every few
 * milliseconds (never again in snapshot mode), and a futex wake when the
 * reader sleeps and the wake policy asks for one. */
#include <linux/futex.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/base/process_ids.h"
#include "agent/base/raw_syscall.h"
#include "agent/record/event_writer.h"

struct shm_header *shm;
struct shm_ring_slot *ring;
int use_tsc;
uint32_t rec_image;
/* The calling thread's state, for chunk_publish_current: set when the
 * thread takes a chunk (the slow path), valid for the thread's life. */
static __thread struct rec_thread *rec_self __attribute__((tls_model("initial-exec")));

struct rec_thread *rec_thread_self(void)
{
	return rec_self;
}

/* Clock units between two reads of a thread's name: 2 ms of a 2 GHz TSC,
 * 4 ms of CLOCK_MONOTONIC. */
#define NAME_REFRESH (1ull << 22)

static void wake_reader(void)
{
	if (!atomic_exchange(&shm->reader_waiting, 0))
		return;
	atomic_fetch_add(&shm->wake_word, 1);
	syscall(SYS_futex, &shm->wake_word, FUTEX_WAKE, 1, NULL, NULL, 0);
	atomic_fetch_add(&shm->producer_wakeups, 1);
}

void chunk_publish(struct rec_thread *rt)
{
	struct shm_chunk *c = rt->chunk;
	uint64_t pos;

	/* Release stores here pair with the reader's acquire loads of the
	 * slot's seq and the chunk's state (needle record's drain,
	 * record_drain.c): events, then the chunk's header, then the ring
	 * slot become visible in that order. */
	if (shm->snapshot_mode) {
		/* Nobody drains: the chunk joins the thread's ring.  Its
		 * generation is read while the chunk is still this thread's:
		 * once full, another thread may take it. */
		uint32_t gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
		atomic_store_explicit(&c->state, CHUNK_FULL, memory_order_release);
		overwrite_published(&rt->full, rt->chunk_idx, gen);
		rt->chunk = NULL;
		rt->pos = rt->end = NULL;
		return;
	}
	atomic_store_explicit(&c->state, CHUNK_FULL, memory_order_release);
	pos = atomic_fetch_add(&shm->ring_tail, 1);
	ring[pos % shm->chunk_count].chunk = rt->chunk_idx;
	atomic_store_explicit(&ring[pos % shm->chunk_count].seq, pos + 1, memory_order_release);
	rt->chunk = NULL;
	rt->pos = rt->end = NULL;
	if (!atomic_load_explicit(&shm->reader_waiting, memory_order_relaxed))
		return;
	if (shm->wake_mode == WAKE_WAIT) {
		uint64_t queued = pos + 1 - atomic_load(&shm->ring_head);
		if (queued >= shm->wake_chunks)
			wake_reader();
	} else if (shm->wake_mode == WAKE_PERCENT) {
		uint64_t queued = pos + 1 - atomic_load(&shm->ring_head);
		if (queued * 100 >= (uint64_t)shm->wake_percent * shm->chunk_count)
			wake_reader();
	}
}

void chunk_publish_current(void)
{
	struct rec_thread *rt = rec_self;

	/* The thread's own chunk only, as at name_at_exit: a raw fork's
	 * child that execs sees its parent's thread here, whose chunk the
	 * parent goes on writing; published twice, it would be freed twice
	 * and handed to two threads (shm_layout.h's free queue). */
	if (shm && rt && rt->chunk && rt->tid == (uint32_t)gettid())
		chunk_publish(rt);
}

/* At exit(), in each process (a forked child runs it too): the exiting
 * thread's name as it ends, into the chunk it still owns, which needle
 * record salvages once the process is gone.  A child that renamed itself
 * after its first chunk is then named as it named itself.  Snapshot mode
 * makes no system call for the recording after a thread's first chunk. */
__attribute__((destructor)) static void name_at_exit(void)
{
	struct rec_thread *rt = rec_self;

	/* The thread's own chunk only: a raw fork's or a vfork's child
	 * still sees its parent's thread here (another tid), whose chunk is
	 * the parent's. */
	if (shm && rt && rt->chunk && !shm->snapshot_mode && rt->tid == (uint32_t)gettid()) {
		prctl(PR_GET_NAME, rt->comm);
		memcpy(rt->chunk->comm, rt->comm, sizeof(rt->chunk->comm));
	}
}

/* Snapshot mode: every chunk begins by entering again the calls open
 * (chunk.before), since any chunk may be the oldest a snapshot keeps of
 * the thread, and without them the snapshot's graph of the thread would
 * begin with exits of calls it never saw entered, and a crash's last
 * stack would miss its outer calls.  A chunk taken for an exit counts
 * that call as returned already (the recorder lowers its depth first),
 * so that call is entered too, when it is the one open_site holds.  At
 * most REC_OPEN_SITES + 1 words per chunk of thousands, and never in
 * the way of the event the chunk was taken for; the times of these
 * entries are the chunk's, not the calls'.  None when the stack is
 * deeper than open_site holds (the deep calls' exits would close the
 * wrong frames of a recursion: they stay exits without entries, as a
 * fork's child does), nor in a thread that switched contexts, nor for a
 * chunk that carries no event. */
static void before_enter(struct rec_thread *rt, struct shm_chunk *c, unsigned type, uint32_t site, size_t words)
{
	uint32_t n = rt->depth;

	if (n > REC_OPEN_SITES || rt->switched || type == REC_NO_EVENT)
		return;
	if ((type == EV_EXIT || type == EV_UNWIND) && n < REC_OPEN_SITES && rt->open_site[n] == site)
		n++;
	if (!n || rt->pos + n + words > rt->end)
		return;
	for (uint32_t d = 0; d < n; d++)
		*rt->pos++ = ev_make(EV_ENTRY, rt->open_site[d], 0);
	c->before = n;
	events_publish(rt);
}

/* The slow path: publish the full chunk, take a fresh one. */
__attribute__((noinline)) int chunk_next(struct rec_thread *rt, uint64_t now, unsigned type, uint32_t site,
				       size_t words)
{
	if (rt->chunk)
		chunk_publish(rt);
	int64_t idx = shm_free_pop(shm);
	int reclaimed = 0;
	/* Snapshot mode: the oldest events go, not the newest, unless a
	 * snapshot is being taken (freeze_at: relaxed, a hint; the copy's
	 * generation checks keep it consistent either way). */
	if (idx < 0 && shm->snapshot_mode) {
		uint64_t freeze = atomic_load_explicit(&shm->freeze_at, memory_order_relaxed);
		if (!freeze || now < freeze)
			reclaimed = (idx = overwrite_take(&rt->full, shm)) >= 0;
	}
	if (idx < 0)
		return 0;
	struct shm_chunk *c = shm_chunk_at(shm, (uint32_t)idx);
	int first = !rt->tid;
	if (first) {
		rt->tid = (uint32_t)gettid(); /* once per thread */
		rt->pid = process_pid;
		rt->ppid = process_ppid;
		rt->serial = atomic_fetch_add_explicit(&shm->thread_serial, 1, memory_order_relaxed) + 1;
	}
	/* The thread's name, so that one set after its first traced call
	 * (pthread_setname_np) reaches the file: at its first chunk, then at
	 * most once per NAME_REFRESH of its clock (one per chunk cost 1.1 ns
	 * per traced call where prctl takes 1.1 us, a 2-vCPU VM),
	 * and at its exit (recorder.c, thread_exit); in snapshot mode, where
	 * the program must make no system call for the recording, at the
	 * first chunk only. */
	if (first || (!shm->snapshot_mode && now - rt->comm_at >= NAME_REFRESH)) {
		prctl(PR_GET_NAME, rt->comm);
		rt->comm_at = now;
	}
	c->tid = rt->tid;
	c->serial = rt->serial;
	c->pid = rt->pid;
	c->ppid = rt->ppid;
	c->image = rec_image;
	rec_self = rt;
	c->open_depth = rt->depth;
	memcpy(c->comm, rt->comm, sizeof(c->comm));
	c->seq = rt->seq++;
	c->base = now;
	c->lost_before = rt->lost;
	c->before = 0;
	atomic_store_explicit(&c->used, 0, memory_order_relaxed);
	atomic_store_explicit(&c->state, CHUNK_OWNED, memory_order_release);
	/* The rewrite of a chunk taken back is over: its generation is even
	 * again (release: the header before it, for a snapshot's copy). */
	if (reclaimed)
		atomic_fetch_add_explicit(&c->gen, 1, memory_order_release);
	rt->lost = 0;
	rt->chunk = c;
	rt->chunk_idx = (uint32_t)idx;
	rt->base = now;
	rt->pos = shm_chunk_events(c);
	rt->end = rt->pos + shm_chunk_capacity(shm) / sizeof(uint64_t);
	/* A forked child's first chunk: the calls open at the fork entered
	 * again, at the child's first event, so that its graph continues its
	 * parent's (as uftrace's does: fork's closing brace, then the child's
	 * calls under main) instead of starting with exits of unseen entries.
	 * At most REC_OPEN_SITES words, in a fresh chunk of thousands. */
	if (first && rt->inherit) {
		uint32_t n = rt->inherit;
		rt->inherit = 0;
		if (n <= REC_OPEN_SITES && rt->pos + n < rt->end) {
			/* The chunk's open depth says how many (seq 0, no loss
			 * before it: readers know them by that). */
			for (uint32_t d = 0; d < n; d++)
				*rt->pos++ = ev_make(EV_ENTRY, rt->open_site[d], 0);
			c->open_depth = n;
			events_publish(rt);
		}
	} else if (shm->snapshot_mode) {
		before_enter(rt, c, type, site, words);
	}
	/* -W in the flight recorder: the chunk that held the thread's last
	 * note may be overwritten, so each chunk notes the CPU again (the
	 * views drop a note that repeats the one before). */
	if (shm->snapshot_mode)
		rt->watch_cpu = 0;
	return 1;
}

__attribute__((noinline)) void event_lost(struct rec_thread *rt)
{
	rt->lost++;
	atomic_fetch_add_explicit(&shm->lost_events, 1, memory_order_relaxed);
}

/* A data block of register values only (the spec's items are fixed):
 * written in place, its item words from the table. */
__attribute__((noinline)) int event_write_fixed(struct rec_thread *rt, unsigned type, uint32_t site,
						       const struct arg_item *items, uint8_t cnt,
						       const struct needle_ctx *ctx)
{
	uint64_t delta;
	size_t n = 2u * cnt;

	if (!event_room(rt, 2 + n, type, site, &delta))
		return 0;
	uint64_t *p = rt->pos;
	p[0] = ev_make(type, site, delta);
	p[1] = ev_make(EV_SWITCH, EV_DATA_SITE, n);
	for (uint8_t k = 0; k < cnt; k++) {
		p[2 + 2 * k] = items[k].word;
		p[3 + 2 * k] = args_value(&items[k], ctx);
	}
	rt->pos = p + 2 + n;
	events_publish(rt);
	return 1;
}

int rec_watch_cpu;

/* glibc 2.35 and later register an rseq area for every thread (0 size:
 * not registered, tunable glibc.pthread.rseq=0); weak, for an older C
 * library that has neither symbol. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* The CPU the calling thread runs on: the kernel keeps it in the rseq
 * area's cpu_id (offset 4), one load; without rseq, the getcpu system
 * call, made directly (sched_getcpu is the C library's, which may be
 * traced). */
static uint32_t current_cpu(void)
{
	if (&__rseq_size && __rseq_size >= 8) {
		char *tp;
		__asm__("mov %%fs:0, %0" : "=r"(tp));
		int32_t cpu = *(const volatile int32_t *)(tp + __rseq_offset + 4);
		if (cpu >= 0)
			return (uint32_t)cpu;
	}
	unsigned cpu = 0;
	raw_syscall4(SYS_getcpu, (long)&cpu, 0, 0, 0);
	return cpu;
}

/* An event and its data block, in one chunk: the -A / -R values as asks
 * for (if any), then, when watched (-W cpu) and the thread runs on
 * another CPU than at its last event, the note of it.  The block must
 * follow its event, so both go to a fresh chunk when the most the block
 * can take does not fit, and the note is decided after that: a fresh
 * chunk of the flight recorder asks for one (chunk_next).  The values are
 * then written in place. */
static inline __attribute__((always_inline)) int event_write_block(struct rec_thread *rt, unsigned type,
								   uint32_t site, const struct arg_spec *as,
								   int at_exit, const struct needle_ctx *ctx,
								   int watched)
{
	uint8_t cnt = as ? (at_exit ? as->exit_cnt : as->entry_cnt) : 0;
	size_t most = cnt ? (at_exit ? as->exit_words_max : as->entry_words_max) : 0;
	uint64_t delta;

	if (!event_room(rt, 2 + most + (watched ? 2 : 0), type, site, &delta))
		return 0;
	size_t n = cnt ? args_payload(as, at_exit, ctx, rt->pos + 2) : 0;
	if (watched) {
		uint32_t cpu = current_cpu();
		if (rt->watch_cpu != cpu + 1) {
			rt->pos[2 + n] = arg_item_word(ARG_KIND_WATCH, ARG_WATCH_CPU, 'u', 32, 8, 0);
			rt->pos[3 + n] = cpu;
			n += 2;
			rt->watch_cpu = cpu + 1;
		}
	}
	rt->pos[0] = ev_make(type, site, delta);
	if (n || cnt) {
		rt->pos[1] = ev_make(EV_SWITCH, EV_DATA_SITE, n);
		rt->pos += 2 + n;
	} else {
		rt->pos += 1;
	}
	events_publish(rt);
	return 1;
}

__attribute__((noinline)) int event_write_data(struct rec_thread *rt, unsigned type, uint32_t site,
						      const struct arg_spec *as, int at_exit,
						      const struct needle_ctx *ctx)
{
	return event_write_block(rt, type, site, as, at_exit, ctx, 0);
}

/* -W cpu: any event; one whose thread moved gets the note. */
__attribute__((noinline)) int event_write_watched(struct rec_thread *rt, unsigned type, uint32_t site,
						 const struct needle_ctx *ctx, const struct arg_spec *as, int at_exit)
{
	return event_write_block(rt, type, site, as, at_exit, ctx, 1);
}
