/* thread_stack.c - see thread_stack.h. */
#include <stdlib.h>
#include <string.h>

#include "format/thread_stack.h"

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
	s->v[s->depth++] = (struct frame){ .site = site, .ns = ns };
	return 0;
}

long thread_stack_find(const struct thread_stack *s, uint32_t site)
{
	for (size_t i = s->depth; i-- > 0;)
		if (s->v[i].site == site)
			return (long)i;
	return -1;
}

struct saved_stack {
	uint32_t context;
	struct frame *v;
	size_t depth, cap;
};

struct context_stacks {
	uint32_t current; /* 0: the thread's own first context */
	struct saved_stack *saved;
	size_t cnt;
};

size_t thread_stack_cut_depth(const struct thread_stack *s, uint32_t open_depth, int first_is_exit)
{
	size_t saved = 0, want, open = (size_t)open_depth + (first_is_exit != 0);

	if (s->contexts)
		for (size_t i = 0; i < s->contexts->cnt; i++)
			saved += s->contexts->saved[i].depth;
	want = open > saved ? open - saved : 0;
	return want < s->depth ? want : s->depth;
}

void thread_stack_switch_from(struct thread_stack *s, uint32_t context)
{
	if (!s->contexts)
		s->contexts = calloc(1, sizeof(*s->contexts));
	if (s->contexts)
		s->contexts->current = context;
}

int thread_stack_switch_to(struct thread_stack *s, uint32_t context)
{
	struct context_stacks *c = s->contexts;

	if (!c && !(c = s->contexts = calloc(1, sizeof(*c))))
		return -1;
	if (c->current == context)
		return 0;
	struct saved_stack *v = realloc(c->saved, (c->cnt + 1) * sizeof(*v));
	if (!v)
		return -1;
	c->saved = v;
	/* Set the current stack aside under the context being left. */
	v[c->cnt++] = (struct saved_stack){ c->current, s->v, s->depth, s->cap };
	s->v = NULL;
	s->depth = s->cap = 0;
	for (size_t i = 0; i + 1 < c->cnt; i++) {
		if (v[i].context != context)
			continue;
		s->v = v[i].v;
		s->depth = v[i].depth;
		s->cap = v[i].cap;
		v[i] = v[--c->cnt];
		break;
	}
	c->current = context;
	return 0;
}

void thread_stack_free(struct thread_stack *s)
{
	free(s->v);
	if (s->contexts) {
		for (size_t i = 0; i < s->contexts->cnt; i++)
			free(s->contexts->saved[i].v);
		free(s->contexts->saved);
		free(s->contexts);
	}
	memset(s, 0, sizeof(*s));
}

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

struct thread_stack *stack_map_get(struct stack_map *m, uint64_t key)
{
	if ((m->cnt + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct thread_stack *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return NULL;
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->slots[i].used)
				continue;
			size_t j = slot_of(m->slots[i].key, cap);
			while (slots[j].used)
				j = (j + 1) & (cap - 1);
			slots[j] = m->slots[i];
		}
		free(m->slots);
		m->slots = slots;
		m->cap = cap;
	}
	size_t j = slot_of(key, m->cap);
	while (m->slots[j].used && m->slots[j].key != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->slots[j].used) {
		m->slots[j].used = 1;
		m->slots[j].key = key;
		m->cnt++;
	}
	return &m->slots[j];
}

void stack_map_free(struct stack_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		thread_stack_free(&m->slots[i]);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
