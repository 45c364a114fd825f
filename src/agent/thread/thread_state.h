/* thread_state.h - what needle keeps per thread: the RCU reader word, the
 * recursion guard and the shadow stack of hijacked returns.
 *
 * A thread owns no state until its first traced call, which takes one from
 * a lock-free pool; the state goes back to the pool when the thread exits.
 * The only TLS is one initial-exec pointer, so the hot path reads it with a
 * single %fs-relative load and a late dlopen of libneedle still fits in
 * the static TLS surplus. */
#ifndef NEEDLE_THREAD_STATE_H
#define NEEDLE_THREAD_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct shm_chunk;

struct thread_state {
	_Atomic uint64_t rcu_word; /* see rcu.h; written only by the owner */
	uint32_t index;            /* position in the pool */
	uint8_t *shadow;           /* base of this thread's shadow stack */
	size_t shadow_top;         /* bytes in use */
	size_t shadow_cap;         /* bytes reserved */
	size_t shadow_high;        /* most bytes ever in use (pages touched) */
	/* ucontext_t entered by the last swapcontext; read on every traced
	 * entry, so it sits on the same cache line as the fields above. */
	const void *context;
	/* Counters summed by needle_get_stats(); per thread so that the hot
	 * path never writes a cache line another thread writes. */
	uint64_t recursion_skips;
	uint64_t shadow_overflows;
	uint64_t next_free;        /* pool link, see thread_state.c */
	/* The recorder's chunk of the shared trace buffer (recorder.c). */
	struct shm_chunk *rec_chunk;
	uint64_t *rec_pos, *rec_end;
	uint64_t rec_base;         /* timestamp the chunk's deltas count from */
	uint64_t rec_seq;          /* number of the next chunk this thread takes */
	uint32_t rec_chunk_idx;
	uint32_t rec_depth;        /* function_graph frames open */
	uint32_t rec_tid;
	uint32_t rec_lost;         /* events dropped since the last chunk */
	uint32_t rec_serial;       /* shm_chunk.serial of this thread lifetime */
	char rec_comm[16];         /* thread name, read when the first chunk is taken */
	uint8_t blocks_sigtrap;    /* sigmask_watch.c */
} __attribute__((aligned(64)));

/* The calling thread's state pointer: NULL before its first traced call,
 * THREAD_STATE_GONE once its exit has returned the state to the pool. */
extern __thread struct thread_state *needle_thread __attribute__((tls_model("initial-exec")));
#define THREAD_STATE_GONE ((struct thread_state *)1)

/* Take a state for the calling thread; NULL if it is exiting or the pool
 * cannot grow. */
struct thread_state *thread_state_acquire(void);

static inline struct thread_state *thread_state_get(void)
{
	struct thread_state *ts = needle_thread;
	if (__builtin_expect((uintptr_t)ts <= 1, 0))
		return ts ? NULL : thread_state_acquire();
	return ts;
}

int thread_state_init(void);

/* Called when a thread with a state exits, before the state is reused:
 * first the frames hook (dispatch closes the calls still open), then the
 * exit hook (the recorder hands its chunk over). */
extern void (*thread_state_frames_hook)(struct thread_state *ts);
extern void (*thread_state_exit_hook)(struct thread_state *ts);
extern void (*thread_state_mask_hook)(struct thread_state *ts);

/* Call fn for every state ever handed out (free ones included). */
void thread_state_for_each(void (*fn)(struct thread_state *ts, void *arg), void *arg);

/* Threads that found the pool full and run untraced. */
uint64_t thread_state_refused(void);

#endif
