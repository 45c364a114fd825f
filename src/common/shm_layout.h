/* shm_layout.h - the shared-memory trace buffer between a traced process
 * (the producer: libneedle's recorder) and `needle record` (the reader).
 *
 * The buffer is a fixed pool of chunks, so its size does not depend on the
 * number of threads.  A thread owns one chunk at a time and appends 8-byte
 * events to it with plain stores; the only atomic read-modify-writes are
 * per chunk (taking a chunk from the free list, publishing it to the ring).
 * After each event the producer release-stores the chunk's fill level, so
 * if the process dies the reader still finds every event written before.
 *
 *   [shm_header][ring: chunk_count slots][free queue: chunk_count u32]
 *   [chunk 0][chunk 1]...
 *
 * Event word (little-endian u64):
 *   bits 63..62  type: 0 entry, 1 exit, 2 exit by unwinding (longjmp,
 *                exception, thread exit), 3 context switch (swapcontext):
 *                the site field is EV_SWITCH_TO | context id when the
 *                thread enters a context, the bare id of the context it
 *                leaves otherwise
 *   bits 61..40  site id (22 bits)
 *   bits 39..0   timestamp - chunk base (clock units, see clock_source)
 */
#ifndef NEEDLE_SHM_LAYOUT_H
#define NEEDLE_SHM_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#define SHM_MAGIC 0x314d4853454c444eULL /* "NEEDLSHM1" */
#define SHM_VERSION 7

#define EV_ENTRY 0u
#define EV_EXIT 1u
#define EV_UNWIND 2u
#define EV_SWITCH 3u
/* In an entry's site field: no exit will follow (the function tracer). */
#define EV_ENTRY_FLAT (1u << 21)
#define EV_SWITCH_TO (1u << 21)
#define EV_CONTEXT_MASK (EV_SWITCH_TO - 1)
#define EV_TYPE_SHIFT 62
#define EV_SITE_SHIFT 40
#define EV_SITE_MASK ((1u << 22) - 1)
#define EV_DELTA_BITS 40
#define EV_DELTA_MASK ((1ull << EV_DELTA_BITS) - 1)
/* A data block (needle record -A / -R): an EV_SWITCH word whose site is
 * EV_DATA_SITE (a context id no context gets: ids count up from 1) and
 * whose delta field is the number of words that follow, in the same
 * chunk, right after the entry or exit event they belong to.  Those words
 * are items: an item word (arg_item_word), then its value's words. */
#define EV_DATA_SITE EV_CONTEXT_MASK
/* Events of a chunk's n words that are calls or switches, not data. */
static inline uint32_t shm_count_events(const uint64_t *ev, uint32_t n)
{
	uint32_t cnt = 0;
	for (uint32_t i = 0; i < n; i++, cnt++)
		if ((unsigned)(ev[i] >> EV_TYPE_SHIFT) == EV_SWITCH &&
		    ((uint32_t)(ev[i] >> EV_SITE_SHIFT) & EV_SITE_MASK) == EV_DATA_SITE) {
			i += (uint32_t)(ev[i] & EV_DELTA_MASK);
			cnt--;
		}
	return cnt;
}
/* Where a value comes from: an integer or floating-point argument
 * register (index 1-6 / 1-8), a word of the stack at the entry (kind
 * INT, index 7 to ARG_INDEX_MAX: the (index-6)-th word above the return
 * address), or at the exit rax, rdx, xmm0, xmm1 (a return value, or the
 * second half of a small struct returned in two) or the x87 st0 (a long
 * double returned).  A long double is format f with 80 bits, its ten
 * bytes in two value words (len 16): from two stack words at the entry,
 * from st0 at the exit. */
enum arg_kind {
	ARG_KIND_INT = 0,
	ARG_KIND_FP = 1,
	ARG_KIND_RET = 2,
	ARG_KIND_RET_FP = 3,
	ARG_KIND_RET_RDX = 4,
	ARG_KIND_RET_XMM1 = 5,
	ARG_KIND_RET_ST0 = 6,
	/* Not a register: a reading of the process's state that uftrace's
	 * trigger -T FUNC@read=... asks for at the entry and the exit (the
	 * views show them as comments, and the exit's as a difference). */
	ARG_KIND_READ = 7,
	/* Not a register: what record -W (uftrace's --watch) watches, added
	 * to the block of the first event after it changed (index
	 * ARG_WATCH_CPU: the CPU the thread runs on). */
	ARG_KIND_WATCH = 8,
};
#define ARG_KIND_LAST ARG_KIND_READ
enum arg_watch { ARG_WATCH_CPU = 1 };
/* ARG_KIND_READ's indexes: /proc/self/statm's size, resident and shared
 * (KB), getrusage's major and minor page faults (RUSAGE_SELF). */
enum arg_read {
	ARG_READ_STATM_SIZE = 1,
	ARG_READ_STATM_RSS = 2,
	ARG_READ_STATM_SHARED = 3,
	ARG_READ_FAULT_MAJOR = 4,
	ARG_READ_FAULT_MINOR = 5,
};
#define ARG_READ_LAST ARG_READ_FAULT_MINOR
#define ARG_BITS_LONG_DOUBLE 80
#define ARG_INDEX_MAX 255
static inline int arg_kind_is_ret(unsigned kind) { return kind >= ARG_KIND_RET && kind <= ARG_KIND_RET_ST0; }
/* An item word: the value's register (kind, index), its format letter,
 * its size in bits (for a string: 0 read, 1 NULL, 2 unreadable), the
 * bytes of value words that follow (len) and, for a field of a struct
 * passed in registers, its byte offset in the register (shift). */
static inline uint64_t arg_item_word(unsigned kind, unsigned index, unsigned fmt, unsigned bits, uint32_t len,
				     unsigned shift)
{
	return (uint64_t)(kind & 0xff) | (uint64_t)(index & 0xff) << 8 | (uint64_t)(fmt & 0xff) << 16 |
	       (uint64_t)(bits & 0xff) << 24 | (uint64_t)(len & 0xffff) << 32 | (uint64_t)(shift & 0xff) << 48;
}
static inline uint32_t arg_item_len(uint64_t item) { return (uint32_t)(item >> 32) & 0xffff; }
static inline unsigned arg_item_shift(uint64_t item) { return (unsigned)(item >> 48) & 0xff; }

static inline uint64_t ev_make(unsigned type, uint32_t site, uint64_t delta)
{
	return (uint64_t)type << EV_TYPE_SHIFT | (uint64_t)(site & EV_SITE_MASK) << EV_SITE_SHIFT | delta;
}
static inline unsigned ev_type(uint64_t ev) { return (unsigned)(ev >> EV_TYPE_SHIFT); }
static inline uint32_t ev_site(uint64_t ev) { return (uint32_t)(ev >> EV_SITE_SHIFT) & EV_SITE_MASK; }
static inline uint64_t ev_delta(uint64_t ev) { return ev & EV_DELTA_MASK; }

enum chunk_state { CHUNK_FREE = 0, CHUNK_OWNED = 1, CHUNK_FULL = 2 };

struct shm_chunk {
	_Atomic uint32_t state;     /* enum chunk_state */
	uint32_t tid;
	uint64_t seq;               /* the owning thread's chunk number: 0, 1, ... */
	uint64_t base;              /* timestamp the event deltas count from */
	_Atomic uint32_t used;      /* bytes of events, release-stored per event */
	uint32_t lost_before;       /* events the thread dropped before this chunk */
	char comm[16];              /* the thread's name when it took this chunk */
	/* Recorded calls of the thread still open (entry written, exit to
	 * come) when it took this chunk: after lost events a reader cuts its
	 * stack of open calls back to this depth, because every call above it
	 * returned while events were being dropped.  A chunk taken to write an
	 * exit already counts that call as returned (the recorder lowers its
	 * depth first), so readers keep one more call when the chunk's first
	 * event is an exit (docs/file-format.md). */
	uint32_t open_depth;
	/* Tells apart two threads that had the same tid (a recycled tid, or
	 * a forked child's thread): unique among the threads of every process
	 * that records into this buffer, taken from shm_header.thread_serial
	 * once per thread lifetime.  0 in chunks of older producers. */
	uint32_t serial;
	/* Snapshot mode: a seqlock whose write side is the reclaim, and the
	 * arbiter of who may write over a full chunk.  A producer takes a
	 * full chunk back by compare-and-swapping gen from the even value it
	 * saw to the next, odd one (recorder.c), before any byte of it
	 * changes, and makes it even again once the header is rewritten.  A
	 * snapshot keeps a copy only if gen was even and the same before and
	 * after it. */
	_Atomic uint32_t gen;
	/* The program image the thread ran when it took this chunk: 0 for the
	 * program needle record started (and its forked children), N for the
	 * Nth program a traced process exec'ed into (shm_header.images).  Its
	 * site ids are that image's own; needle record turns them into the
	 * trace's (meta_protocol.h's I records). */
	uint32_t image;
	/* The thread's process and that process's parent, read once per
	 * thread lifetime at its first chunk (a forked child's thread reads
	 * its own): needle record writes them as the trace's TASK records,
	 * for the task tree (graph --task, uftrace's task.txt). */
	uint32_t pid, ppid;
	/* Snapshot mode: how many of the chunk's first events enter again the
	 * calls the thread had open when it took the chunk (outermost first,
	 * at most REC_OPEN_SITES, the call whose exit the chunk was taken for
	 * included), so that whichever chunk a snapshot's window of the
	 * thread begins with knows the calls it begins inside.  The snapshot
	 * keeps them in that chunk and drops them from the others
	 * (cli/record/snapshot.c).  0 when streaming. */
	uint32_t before;
	uint32_t reserved;
	/* events follow, up to the chunk size */
};

struct shm_ring_slot {
	_Atomic uint64_t seq;       /* position + 1 once chunk is valid */
	uint64_t chunk;
};

enum wake_mode { WAKE_WAIT = 0, WAKE_POLL = 1, WAKE_PERCENT = 2 };
#define WAKE_WAIT_POLL_MS 50
enum clock_source { CLOCK_SOURCE_TSC = 1, CLOCK_SOURCE_MONOTONIC = 2 };
/* AGENT_FAILED: the request cannot be met (no patchable entry, filters
 * that match nothing) and the agent ended the program before main, so
 * that nothing runs untraced by mistake.  AGENT_UNTRACED: the agent could
 * not do its part (out of memory...) and lets the program run untraced.
 * Either way shm_header.agent_error and the meta file say why. */
/* AGENT_DETACHED: an attached recording ended in a process that runs on;
 * no producer writes any more, and the chunks threads still own are to be
 * salvaged by their fill level. */
enum agent_state {
	AGENT_STARTING = 0,
	AGENT_RECORDING = 1,
	AGENT_FAILED = 2,
	AGENT_UNTRACED = 3,
	AGENT_DETACHED = 4,
};

/* Threads held from outside.  A thread that blocks every signal (a
 * runtime's helper thread: jemalloc's background thread, a libuv worker)
 * can be stopped neither by the agent's stop signal nor kept from an
 * int3; needle record can stop it with ptrace.  The agent asks, needle
 * record's hold thread (src/cli/record/hold.c) answers:
 *
 *   agent: pid, cnt, tids[], then req += 1 (odd: hold them), futex wake
 *   needle record: seizes and interrupts each, pcs[i] = its rip (0: not
 *     held, gone), status, then done = req, futex wake
 *   agent: may change pcs[] (a thread inside bytes about to change goes
 *     where the same instructions run), then req += 1 (even: release)
 *   needle record: sets each held thread's rip to pcs[i], makes a system
 *     call that the stop ended with EINTR again, detaches, done = req
 *
 * req and done are release-stored after the fields they publish and
 * acquire-loaded before those are read (each side's store pairs with the
 * other side's load).  The futexes are shared (not FUTEX_PRIVATE): two
 * processes.  served_by is the hold thread's tid while it runs, 0 when
 * nobody answers (the agent then refuses, as without it).  A request the
 * agent stopped waiting for is released by the next one: needle record
 * always serves the newest req, so a hold it served late is let go. */
#define SHM_HOLD_MAX 32
struct shm_hold {
	_Atomic uint32_t served_by;
	_Atomic uint32_t req;
	_Atomic uint32_t done;
	int32_t status;         /* 0, or -errno of the first thread that could not be held */
	int32_t pid;            /* the asking process */
	uint32_t cnt;
	int32_t tids[SHM_HOLD_MAX];
	uint64_t pcs[SHM_HOLD_MAX];
	/* Set by the asker (0 from an older agent): answer once every thread
	 * is asked to stop (PTRACE_INTERRUPT), with the PCs 0, and wait for
	 * the stops only at the release.  A thread asleep in the kernel when
	 * interrupted can no longer run user code before its stop; the agent
	 * tells that it was from its CPU clock, and waits for the others
	 * itself (thread_stop.c). */
	uint32_t no_wait;
};

struct shm_header {
	uint64_t magic;
	uint32_t version;
	uint32_t chunk_size;        /* bytes, including the chunk header */
	uint64_t total_size;
	uint32_t chunk_count;
	uint32_t wake_mode;         /* enum wake_mode */
	uint32_t wake_percent;      /* WAKE_PERCENT: ring fill that wakes the reader */
	uint32_t clock_source;      /* enum clock_source, set by the producer */

	/* Producer side. */
	_Atomic uint64_t free_head; /* free queue: chunks popped so far (shm_free_pop) */
	_Atomic uint64_t ring_tail;
	_Atomic uint64_t lost_events;
	_Atomic uint64_t producer_wakeups; /* futex wakes made by producers */
	_Atomic uint32_t agent_state;
	int32_t agent_error;
	_Atomic uint32_t thread_serial; /* last serial handed to a thread */
	/* WAKE_WAIT: chunks queued that make a producer wake the sleeping
	 * reader (half the buffer, not every chunk: each wake is a system
	 * call in the program, and spikes its latency; the reader also looks
	 * on its own every WAKE_WAIT_POLL_MS). */
	uint32_t wake_chunks;
	/* Threads that ran untraced, each counted once: the thread-state pool
	 * was full, or the thread shared another's TLS (raw clone). */
	_Atomic uint64_t threads_refused;
	_Atomic uint64_t threads_shared_tls;
	/* Functions with calls recorded entry-only under function_graph,
	 * each counted once: their return address pointed into generated
	 * code (a JIT's, V8's builtins), which walks that slot, so it was
	 * left alone (NEEDLE_ENTRY_NO_EXIT). */
	_Atomic uint64_t funcs_entry_only;
	/* Snapshot mode (needle record --snapshot): chunks are never
	 * drained nor put on the ring; a producer with no free chunk writes
	 * over its own oldest full one, or the oldest of all when it holds
	 * less than its share.  A trigger fills in trigger_* and then bumps
	 * snapshot_requests (release; the reader loads it with acquire and
	 * then reads trigger_*, which a later trigger may overwrite: the
	 * newest wins). */
	uint32_t snapshot_mode;
	uint32_t trigger_kind;      /* enum snapshot_reason */
	_Atomic uint64_t snapshot_requests;
	uint32_t trigger_site;
	uint32_t trigger_tid;
	uint64_t trigger_raw;       /* clock value when it fired */
	uint64_t trigger_duration;  /* the call's length in clock units (duration triggers) */
	/* From this clock value on (0: never), producers write over no full
	 * chunk: the past a snapshot is about to copy stays as it is, and
	 * what does not fit in free chunks is dropped and counted lost.  Set
	 * by a trigger (its time plus --trigger-after) or by needle record
	 * before a copy; cleared by needle record once it has copied. */
	_Atomic uint64_t freeze_at;

	/* Reader side, on its own cache lines. */
	_Atomic uint64_t ring_head __attribute__((aligned(64)));
	_Atomic uint64_t free_tail; /* free queue: chunks pushed so far (shm_free_push) */
	_Atomic uint32_t reader_waiting;
	_Atomic uint32_t wake_word;
	uint64_t pad2[5];

	struct shm_hold hold;

	/* Written by the agent of needle record -p before it says it has
	 * detached (0 from an agent older than these fields): its stops of
	 * the process's threads, as thread_stop_get_hold_stats gives them. */
	uint64_t agent_stops;
	uint64_t agent_stop_window_max_ns;
	uint64_t agent_outside_hold_max_ns;
	/* An attach in steps (agent_discover_in_steps): agent_in_steps is set
	 * before agent_state turns AGENT_RECORDING (which is stored with
	 * release), agent_all_live once every object loaded then records;
	 * needle record says it is recording at that point. */
	_Atomic uint32_t agent_in_steps;
	_Atomic uint32_t agent_all_live;
	/* Programs a traced process exec'ed into (agent/record/exec_follow.c):
	 * the last image number handed out (fetch-add by the exec'ing
	 * process, before its exec; a failed exec wastes one). */
	_Atomic uint32_t images;
	uint32_t trigger_image;     /* the image whose site trigger_site is (written with it) */
	/* The meta file's end once the first image's agent has written its
	 * start-up records (0 before): every later record block, of any
	 * image, reserves its bytes here with a fetch-add and copies them in
	 * through its own mapping (meta_protocol.h). */
	_Atomic uint64_t meta_tail;
	/* needle record --kernel (src/cli/record/kernel.c): kernel_on is set
	 * by needle record once the kernel's events are open; kernel_paused
	 * by the agent on `needle ctl PID kernel off` (1) and `kernel on`
	 * (0), and read by needle record at each drain, which stops or
	 * starts the events (relaxed: a request is seen at the next drain,
	 * 10 ms at most, and nothing else is published with it). */
	_Atomic uint32_t kernel_on;
	_Atomic uint32_t kernel_paused;
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct shm_header) <= 4096, "the header fits SHM_HEADER_SIZE");

/* Why a snapshot was taken (SEC_SNAPSHOT's reason). */
enum snapshot_reason {
	SNAPSHOT_END = 1,       /* the program ended */
	SNAPSHOT_CRASH = 2,     /* the program died of a signal */
	SNAPSHOT_SIGNAL = 3,    /* SIGUSR2 to needle record */
	SNAPSHOT_CTL = 4,       /* needle ctl PID snapshot */
	SNAPSHOT_ENTERED = 5,   /* --trigger FUNC: FUNC was entered */
	SNAPSHOT_DURATION = 6,  /* --trigger FUNC>DURATION: a call took longer */
};

#define SHM_HEADER_SIZE 4096u

static inline struct shm_ring_slot *shm_ring(struct shm_header *h)
{
	return (struct shm_ring_slot *)((char *)h + SHM_HEADER_SIZE);
}

static inline uint64_t shm_chunks_offset(uint32_t chunk_count)
{
	uint64_t ring = (uint64_t)chunk_count * (sizeof(struct shm_ring_slot) + sizeof(uint32_t));
	return (SHM_HEADER_SIZE + ring + 4095) & ~4095ull;
}

static inline struct shm_chunk *shm_chunk_at(struct shm_header *h, uint32_t idx)
{
	return (struct shm_chunk *)((char *)h + shm_chunks_offset(h->chunk_count) + (uint64_t)idx * h->chunk_size);
}

static inline uint64_t *shm_chunk_events(struct shm_chunk *c)
{
	return (uint64_t *)(c + 1);
}

static inline uint32_t shm_chunk_capacity(const struct shm_header *h)
{
	return h->chunk_size - (uint32_t)sizeof(struct shm_chunk);
}

/* The free chunks, in the order the reader freed them: a queue, not a
 * stack.  A stack hands a producer the chunk the reader has just read,
 * whose lines are still in the reader's cache, so each line the producer
 * then writes first has to be taken back from the other core: measured on
 * make bench's loop, streaming cost 37-40 ns a call with a stack and
 * 27-30 with a queue, where the flight recorder (nothing read) costs 25.
 * A queue hands out the chunk freed longest ago, whose lines the reader
 * no longer holds.
 *
 * One pusher, many poppers:
 *   - Only needle record pushes, from one thread (its drain, and the
 *     buffer's set-up); free_tail is its alone.
 *   - Producers pop with one compare-and-swap of free_head, a 64-bit
 *     count that never wraps (no ABA).  A pop is its CAS: a producer
 *     killed before it took nothing, one killed after owns the chunk (the
 *     reader salvages it by state), and nothing in the queue is ever half
 *     taken, so no pusher can wait on a dead popper.
 *   - A slot read by a popper that then loses its CAS may have been
 *     rewritten by a newer push: the value is discarded with the failed
 *     CAS.  The pusher reuses slot tail % chunk_count only when
 *     head > tail - chunk_count, which always holds: the queue never holds
 *     more than chunk_count - 1 chunks while one is being pushed, since
 *     every chunk is in one place at a time.
 * Barriers: the pusher's store of the slot and the chunk's state, then
 * the release store of free_tail, pairs with a popper's acquire load of
 * free_tail before it reads the slot.  A popper's CAS of free_head is a
 * release, and its load an acquire, so that a popper that sees head h
 * also sees a free_tail at least as new as the one the popper that wrote
 * h compared it against (never a head ahead of the tail it sees). */
static inline _Atomic uint32_t *shm_free_ring(struct shm_header *h)
{
	return (_Atomic uint32_t *)((char *)h + SHM_HEADER_SIZE + (uint64_t)h->chunk_count * sizeof(struct shm_ring_slot));
}

static inline void shm_free_push(struct shm_header *h, uint32_t idx)
{
	uint64_t tail = atomic_load_explicit(&h->free_tail, memory_order_relaxed);

	atomic_store_explicit(&shm_chunk_at(h, idx)->state, CHUNK_FREE, memory_order_relaxed);
	atomic_store_explicit(&shm_free_ring(h)[tail % h->chunk_count], idx, memory_order_relaxed);
	atomic_store_explicit(&h->free_tail, tail + 1, memory_order_release);
}

/* Index of a free chunk, or -1 if none. */
static inline int64_t shm_free_pop(struct shm_header *h)
{
	_Atomic uint32_t *q = shm_free_ring(h);
	uint64_t head = atomic_load_explicit(&h->free_head, memory_order_acquire);

	for (;;) {
		uint64_t tail = atomic_load_explicit(&h->free_tail, memory_order_acquire);
		if (head == tail)
			return -1;
		uint32_t idx = atomic_load_explicit(&q[head % h->chunk_count], memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&h->free_head, &head, head + 1, memory_order_acq_rel,
							  memory_order_acquire))
			return idx;
	}
}

#endif
