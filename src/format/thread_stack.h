/* thread_stack.h - per-thread stacks of open function_graph frames, shared
 * by the writer (which encodes an exit as "the innermost frame" when it can)
 * and the reader (which decodes it back), so both agree event by event. */
#ifndef NEEDLE_THREAD_STACK_H
#define NEEDLE_THREAD_STACK_H

#include <stddef.h>
#include <stdint.h>

struct frame {
	uint32_t site;
	uint64_t ns;        /* entry time (reader) */
	uint64_t child_ns;  /* time spent in children (views) */
};

struct context_stacks;

struct thread_stack {
	uint32_t tid;
	struct frame *v;
	size_t depth, cap;
	struct context_stacks *contexts; /* swapcontext: stacks set aside */
};

int thread_stack_push(struct thread_stack *s, uint32_t site, uint64_t ns);
/* Index of the innermost frame of site, or -1. */
long thread_stack_find(const struct thread_stack *s, uint32_t site);

/* Coroutines: each context of a thread has a stack of its own.  A context
 * switch event first names the context left (its stack is the current
 * one), then the context entered (its stack comes back, or starts empty).
 * Writer and reader apply the same events, so they agree. */
void thread_stack_switch_from(struct thread_stack *s, uint32_t context);
int thread_stack_switch_to(struct thread_stack *s, uint32_t context);
void thread_stack_free(struct thread_stack *s);

/* A map from tid to stack (open addressing; grows). */
struct stack_map {
	struct thread_stack *slots;
	size_t cap, cnt;
};

struct thread_stack *stack_map_get(struct stack_map *m, uint32_t tid);
void stack_map_free(struct stack_map *m);

#endif
