/* thread_stack.h - per-thread stacks of open function_graph frames, shared
 * by the writer (which encodes an exit as "the innermost frame" when it can)
 * and the reader (which decodes it back), so both agree event by event.
 *
 * Invariants:
 *  - writer and reader apply the same operations in the same order to the
 *    stack of a thread: push on an entry, pop on an exit, a context switch,
 *    and, after lost events in a version 2 trace, a cut to the depth given
 *    by thread_stack_cut_depth();
 *  - a thread is (tid, serial): a recycled tid gets a stack of its own;
 *  - nothing here is O(depth) per event except thread_stack_find(), which
 *    scans down to the frame an exit names (the frames it passes are
 *    closed by that exit, so the scan is paid for by the pops), or the
 *    whole stack for an exit whose entry is not recorded (rare: a forked
 *    child returning from its parent's calls). */
#ifndef NEEDLE_THREAD_STACK_H
#define NEEDLE_THREAD_STACK_H

#include <stddef.h>
#include <stdint.h>

struct frame {
	uint32_t site;
	uint32_t node;      /* call tree node (reader, when a view asks for paths) */
	uint64_t ns;        /* entry time (reader) */
	uint64_t child_ns;  /* time spent in children (views) */
	uint32_t mark;      /* the view's mark of the call (reader, trace_iter_init_mark) */
	/* The reader's: the call's entry is not in this thread's recording,
	 * and its time is not known: TEV_BEFORE (entered before a snapshot's
	 * window) or TEV_INHERITED (a forked child's, entered in its parent),
	 * which its exit carries; 0 for any other. */
	uint32_t before;
	/* The kernel's share of the call, its children's included (reader,
	 * --kernel): in system calls, and off the CPU. */
	uint64_t syscall_ns, offcpu_ns;
};

struct context_stacks;

struct thread_stack {
	uint64_t key;       /* thread_key(tid, serial), in a stack_map */
	int used;           /* stack_map: the slot is taken */
	struct frame *v;
	size_t depth, cap;
	struct context_stacks *contexts; /* swapcontext: stacks set aside */
};

static inline uint64_t thread_key(uint32_t tid, uint32_t serial)
{
	return (uint64_t)serial << 32 | tid;
}

int thread_stack_push(struct thread_stack *s, uint32_t site, uint64_t ns);
/* Index of the innermost frame of site, or -1. */
long thread_stack_find(const struct thread_stack *s, uint32_t site);

/* After events were lost: the depth the current stack is cut back to,
 * given the number of the thread's calls still open (the chunk's
 * open_depth) and whether the chunk's first event is an exit (or unwind).
 * The program takes a chunk in the middle of writing an event, and it
 * counts a call as returned before it writes its exit: a chunk that
 * begins with an exit has that call open too.  The count covers the
 * frames of every context of the thread, so the frames set aside under
 * other contexts are taken off it first.  Never more than the current
 * depth. */
size_t thread_stack_cut_depth(const struct thread_stack *s, uint32_t open_depth, int first_is_exit);

/* Coroutines: each context of a thread has a stack of its own.  A context
 * switch event first names the context left (its stack is the current
 * one), then the context entered (its stack comes back, or starts empty).
 * Writer and reader apply the same events, so they agree. */
void thread_stack_switch_from(struct thread_stack *s, uint32_t context);
int thread_stack_switch_to(struct thread_stack *s, uint32_t context);
void thread_stack_free(struct thread_stack *s);

/* A map from thread_key() to stack (open addressing; grows). */
struct stack_map {
	struct thread_stack *slots;
	size_t cap, cnt;
};

struct thread_stack *stack_map_get(struct stack_map *m, uint64_t key);
void stack_map_free(struct stack_map *m);

#endif
