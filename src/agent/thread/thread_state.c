/* thread_state.c - the pool of per-thread states (see thread_state.h).
 *
 * The pool is a list of segments, each one MAP_NORESERVE mapping that
 * holds a run of states, their consumer storage blocks and one shadow
 * stack per state.  Segment 0 (16 states) is mapped at start-up; the
 * next ones, 16, 32, ... up to 1024 states each, when the first thread
 * whose index falls in them needs a state.  So the address space a
 * process keeps is about that of the threads it ran at once (4 MiB for up
 * to 16 threads with 256 KiB shadow stacks), not that of the largest
 * pool it might ever need: a program under `ulimit -v` keeps its limit,
 * and a core dump its size.  Taking a state is one atomic operation and
 * no system call, lock or allocation, but for the first thread of a new
 * segment, which maps it (one mmap per 1024 threads at most).  Nothing is
 * committed until touched: the kernel backs the pages a thread touches.
 * Segments are never unmapped, and a state never moves (its thread keeps
 * a pointer to it in TLS, its RCU word is read by grace periods), so the
 * RCU writer can walk every state that ever existed without racing a
 * free.  Returned states go on a Treiber stack whose head packs a 32-bit
 * tag with the index, which defeats ABA without a double-width CAS; reuse
 * is LIFO, which keeps the resident pages few when threads come and go.
 * A state whose shadow stack went deep gives those pages back when its
 * thread exits (madvise, on the exit path, not the call path).
 *
 * Ownership.  A state belongs to the thread whose tid it records, and the
 * only way to it is that thread's TLS pointer.  A thread made by a raw
 * clone without CLONE_SETTLS shares its creator's TLS, and would push and
 * pop the creator's shadow stack from another stack at the same time.
 * Stacks are what tell the two apart without a system call per call: the
 * state remembers the stack windows (three 256 KiB blocks) where its
 * owner was seen, a call outside them asks the kernel for the caller's
 * tid once, and the window is remembered if it matches.  A thread that
 * does not match runs untraced and is counted once (shared_tls).
 *
 * Invariants: states_used never exceeds max_states as seen by a reader
 * (it is advanced by CAS, not by an add that could overshoot); a state is
 * handed out only after its segment's pointer was published (a locked
 * CAS, before the new owner's first RCU word store), so a walker that
 * finds a segment unpublished skips no reader; a state is on the free
 * list or owned by exactly one thread; a thread refused a state is
 * refused once (its TLS says so), not at every call; an index whose
 * segment could not be mapped is never handed out (its thread is refused
 * and counted). */
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/base/control_lock.h"
#include "agent/base/log.h"
#include "agent/base/process_ids.h"
#include "agent/base/raw_syscall.h"
#include "agent/base/altstack.h"
#include "agent/thread/thread_state.h"

#define MAX_STATES_DEFAULT (1u << 20) /* concurrent traced threads */
#define MAX_STATES_LIMIT (1u << 22)   /* NEEDLE_MAX_THREADS beyond this is cut */
#define SHADOW_DEFAULT (256 * 1024)
#define SHADOW_KEEP (16 * 1024)       /* resident shadow kept across reuse */

__thread struct thread_state *needle_thread __attribute__((tls_model("initial-exec")));

/* Segments: 0 holds indices [0, 16); k in 1..6 holds [2^(k+3), 2^(k+4));
 * from 7 on, 1024 each.  Doubling first keeps a process of a few threads
 * to a few MiB; the cap keeps the last segment of a big one from
 * reserving twice what it uses. */
#define SEG_FIRST_SHIFT 4
#define SEG_MAX_SHIFT 10
#define SEG_DOUBLING (SEG_MAX_SHIFT - SEG_FIRST_SHIFT + 1) /* segments 0..6 */
#define SEG_COUNT (SEG_DOUBLING + (MAX_STATES_LIMIT >> SEG_MAX_SHIFT))

struct segment {
	struct thread_state *states;
	uint8_t *datas;   /* DATA_SKEW, then a storage block per state */
	uint8_t *shadows; /* a shadow stack per state */
};

static _Atomic(struct segment *) segments[SEG_COUNT];
static int pool_ready;
static uint32_t max_states;
static _Atomic uint32_t states_used; /* never-used states start here */
static _Atomic uint64_t free_head;   /* (tag << 32) | (index + 1); 0 = empty */
static _Atomic uint64_t threads_refused;
static pthread_key_t exit_key;
static size_t shadow_bytes = SHADOW_DEFAULT;

/* The state array, the shadow stacks and the storage blocks all start on
 * page boundaries, so a state's RCU word, the bottom of its shadow stack
 * and its storage block would share their low 12 address bits: a load of
 * the storage right after the store to the RCU word then waits on that
 * store (4K aliasing), measured at about 8 ns per recorded call, and the
 * same for the shadow frame read back at an exit (about 20 ns per call
 * with an exit handler).  Both are shifted off the page boundary. */
#define DATA_SKEW 1344

static inline uint32_t seg_of(uint32_t idx)
{
	if (idx < (1u << SEG_FIRST_SHIFT))
		return 0;
	if (idx < (1u << SEG_MAX_SHIFT))
		return (uint32_t)(31 - __builtin_clz(idx)) - (SEG_FIRST_SHIFT - 1);
	return SEG_DOUBLING - 1 + (idx >> SEG_MAX_SHIFT);
}

static inline uint32_t seg_base(uint32_t seg)
{
	if (seg < SEG_DOUBLING)
		return seg ? 1u << (seg + SEG_FIRST_SHIFT - 1) : 0;
	return (seg - (SEG_DOUBLING - 1)) << SEG_MAX_SHIFT;
}

/* States in seg: its share of the doubling, cut at max_states. */
static inline uint32_t seg_states(uint32_t seg)
{
	uint32_t n = seg < SEG_DOUBLING ? (seg ? 1u << (seg + SEG_FIRST_SHIFT - 1) : 1u << SEG_FIRST_SHIFT)
					: 1u << SEG_MAX_SHIFT;
	uint32_t base = seg_base(seg);
	if (base >= max_states)
		return 0;
	return n > max_states - base ? max_states - base : n;
}

static inline size_t page_up(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

static size_t seg_bytes(uint32_t n, size_t *states_len, size_t *datas_len)
{
	*states_len = page_up((size_t)n * sizeof(struct thread_state) + sizeof(struct segment));
	*datas_len = page_up(DATA_SKEW + (size_t)n * THREAD_DATA_BYTES);
	return *states_len + *datas_len + (size_t)n * shadow_bytes;
}

/* Segment seg, mapped and published if it was not.  The one system call
 * a state can cost past the first traced call's gettid: the first thread
 * whose index falls in a segment pays for one mmap, once per up to 1024
 * threads.  Lock-free: threads that race here each map one, the first to
 * publish wins and the others unmap theirs.  NULL when the kernel refuses
 * the mapping (an address-space limit). */
static struct segment *seg_get(uint32_t seg)
{
	struct segment *sg = atomic_load_explicit(&segments[seg], memory_order_acquire);
	size_t states_len, datas_len, len;

	if (__builtin_expect(sg != NULL, 1))
		return sg;
	uint32_t n = seg_states(seg);
	len = seg_bytes(n, &states_len, &datas_len);
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* The descriptor lives after the states, which start on the page
	 * boundary (DATA_SKEW is measured from there). */
	struct segment *mine = (struct segment *)(p + (size_t)n * sizeof(struct thread_state));
	mine->states = (struct thread_state *)p;
	mine->datas = p + states_len;
	mine->shadows = p + states_len + datas_len;
	/* Release: the descriptor's fields before the pointer, for the
	 * acquire loads of walkers and of state_at. */
	if (atomic_compare_exchange_strong_explicit(&segments[seg], &sg, mine, memory_order_acq_rel,
						    memory_order_acquire))
		return mine;
	munmap(p, len);
	return sg;
}

/* The state of an index already handed out (its segment is published). */
static inline struct thread_state *state_at(uint32_t idx)
{
	uint32_t seg = seg_of(idx);
	struct segment *sg = atomic_load_explicit(&segments[seg], memory_order_acquire);
	return &sg->states[idx - seg_base(seg)];
}

static struct thread_callbacks callbacks[THREAD_CALLBACKS_MAX];
static int callback_cnt;

int thread_state_register(const struct thread_callbacks *cb)
{
	if (callback_cnt == THREAD_CALLBACKS_MAX)
		return -ENOSPC;
	callbacks[callback_cnt++] = *cb;
	return 0;
}

/* Before init, and where MADV_WIPEONFORK is missing: never reads 0. */
static const uint64_t fork_word_fallback = 1;
volatile uint64_t *thread_state_fork_word = (volatile uint64_t *)&fork_word_fallback;

/* Threads seen sharing another's TLS, counted once each: a small open
 * addressing set of tids, lock-free.  Past its size, every further sighting
 * counts (an overcount of a program that is already hostile). */
#define SHARED_TLS_SLOTS 256
static _Atomic uint32_t shared_tls_tids[SHARED_TLS_SLOTS];
static _Atomic uint64_t shared_tls_threads;
static _Atomic(_Atomic uint64_t *) mirror_refused, mirror_shared_tls;

/* Threads between their load of a mirror pointer and their add through
 * it: an unwired mirror (a detached recording) is unmapped right after. */
static _Atomic int mirror_users;

void thread_state_mirror_counters(_Atomic uint64_t *refused, _Atomic uint64_t *shared_tls)
{
	atomic_store(&mirror_refused, refused);
	atomic_store(&mirror_shared_tls, shared_tls);
	/* Seq-cst store above, then load of mirror_users, against
	 * count_into's increment, then load of the pointer (Dekker): either
	 * it sees the new pointer, or this loop sees it counted. */
	while (atomic_load(&mirror_users))
		sched_yield();
}

static void count_into(_Atomic uint64_t *counter, _Atomic(_Atomic uint64_t *) *mirror)
{
	atomic_fetch_add(counter, 1);
	atomic_fetch_add(&mirror_users, 1);
	_Atomic uint64_t *m = atomic_load(mirror);
	if (m)
		atomic_fetch_add(m, 1);
	atomic_fetch_sub(&mirror_users, 1);
}

static void note_shared_tls(uint32_t tid)
{
	uint32_t h = (tid * 2654435761u) % SHARED_TLS_SLOTS;

	for (uint32_t i = 0; i < SHARED_TLS_SLOTS; i++, h = (h + 1) % SHARED_TLS_SLOTS) {
		uint32_t cur = atomic_load_explicit(&shared_tls_tids[h], memory_order_relaxed);
		if (cur == tid)
			return;
		if (!cur) {
			uint32_t expect = 0;
			if (atomic_compare_exchange_strong(&shared_tls_tids[h], &expect, tid)) {
				count_into(&shared_tls_threads, &mirror_shared_tls);
				return;
			}
			if (expect == tid)
				return;
		}
	}
	count_into(&shared_tls_threads, &mirror_shared_tls);
}

static inline uint64_t window_of(uint64_t sp)
{
	return (sp >> STACK_BLOCK_SHIFT) - 1;
}

/* The tid of the thread that pthread_self() describes, without a system
 * call: glibc computes a thread's CPU-time clock id from the tid in its
 * descriptor (MAKE_THREAD_CPUCLOCK: ~tid << 3 | flags). */
static uint32_t descriptor_tid(void)
{
	clockid_t cid;

	if (pthread_getcpuclockid(pthread_self(), &cid))
		return 0;
	return (uint32_t)(~(uint32_t)cid >> 3);
}

static uint32_t raw_gettid(void)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_gettid) : "rcx", "r11", "memory");
	return (uint32_t)ret;
}

int thread_state_check_stack_slow(struct thread_state *ts, uint64_t sp)
{
	uint64_t block = sp >> STACK_BLOCK_SHIFT;

	for (uint32_t i = 0; i < STACK_SPARE_WINDOWS; i++) {
		uint64_t w = ts->spare_windows[i];
		if (w && block - w < STACK_WINDOW_BLOCKS) {
			ts->spare_windows[i] = ts->stack_window;
			ts->stack_window = w;
			return 1;
		}
	}
	/* A stack this thread was not seen on: a signal handler on an
	 * alternate stack, a coroutine, a deep recursion, or another thread
	 * sharing this TLS.  One system call settles it; the window is
	 * remembered, so a thread pays it once per 256 KiB of stack.  This
	 * runs before dispatch's recursion guard, where the C library's gettid
	 * may itself be a site: the system call is made directly.  (Not by
	 * marking the thread busy: a thread that shares this TLS would read
	 * the mark too.) */
	if (thread_state_forked()) {
		needle_agent_busy++; /* a raw fork's child: its own memory */
		thread_state_after_fork();
		needle_agent_busy--;
	}
	uint32_t tid = raw_gettid();
	if (tid != ts->tid) {
		note_shared_tls(tid);
		return 0;
	}
	ts->spare_windows[ts->spare_next] = ts->stack_window;
	ts->spare_next = (ts->spare_next + 1) % STACK_SPARE_WINDOWS;
	ts->stack_window = window_of(sp);
	return 1;
}

struct thread_state *thread_state_self(void)
{
	struct thread_state *ts = needle_thread;

	if (!thread_state_valid(ts))
		return NULL;
	return thread_state_owns_stack(ts, (uint64_t)(uintptr_t)__builtin_frame_address(0)) ? ts : NULL;
}

/* Is sp on the alternate stack [lo, hi)? */
static int on_stack(uint64_t sp, uint64_t lo, uint64_t hi)
{
	return sp - lo < hi - lo;
}

void thread_state_before_jump(uint64_t target_sp)
{
	struct thread_state *ts = needle_thread;

	/* The word first: a jump with no section open (nearly every one)
	 * costs two loads. */
	if (!thread_state_valid(ts) || !atomic_load_explicit(&ts->rcu_word, memory_order_relaxed))
		return;
	/* This thread's own (a raw clone that shares its creator's TLS must
	 * never close the creator's section): the stack window, then the
	 * thread id, one system call, on this rare path only. */
	if (thread_state_self() != ts || ts->tid != (uint32_t)raw_syscall4(SYS_gettid, 0, 0, 0, 0))
		return;
	uint64_t opener = atomic_load_explicit(&ts->rcu_sp, memory_order_relaxed), lo, hi;
	/* Addresses compare only on one stack.  The alternate signal stack
	 * the thread set (the kernel's, when the interposer did not see it
	 * set and a handler runs on it) is the other. */
	altstack_last(&lo, &hi);
	if (lo == hi)
		altstack_kernel_on(&lo, &hi);
	int target_alt = lo < hi && on_stack(target_sp, lo, hi), opener_alt = lo < hi && on_stack(opener, lo, hi);
	/* A jump that stays on the alternate stack (a signal's handler jumping
	 * inside itself) leaves the section it interrupted on the thread's
	 * stack open, for that section to close when the handler returns; one
	 * from the alternate stack to the thread's leaves a section opened on
	 * the alternate stack.  On one stack, a target above the opener is
	 * outside it.  (Stacks the thread switches between with swapcontext
	 * are not told apart: a coroutine's jump inside its own stack, above
	 * another's interrupted section, would close that one.) */
	int leaves = target_alt != opener_alt ? opener_alt : target_sp > opener;
	if (leaves)
		/* Release, as rcu_read_unlock's store: what the section read
		 * is done with before a writer can see it closed. */
		atomic_store_explicit(&ts->rcu_word, 0, memory_order_release);
}

static void free_push(struct thread_state *ts)
{
	uint64_t head = atomic_load(&free_head), next;
	do {
		ts->next_free = head & 0xffffffffu;
		next = ((head >> 32) + 1) << 32 | (ts->index + 1);
	} while (!atomic_compare_exchange_weak(&free_head, &head, next));
}

static struct thread_state *free_pop(void)
{
	uint64_t head = atomic_load(&free_head), next;
	struct thread_state *ts;
	do {
		uint32_t idx = head & 0xffffffffu;
		if (!idx)
			return NULL;
		ts = state_at(idx - 1);
		/* ts->next_free may be stale if another thread popped ts meanwhile;
		 * the tag makes that CAS fail. */
		next = ((head >> 32) + 1) << 32 | (ts->next_free & 0xffffffffu);
	} while (!atomic_compare_exchange_weak(&free_head, &head, next));
	return ts;
}

static void thread_exit(void *arg)
{
	struct thread_state *ts = arg;

	needle_agent_busy++; /* the callbacks' calls are the agent's */
	for (int i = 0; i < callback_cnt; i++)
		if (callbacks[i].on_exit)
			callbacks[i].on_exit(ts);
	/* The next owner starts with no consumer storage (a block never
	 * written is not touched: its pages stay uncommitted). */
	if (ts->data_used) {
		memset(ts->data, 0, THREAD_DATA_HEADER);
		ts->data_used = 0;
	}
	/* Frames still hijacked on this thread never return now. */
	ts->shadow_top = 0;
	if (ts->shadow_high > SHADOW_KEEP)
		madvise(ts->shadow + SHADOW_KEEP, ts->shadow_high - SHADOW_KEEP, MADV_DONTNEED);
	ts->shadow_high = 0;
	atomic_store(&ts->rcu_word, 0);
	needle_thread = THREAD_STATE_GONE;
	free_push(ts);
	needle_agent_busy--;
}

/* A pool index for a new state, or -1 when the pool is full.  A CAS, not
 * fetch_add: a reader of states_used (a grace period, a forked child)
 * must never see it past max_states, even for a moment. */
static int64_t take_index(void)
{
	uint32_t idx = atomic_load_explicit(&states_used, memory_order_relaxed);

	do {
		if (idx >= max_states)
			return -1;
	} while (!atomic_compare_exchange_weak(&states_used, &idx, idx + 1));
	return idx;
}

struct thread_state *thread_state_acquire(void)
{
	struct thread_state *ts;

	if (needle_thread || !pool_ready)
		return NULL;
	if (thread_state_forked())
		thread_state_after_fork();
	/* The one system call of a thread's first traced call: the tid that
	 * the state's stack windows are later checked against.  A thread
	 * whose tid is not the one its TLS belongs to shares that TLS. */
	uint32_t tid = (uint32_t)gettid();
	/* A raw fork's child keeps its parent's descriptor (and its tid): its
	 * one thread is the new process's main thread, tid == pid, which a
	 * thread sharing another's TLS never is. */
	if (tid != descriptor_tid() && tid != (uint32_t)getpid()) {
		note_shared_tls(tid);
		return NULL;
	}
	if (!(ts = free_pop())) {
		int64_t idx = take_index();
		if (idx < 0) {
			count_into(&threads_refused, &mirror_refused);
			needle_thread = THREAD_STATE_REFUSED;
			return NULL;
		}
		uint32_t seg = seg_of((uint32_t)idx);
		struct segment *sg = seg_get(seg);
		if (!sg) {
			/* The index stays unused: nothing else may take it. */
			count_into(&threads_refused, &mirror_refused);
			needle_thread = THREAD_STATE_REFUSED;
			return NULL;
		}
		uint32_t off = (uint32_t)idx - seg_base(seg);
		ts = &sg->states[off];
		ts->index = (uint32_t)idx;
		/* The bottom of the shadow stack 2 KiB away from the state's
		 * RCU word in address bits 0-11 (see DATA_SKEW): the exit path
		 * stores the word and then loads the frame. */
		size_t skew = (((uintptr_t)ts & 4095) + 2048) & 4095;
		ts->shadow = sg->shadows + (size_t)off * shadow_bytes + skew;
		ts->shadow_cap = shadow_bytes - skew;
		ts->data = sg->datas + DATA_SKEW + (size_t)off * THREAD_DATA_BYTES;
	}
	ts->tid = tid;
	ts->stack_window = window_of((uint64_t)(uintptr_t)__builtin_frame_address(0));
	memset(ts->spare_windows, 0, sizeof(ts->spare_windows));
	/* pthread_setspecific on a low key index writes into the thread's
	 * descriptor: no allocation, no syscall. */
	pthread_setspecific(exit_key, ts);
	needle_thread = ts;
	return ts;
}

void thread_state_after_fork(void)
{
	struct thread_state *self = needle_thread;

	/* Only the forking thread survives: every other state is orphaned.
	 * Clear their RCU words so that grace periods do not wait on them. */
	for (uint32_t seg = 0; seg < SEG_COUNT; seg++) {
		struct segment *sg = atomic_load_explicit(&segments[seg], memory_order_acquire);
		if (!sg)
			continue;
		for (uint32_t i = 0, n = seg_states(seg); i < n; i++)
			if (&sg->states[i] != self)
				atomic_store(&sg->states[i].rcu_word, 0);
	}
	if (thread_state_valid(self)) {
		self->tid = (uint32_t)gettid();
		process_ids_forked(self->tid);
		for (int i = 0; i < callback_cnt; i++)
			if (callbacks[i].on_fork)
				callbacks[i].on_fork(self);
	} else {
		process_ids_forked(0); /* no tid read yet: getpid, once */
	}
	if (thread_state_fork_word != &fork_word_fallback)
		*thread_state_fork_word = 1;
}

static void after_fork_child(void)
{
	/* Traced code run by an atfork handler registered before ours may
	 * have done the fix-up already (it found the wiped word): once is
	 * enough.  Without MADV_WIPEONFORK there is no word to tell. */
	if (thread_state_fork_word == &fork_word_fallback || thread_state_forked())
		thread_state_after_fork();
}

static void fork_word_init(void)
{
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED)
		return;
	if (madvise(page, 4096, MADV_WIPEONFORK)) {
		/* Linux < 4.14: raw forks are not detected (docs/design.md). */
		munmap(page, 4096);
		return;
	}
	*(volatile uint64_t *)page = 1;
	thread_state_fork_word = page;
}

int thread_state_init(void)
{
	process_ids_init();
	const char *env = getenv("NEEDLE_SHADOW_BYTES");
	if (env && atoi(env) >= 4096)
		shadow_bytes = ((size_t)atoi(env) + 4095) & ~(size_t)4095;
	env = getenv("NEEDLE_MAX_THREADS");
	max_states = env && atoi(env) > 0 ? (uint32_t)atoi(env) : MAX_STATES_DEFAULT;
	if (max_states > MAX_STATES_LIMIT)
		max_states = MAX_STATES_LIMIT;
	/* The first segment now: a process whose address space cannot hold
	 * even that runs untraced from the start, with the reason, rather
	 * than refusing its threads one by one. */
	if (!seg_get(0))
		return -ENOMEM;
	pool_ready = 1;
	if (pthread_key_create(&exit_key, thread_exit))
		return -EAGAIN;
	fork_word_init();
	pthread_atfork(NULL, NULL, after_fork_child);
	return 0;
}

void thread_state_for_each(void (*fn)(struct thread_state *ts, void *arg), void *arg)
{
	/* Acquire: a state's index is taken before its segment is
	 * published, so indices below n whose segment is not published yet
	 * belong to no thread and are skipped. */
	uint32_t n = atomic_load(&states_used);
	for (uint32_t seg = 0; seg < SEG_COUNT && seg_base(seg) < n; seg++) {
		struct segment *sg = atomic_load_explicit(&segments[seg], memory_order_acquire);
		if (!sg)
			continue;
		uint32_t cnt = seg_states(seg);
		if (cnt > n - seg_base(seg))
			cnt = n - seg_base(seg);
		for (uint32_t i = 0; i < cnt; i++)
			fn(&sg->states[i], arg);
	}
}

uint64_t thread_state_refused(void)
{
	return atomic_load(&threads_refused);
}

uint64_t thread_state_shared_tls(void)
{
	return atomic_load(&shared_tls_threads);
}
