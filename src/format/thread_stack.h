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

struct thread_stack {
	uint32_t tid;
	struct frame *v;
	size_t depth, cap;
};

int thread_stack_push(struct thread_stack *s, uint32_t site, uint64_t ns);
/* Index of the innermost frame of site, or -1. */
long thread_stack_find(const struct thread_stack *s, uint32_t site);

/* A map from tid to stack (open addressing; grows). */
struct stack_map {
	struct thread_stack *slots;
	size_t cap, cnt;
};

struct thread_stack *stack_map_get(struct stack_map *m, uint32_t tid);
void stack_map_free(struct stack_map *m);

#endif
