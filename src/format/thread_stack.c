/* thread_stack.c - see thread_stack.h. */
#include <stdlib.h>
#include <string.h>

#include "thread_stack.h"

int thread_stack_push(struct thread_stack *s, uint32_t site, uint64_t ns)
{
	if (s->depth == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct frame *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->depth++] = (struct frame){ site, ns, 0 };
	return 0;
}

long thread_stack_find(const struct thread_stack *s, uint32_t site)
{
	for (size_t i = s->depth; i-- > 0;)
		if (s->v[i].site == site)
			return (long)i;
	return -1;
}

static size_t slot_of(uint32_t tid, size_t cap)
{
	return (size_t)(tid * 2654435761u) & (cap - 1);
}

struct thread_stack *stack_map_get(struct stack_map *m, uint32_t tid)
{
	if ((m->cnt + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct thread_stack *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return NULL;
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->slots[i].tid)
				continue;
			size_t j = slot_of(m->slots[i].tid, cap);
			while (slots[j].tid)
				j = (j + 1) & (cap - 1);
			slots[j] = m->slots[i];
		}
		free(m->slots);
		m->slots = slots;
		m->cap = cap;
	}
	size_t j = slot_of(tid, m->cap);
	while (m->slots[j].tid && m->slots[j].tid != tid)
		j = (j + 1) & (m->cap - 1);
	if (!m->slots[j].tid) {
		m->slots[j].tid = tid;
		m->cnt++;
	}
	return &m->slots[j];
}

void stack_map_free(struct stack_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].v);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
