/* thread_state.h - what needle keeps per thread: the RCU reader word, the
 * recursion guard and the shadow stack of hijacked returns.
 *
 * A thread owns no state until its first traced call, which takes one from
 * a lock-free pool; the state goes back to the pool when the thread exits.
 * The hot path's only TLS is one initial-exec pointer (needle_thread), read
 * with a single %fs-relative load.  The agent's other thread-local words
 * are initial-exec too; with them, and the error words of the elfutils
 * linked in (global-dynamic, never on a hot path), libneedle's TLS block
 * is 76 bytes (`readelf -l`: PT_TLS), so a late dlopen of libneedle still
 * fits in the static TLS surplus.  Each of the agent's, and why it cannot
 * wait for a thread state (`grep -rn __thread src/agent`):
 *   needle_agent_busy (base/control_lock.c)   the agent's own calls are not traced
 *   altstack_lo/_hi (base/altstack.c)         the signal stack needle gave the thread
 *   mask_state (base/safe_copy.c)             SIGSEGV/SIGBUS masked while a copy faults
 *   blocks_sigtrap, program_blocks_stop       what the thread's mask blocks, known
 *     (patch/sigmask_watch.c)                 before its first traced call
 *   in_dlclose, in_wrapped_dlopen,            the loader's calls interposed by agent.c,
 *     dlopen_pending (agent.c)                which may run before any traced call */
#ifndef NEEDLE_THREAD_STATE_H
#define NEEDLE_THREAD_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct shm_chunk;

/* Machine stack known to belong to a state's owner is tracked in blocks of
 * 256 KiB: a window is three consecutive blocks, and sp is inside it when
 * (sp >> STACK_BLOCK_SHIFT) - base < 3. */
#define STACK_BLOCK_SHIFT 18
#define STACK_WINDOW_BLOCKS 3
#define STACK_SPARE_WINDOWS 4

struct thread_state {
	/* Read or written on every traced call: one cache line. */
	_Atomic uint64_t rcu_word; /* see rcu.h; written only by the owner */
	/* The stack pointer the outermost read section opened at (rcu.h),
	 * stored before the word: a jump above it leaves the section's
	 * opener (thread_state_before_jump). */
	_Atomic uint64_t rcu_sp;
	uint8_t *shadow;           /* base of this thread's shadow stack */
	size_t shadow_top;         /* bytes in use */
	size_t shadow_cap;         /* bytes reserved */
	/* ucontext_t entered by the last swapcontext. */
	const void *context;
	/* First block of the stack window the owner ran on last: a call whose
	 * stack pointer is outside it is checked against the spare windows,
	 * then against the owner's tid (thread_state_check_stack). */
	uint64_t stack_window;
	size_t shadow_high;        /* most bytes ever in use (pages touched) */

	uint64_t spare_windows[STACK_SPARE_WINDOWS];
	uint32_t spare_next;       /* round-robin victim among the spares */
	/* Counters summed by needle_get_stats(); per thread so that the hot
	 * path never writes a cache line another thread writes. */
	uint64_t recursion_skips;
	uint64_t shadow_overflows;
	uint64_t next_free;        /* pool link, see thread_state.c */
	/* Consumers' per-thread storage (dispatch/consumer.c): a block of
	 * THREAD_DATA_BYTES reserved beside the shadow stack, whose first
	 * THREAD_DATA_HEADER bytes say which reservation each slot holds. */
	uint8_t *data;
	uint8_t data_used;         /* the block was written: clear it at exit */
	uint64_t direct_c_entries; /* calls the direct path took in C (agent/graph_direct.c) */
	uint64_t full_entries;     /* calls the full path dispatched (dispatch.c) */
	uint32_t index;            /* position in the pool */
	uint32_t tid;              /* the owner's thread id */
} __attribute__((aligned(64)));

/* The calling thread's state pointer: NULL before its first traced call,
 * THREAD_STATE_GONE once its exit has returned the state to the pool,
 * THREAD_STATE_REFUSED when the pool was full at its first traced call (it
 * runs untraced, and is counted once). */
extern __thread struct thread_state *needle_thread __attribute__((tls_model("initial-exec")));
#define THREAD_STATE_GONE ((struct thread_state *)1)
#define THREAD_STATE_REFUSED ((struct thread_state *)2)
#define THREAD_STATE_SENTINEL_MAX 2u

static inline int thread_state_valid(const struct thread_state *ts)
{
	return (uintptr_t)ts > THREAD_STATE_SENTINEL_MAX;
}

/* Take a state for the calling thread; NULL if it is exiting, the pool is
 * full, or the thread shares its TLS with another (see thread_state.c). */
struct thread_state *thread_state_acquire(void);

static inline struct thread_state *thread_state_get(void)
{
	struct thread_state *ts = needle_thread;
	if (__builtin_expect(!thread_state_valid(ts), 0))
		return ts ? NULL : thread_state_acquire();
	return ts;
}

/* 1 if the thread running at sp is ts's owner.  Another thread can reach
 * ts only through TLS it shares with the owner (a raw clone without
 * CLONE_SETTLS); it must then run untraced, or both would push and pop one
 * shadow stack. */
int thread_state_check_stack_slow(struct thread_state *ts, uint64_t sp);

static inline int thread_state_owns_stack(struct thread_state *ts, uint64_t sp)
{
	if (__builtin_expect((sp >> STACK_BLOCK_SHIFT) - ts->stack_window < STACK_WINDOW_BLOCKS, 1))
		return 1;
	return thread_state_check_stack_slow(ts, sp);
}

/* The calling thread's own state, or NULL: for the interposed functions
 * (unwinding, swapcontext, pthread_exit), which must not act on the state
 * of another thread that shares this one's TLS. */
struct thread_state *thread_state_self(void);

/* The calling thread is about to jump (longjmp, siglongjmp) to target_sp.
 * A read section whose opener the jump leaves (its rcu_sp below
 * target_sp: a signal handler that interrupted a traced call's handler,
 * or needle's own code, and leaves with siglongjmp) would stay open for
 * good: the thread's traced calls would all be taken for recursion, and
 * every grace period would wait for it.  It is closed here.  A jump that
 * stays inside the section (a handler's own setjmp) keeps it, and so does
 * one that stays on the alternate signal stack when the section was
 * opened on the thread's own (the signal's handler jumping inside itself:
 * the interrupted section goes on when it returns). */
void thread_state_before_jump(uint64_t target_sp);

/* Raw forks (clone or clone3 without the C library) run no pthread_atfork
 * handlers.  A word in a MADV_WIPEONFORK page reads 0 in such a child.
 * It is checked where a stale copy of the parent's state would do harm,
 * not on every traced call: before the recorder writes an event (the
 * parent's chunk is shared memory), before a grace period (other
 * threads' RCU words are stale), and before a stack check concludes that
 * a thread is not the owner (the tid changed). */
extern volatile uint64_t *thread_state_fork_word __attribute__((visibility("hidden")));

static inline int thread_state_forked(void)
{
	return __builtin_expect(!*thread_state_fork_word, 0);
}

/* Bring the state pool (and the layers above, through their on_fork) into the
 * new process: run by the pthread_atfork child handler, or by the first
 * traced entry or exit of a raw fork's child. */
void thread_state_after_fork(void);

int thread_state_init(void);


/* Per-thread callbacks of the layers above, registered once at start-up
 * (in layer order: each runs in the order registered).  on_exit runs in a
 * thread with a state that exits, before the state is reused; on_fork in
 * a forked child, for the thread that forked, after the pool was fixed. */
struct thread_callbacks {
	void (*on_exit)(struct thread_state *ts);
	void (*on_fork)(struct thread_state *ts);
};
#define THREAD_CALLBACKS_MAX 4
/* 0, or -ENOSPC past THREAD_CALLBACKS_MAX registrations. */
int thread_state_register(const struct thread_callbacks *cb);

/* Bytes of per-thread storage for consumers, and the part of it that says
 * which reservation holds each slot (see dispatch/consumer.c). */
#define THREAD_DATA_BYTES 2048
#define THREAD_DATA_HEADER 64

/* Call fn for every state ever handed out (free ones included). */
void thread_state_for_each(void (*fn)(struct thread_state *ts, void *arg), void *arg);

/* Also count refused and TLS-sharing threads into these (the trace
 * buffer's header), so that a reader outside the process sees them. */
void thread_state_mirror_counters(_Atomic uint64_t *refused, _Atomic uint64_t *shared_tls);

/* Threads that found the pool full and run untraced. */
uint64_t thread_state_refused(void);
/* Threads that shared another thread's TLS and ran untraced. */
uint64_t thread_state_shared_tls(void);

#endif
