/* task_graph.c - `needle graph --task`: uftrace's task graph, the tree of
 * the trace's processes and threads with how long each ran.
 *
 * A thread's parent is the first thread of its process (the thread whose
 * tid is its pid); a process's first thread's parent is the first thread
 * of its parent process (ppid), from the trace's TASKS records.  A thread
 * whose parent is not in the trace is a root (the recorded program's, an
 * attached process's).  Files without TASKS records (older ones) have
 * every thread under the first one.  Children come in the order they
 * began.
 *
 * TOTAL TIME is from the thread's first event to its last; SELF TIME is
 * that less its time off the CPU when the trace has the kernel's side
 * (record --kernel), else the same, as uftrace counts without its sched
 * events.
 *
 * Invariants: one pass over the events, memory per thread (the tree is
 * the threads'), never per event. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/util/cli_util.h"
#include "cli/view/task_graph.h"
#include "cli/view/view.h"
#include "cli/view/view_format.h"

struct task_node {
	uint64_t first_ns, last_ns, offcpu_ns;
	uint64_t offcpu_tail;  /* off the CPU since its last call event */
	uint32_t rep;          /* index + 1 of the node it continues (an exec in its pid), 0: itself */
	uint32_t latest;       /* the newest life it stands for (its name) */
	uint32_t parent;      /* thread index + 1, 0: a root */
	uint32_t first_child; /* thread index + 1, 0: none */
	uint32_t next;        /* the next sibling, thread index + 1 */
	uint8_t seen;         /* it has events */
	uint8_t shown;        /* it, or a thread under it, lasted min_ns */
};

struct task_graph {
	struct trace *t;
	struct task_node *v;
	uint8_t *open;        /* by indent: a "|" goes on at this level */
	uint64_t min_ns;
};

/* A thread runs from its first call event to its last, as the other
 * views see it: the kernel's events before (its start-up, with --kernel)
 * or after do not count, and of its time off the CPU only what falls
 * between. */
static int task_event(const struct trace_event *ev, void *arg)
{
	struct task_graph *g = arg;
	struct task_node *n = &g->v[ev->thread];

	if (ev->kind == TEV_KERNEL) {
		if (n->seen && ev->kev.kind == KEV_OFFCPU && ev->ns >= n->first_ns)
			n->offcpu_tail += ev->kev_ns;
		return 0;
	}
	if (ev->kind != TEV_ENTRY && ev->kind != TEV_EXIT)
		return 0;
	if (!n->seen) {
		n->first_ns = ev->ns;
		n->seen = 1;
	}
	if (ev->ns > n->last_ns)
		n->last_ns = ev->ns;
	n->offcpu_ns += n->offcpu_tail;
	n->offcpu_tail = 0;
	return 0;
}

/* The thread of tid that began last at or before ns (a recycled tid's
 * newest life), or -1: a binary search of by_tid, the threads with
 * events sorted by tid, then by when they began. */
static long thread_of(const struct task_graph *g, const uint32_t *by_tid, size_t n, uint32_t tid, uint64_t ns)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* the first entry past (tid, ns) */
		size_t mid = lo + (hi - lo) / 2;
		uint32_t m = by_tid[mid], mt = g->t->threads[m].tid;
		if (mt < tid || (mt == tid && g->v[m].first_ns <= ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || g->t->threads[by_tid[lo - 1]].tid != tid)
		return -1;
	return (long)by_tid[lo - 1];
}

static int tid_cmp(const void *a, const void *b, void *arg)
{
	const struct task_graph *g = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t tx = g->t->threads[x].tid, ty = g->t->threads[y].tid;
	if (tx != ty)
		return tx < ty ? -1 : 1;
	if (g->v[x].first_ns != g->v[y].first_ns)
		return g->v[x].first_ns < g->v[y].first_ns ? -1 : 1;
	return (x > y) - (x < y);
}

static int began_cmp(const void *a, const void *b, void *arg)
{
	const struct task_graph *g = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (g->v[x].first_ns != g->v[y].first_ns)
		return g->v[x].first_ns < g->v[y].first_ns ? -1 : 1;
	return (x > y) - (x < y);
}

/* Parents, then children linked in the order they began. */
static int link_tasks(struct task_graph *g, uint32_t *order, size_t *cnt)
{
	size_t n = 0;
	for (size_t i = 0; i < g->t->thread_cnt; i++)
		if (g->v[i].seen)
			order[n++] = (uint32_t)i;
	*cnt = n;
	uint32_t *by_tid = malloc((n ? n : 1) * sizeof(*by_tid));
	if (!by_tid)
		return -1;
	memcpy(by_tid, order, n * sizeof(*by_tid));
	qsort_r(by_tid, n, sizeof(*by_tid), tid_cmp, g);
	/* Each thread's place in by_tid: the one before it there is the
	 * previous life of its tid. */
	uint32_t *at = malloc((g->t->thread_cnt ? g->t->thread_cnt : 1) * sizeof(*at));
	if (!at) {
		free(by_tid);
		return -1;
	}
	for (size_t k = 0; k < n; k++) {
		at[by_tid[k]] = (uint32_t)k;
		g->v[by_tid[k]].latest = by_tid[k];
	}
	qsort_r(order, n, sizeof(*order), began_cmp, g);
	for (size_t k = 0; k < n; k++) {
		uint32_t i = order[k];
		const struct trace_thread *th = &g->t->threads[i];
		long p;
		/* A program exec'ed in its process (its first thread's tid
		 * again, in the same pid): the same task, continued. */
		long prev = at[i] ? (long)by_tid[at[i] - 1] : -1;
		if (th->pid && th->tid == th->pid && prev >= 0 && g->t->threads[prev].tid == th->tid &&
		    g->t->threads[prev].pid == th->pid) {
			uint32_t r = g->v[prev].rep ? g->v[prev].rep - 1 : (uint32_t)prev;
			g->v[i].rep = r + 1;
			g->v[r].latest = i;
			if (g->v[i].last_ns > g->v[r].last_ns)
				g->v[r].last_ns = g->v[i].last_ns;
			g->v[r].offcpu_ns += g->v[i].offcpu_ns;
			continue;
		}
		if (!th->pid)
			p = order[0]; /* no TASKS records: under the first thread */
		else if (th->tid != th->pid)
			p = thread_of(g, by_tid, n, th->pid, g->v[i].first_ns);
		else
			p = th->ppid ? thread_of(g, by_tid, n, th->ppid, g->v[i].first_ns) : -1;
		/* A parent whose first event is later (a thread of a process
		 * recorded by attaching, a snapshot that lost the parent's
		 * early events): that task, all the same. */
		if (p < 0 && th->pid)
			p = thread_of(g, by_tid, n, th->tid != th->pid ? th->pid : th->ppid, UINT64_MAX);
		if (p >= 0 && g->v[p].rep)
			p = (long)g->v[p].rep - 1;
		if (p >= 0 && (uint32_t)p != i)
			g->v[i].parent = (uint32_t)p + 1;
	}
	free(by_tid);
	free(at);
	/* Children appended in order: walk backwards, prepend. */
	for (size_t k = n; k-- > 0;) {
		uint32_t i = order[k];
		if (g->v[i].parent) {
			struct task_node *p = &g->v[g->v[i].parent - 1];
			g->v[i].next = p->first_child;
			p->first_child = i + 1;
		}
	}
	return 0;
}

/* Whether i or a thread under it lasted min_ns: the ones printed (a
 * parent of one is, to keep the tree right).  The walk up stops at a
 * parent marked already, or after n steps (a cycle, from a damaged file,
 * is never printed: no root leads to it). */
static void mark_shown(struct task_graph *g, const uint32_t *order, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		uint32_t i = order[k];
		if (g->v[i].rep || g->v[i].last_ns - g->v[i].first_ns < g->min_ns)
			continue;
		for (size_t steps = 0; steps <= n && !g->v[i].shown; steps++) {
			g->v[i].shown = 1;
			if (!g->v[i].parent)
				break;
			i = g->v[i].parent - 1;
		}
	}
}

static void print_fields(const struct task_graph *g, uint32_t i)
{
	char buf[32];
	const struct task_node *v = &g->v[i];
	uint64_t run = v->last_ns - v->first_ns;

	cli_format_duration(buf, sizeof(buf), run);
	printf("  %s", buf);
	cli_format_duration(buf, sizeof(buf), run > v->offcpu_ns ? run - v->offcpu_ns : 0);
	printf("  %s", buf);
	printf("  [%6u] : ", g->t->threads[i].tid);
}

static int same_process(const struct trace *t, uint32_t a, uint32_t b)
{
	return t->threads[a].pid == t->threads[b].pid;
}

/* The next shown sibling after child c (index + 1), or 0. */
static uint32_t next_shown(const struct task_graph *g, uint32_t c)
{
	for (c = g->v[c - 1].next; c && !g->v[c - 1].shown; c = g->v[c - 1].next)
		;
	return c;
}

/* uftrace's layout: a thread under its process's first thread, a forked
 * process one level further in and set apart by blank lines.  Recursion
 * depth is the depth of the task tree (forks of forks), not of calls. */
static int print_node(struct task_graph *g, uint32_t i, long parent, uint32_t indent)
{
	int blank = 0;
	struct task_node *v = &g->v[i];

	print_fields(g, i);
	view_print_indent(g->open, indent, 1);
	const char *name = g->t->threads[v->latest].name;
	printf("%s\n", name[0] ? name : "?");
	uint32_t c = v->first_child;
	if (c && !g->v[c - 1].shown)
		c = next_shown(g, c);
	if (!c)
		return 0;
	/* The last child of its parent: no "|" below it at the parent's level. */
	if (parent >= 0 && !next_shown(g, i + 1)) {
		uint32_t at = indent - 1;
		if (!same_process(g->t, i, (uint32_t)parent))
			at--;
		g->open[at] = 0;
	}
	for (; c; c = next_shown(g, c)) {
		uint32_t ci = c - 1, in = indent;
		g->open[in++] = 1;
		if (!same_process(g->t, ci, i)) {
			blank = 1;
			in++;
		}
		if (blank) {
			printf("%34s : ", "");
			view_print_indent(g->open, in, 0);
			putchar('\n');
			blank = 0;
		}
		blank |= print_node(g, ci, i, in);
		if (next_shown(g, c) && !same_process(g->t, ci, i))
			blank = 1;
	}
	g->open[indent] = 0;
	return blank;
}

int graph_task(struct trace *t, uint64_t min_ns)
{
	struct task_graph g = { .t = t, .min_ns = min_ns };
	size_t n = t->thread_cnt ? t->thread_cnt : 1, cnt = 0;
	uint32_t *order = malloc(n * sizeof(*order));
	int err = 1;

	g.v = calloc(n, sizeof(*g.v));
	/* Two levels per task at most. */
	g.open = calloc(2 * n + 2, 1);
	if (!order || !g.v || !g.open) {
		cli_error("out of memory");
		goto out;
	}
	if (view_each_event(t, 0, task_event, &g))
		goto out;
	if (link_tasks(&g, order, &cnt)) {
		cli_error("out of memory");
		goto out;
	}
	mark_shown(&g, order, cnt);
	view_buffer_output(stdout);
	puts("========== TASK GRAPH ==========");
	puts("# TOTAL TIME   SELF TIME     TID     TASK NAME");
	for (size_t k = 0; k < cnt; k++)
		if (!g.v[order[k]].parent && !g.v[order[k]].rep && g.v[order[k]].shown)
			print_node(&g, order[k], -1, 0);
	putchar('\n');
	err = view_close_output(stdout, "standard output") ? 1 : 0;
out:
	free(order);
	free(g.v);
	free(g.open);
	return err;
}
