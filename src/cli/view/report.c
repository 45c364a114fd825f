/* report.c - `needle report`: per function, the number of calls and
 * the total (inclusive), self (exclusive), average, minimum and maximum
 * time, like uftrace report and ftrace's function profiler.
 *
 * Invariants: one pass, O(1) per event; memory grows with the number of
 * functions and the stacks' depth, not of events.  A recursive function's
 * total time is that of its outermost calls on each thread (its nested
 * calls' time is inside them), as uftrace and perf count it; its self
 * time, average, minimum and maximum are per call.  A time is only ever computed from a
 * recorded entry and a recorded exit: calls still running at the end,
 * calls whose exit was lost and exits without an entry count as calls
 * but add no time.  A trace with no durations at all (the function
 * tracer) shows counts only, and a trace with losses says so first.
 *
 * --by-arg N|NAME splits the row of each function whose entries carry
 * the value argN (or NAME) into one row per distinct value,
 * "kv_get(arg1=\"user:42\")".  The reader marks each call with its row
 * (trace_iter_init_mark), so its exit, whichever way it comes (after a
 * coroutine switch, a loss), adds its time to the row its entry chose:
 * still O(1) per event, a hash lookup per entry with values.  Memory
 * grows with the rows: a function's values past the first
 * BY_ARG_MAX_VALUES share one row, "kv_get(arg1=<other>)". */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/util/cli_util.h"
#include "cli/view/view.h"
#include "cli/view/view_filter.h"
#include "cli/view/view_format.h"
#include "common/shm_layout.h"

struct func_stats {
	uint32_t site;
	uint32_t group; /* --by-arg: 0 for the function's own row, else its group + 1 */
	uint64_t calls, timed, total, self, min, max, self_min, self_max;
	uint64_t sum;   /* every timed call's time: total counts a recursion's outermost calls only */
	uint64_t syscall, offcpu; /* --kernel's share of total: in system calls, off the CPU */
	uint32_t task_top;       /* --task: depth + 1 of the thread's outermost counted call open, 0 none */
};

struct active_call {
	uint64_t key; /* thread << 32 | site */
	uint32_t ctx; /* the thread's coroutine context (TEV_SWITCH), 0 before any */
	int64_t count;
};

/* report --kernel: the system calls made by each function (the innermost
 * call open), by number. */
struct sys_row {
	uint32_t site;     /* UINT32_MAX: outside any recorded call */
	uint32_t used;
	uint64_t nr;
	uint64_t calls, errors, total;
};

/* Distinct values kept per function before the rest share one row. */
#define BY_ARG_MAX_VALUES 10000
#define STR(x) #x
#define XSTR(x) STR(x)

/* A row of --by-arg: one function and one value. */
struct group {
	char *value;   /* its text as replay shows it; NULL: the <other> row */
	char *label;   /* "kv_get(arg1=5)", made for the output */
	char name[32]; /* the value's name, as recorded ("arg1") */
	uint64_t hash;
	struct func_stats st;
};

/* Per site, with --by-arg. */
struct site_values {
	uint32_t values; /* distinct values with a row of their own */
	uint32_t other;  /* group + 1 of its <other> row, 0 until needed */
};

struct report {
	struct trace *t;
	struct func_stats *v; /* by site id */
	size_t cap;
	struct sys_row *sys;  /* --kernel: open addressing by (site, nr) */
	size_t sys_cap, sys_cnt;
	int kernel_view;
	int task;                  /* --task: a row per thread (v[] by thread index), uftrace's */
	uint64_t range_start, range_end; /* -r: the calls that began between them (ns since the first event) */
	int srcline;               /* --srcline: each function's [file:line] after its name */
	char task_name[96];        /* row_name's of a thread */
	struct view_filter filter; /* -F, -N, -D, --no-libcall */
	signed char *compiled;     /* view_module_compiled's cache, for --srcline */
	const char *with_syms;     /* --with-syms: names for stripped objects, of both traces of --diff */
	uint64_t min_ns;           /* -t: only calls that lasted this long (counted at their exit) */
	struct active_call *active; /* open calls by (thread, context, site): recursion (active_add) */
	uint32_t *ctx;              /* by thread: its coroutine context now (TEV_SWITCH) */
	size_t ctx_cap;
	size_t active_cap, active_cnt;
	/* --by-arg */
	const char *by_arg;        /* the value's name: "arg1", "fparg2", ... */
	struct site_values *sites; /* by site id, cap entries */
	struct group *groups;
	size_t group_cnt, group_cap;
	uint32_t *slots;           /* hash of (site, value) -> group + 1 */
	size_t slot_cap;
	int oom;
};

static struct func_stats *stats_for(struct report *r, uint32_t site)
{
	if (site >= r->cap) {
		size_t cap = r->cap ? r->cap : 1024;
		while (cap <= site)
			cap *= 2;
		struct func_stats *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + r->cap, 0, (cap - r->cap) * sizeof(*v));
		r->v = v;
		if (r->by_arg) {
			struct site_values *sv = realloc(r->sites, cap * sizeof(*sv));
			if (!sv)
				return NULL; /* r->v grown already: harmless, cap is not */
			memset(sv + r->cap, 0, (cap - r->cap) * sizeof(*sv));
			r->sites = sv;
		}
		r->cap = cap;
	}
	r->v[site].site = site;
	return &r->v[site];
}

static uint64_t hash_value(uint32_t site, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull ^ site;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h ^ h >> 29;
}

/* A new group for site (value NULL: its <other> row): its index + 1, or
 * 0 when memory runs out. */
static uint32_t group_new(struct report *r, uint32_t site, const char *name, const char *value, uint64_t hash)
{
	if (r->group_cnt == r->group_cap) {
		size_t cap = r->group_cap ? r->group_cap * 2 : 64;
		struct group *g = realloc(r->groups, cap * sizeof(*g));
		if (!g)
			return 0;
		r->groups = g;
		r->group_cap = cap;
	}
	struct group *g = &r->groups[r->group_cnt];
	*g = (struct group){ .hash = hash, .st = { .site = site, .group = (uint32_t)r->group_cnt + 1 } };
	snprintf(g->name, sizeof(g->name), "%s", name);
	if (value && !(g->value = strdup(value)))
		return 0;
	return (uint32_t)++r->group_cnt;
}

/* The row of (site, value): found, made, or the site's <other> row once it
 * has BY_ARG_MAX_VALUES of its own.  Its group + 1, or 0 (out of memory). */
static uint32_t group_find(struct report *r, uint32_t site, const char *name, const char *value)
{
	uint64_t h = hash_value(site, value);
	struct site_values *sv;

	if (!stats_for(r, site) || site >= r->cap)
		return 0;
	sv = &r->sites[site];
	if (r->slot_cap) {
		for (size_t j = h & (r->slot_cap - 1); r->slots[j]; j = (j + 1) & (r->slot_cap - 1)) {
			struct group *g = &r->groups[r->slots[j] - 1];
			r->t->work++;
			if (g->hash == h && g->st.site == site && !strcmp(g->value, value))
				return r->slots[j];
		}
	}
	if (sv->values >= BY_ARG_MAX_VALUES) {
		if (!sv->other)
			sv->other = group_new(r, site, name, NULL, 0);
		return sv->other;
	}
	/* Keep the table at most half full, values only (not <other> rows). */
	if ((r->group_cnt + 1) * 2 > r->slot_cap) {
		size_t cap = r->slot_cap ? r->slot_cap * 2 : 256;
		uint32_t *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return 0;
		for (size_t i = 0; i < r->group_cnt; i++) {
			if (!r->groups[i].value)
				continue;
			size_t j = r->groups[i].hash & (cap - 1);
			while (slots[j])
				j = (j + 1) & (cap - 1);
			slots[j] = (uint32_t)i + 1;
		}
		free(r->slots);
		r->slots = slots;
		r->slot_cap = cap;
	}
	uint32_t g = group_new(r, site, name, value, h);
	if (!g)
		return 0;
	size_t j = h & (r->slot_cap - 1);
	while (r->slots[j])
		j = (j + 1) & (r->slot_cap - 1);
	r->slots[j] = g;
	sv->values++;
	return g;
}

/* The reader's mark of a call (--by-arg): the group of its entry's value
 * named r->by_arg, or 0 (the function's own row). */
static uint32_t group_of(const struct trace_event *ev, void *arg)
{
	struct report *r = arg;
	/* A string of --max-string bytes, each escaped in at most 4. */
	char name[256], val[4 * TRACE_DATA_MAX + 16];
	size_t at = 0;

	if (!ev->data_len)
		return 0;
	/* "argN" / "fpargN" name a register, whatever name the trace gives
	 * its value (--auto-args: "key"); other names are the trace's. */
	int by_register = (!strncmp(r->by_arg, "arg", 3) && isdigit((unsigned char)r->by_arg[3])) ||
			  (!strncmp(r->by_arg, "fparg", 5) && isdigit((unsigned char)r->by_arg[5]));
	while (view_value_next(by_register ? NULL : r->t, ev, &at, name, sizeof(name), val, sizeof(val))) {
		if (strcmp(name, r->by_arg))
			continue;
		uint32_t g = group_find(r, ev->site, name, val);
		if (!g)
			r->oom = 1;
		return g;
	}
	return 0;
}

/* The row an event counts in: its call's group, or its function's. */
static struct func_stats *row_for(struct report *r, const struct trace_event *ev)
{
	return ev->mark ? &r->groups[ev->mark - 1].st : stats_for(r, ev->site);
}

static struct sys_row *sys_row(struct report *r, uint32_t site, uint64_t nr)
{
	if (2 * (r->sys_cnt + 1) > r->sys_cap) {
		size_t cap = r->sys_cap ? 2 * r->sys_cap : 256;
		struct sys_row *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < r->sys_cap; i++) {
			if (!r->sys[i].used)
				continue;
			size_t h = (r->sys[i].site * 31u + r->sys[i].nr) * 2654435761u % cap;
			while (v[h].used)
				h = (h + 1) % cap;
			v[h] = r->sys[i];
		}
		free(r->sys);
		r->sys = v;
		r->sys_cap = cap;
	}
	size_t h = (site * 31u + nr) * 2654435761u % r->sys_cap;
	while (r->sys[h].used && (r->sys[h].site != site || r->sys[h].nr != nr))
		h = (h + 1) % r->sys_cap;
	if (!r->sys[h].used) {
		r->sys[h] = (struct sys_row){ .site = site, .nr = nr, .used = 1 };
		r->sys_cnt++;
	}
	return &r->sys[h];
}

static size_t active_hash(uint64_t key, uint32_t ctx)
{
	return (size_t)((key ^ (uint64_t)ctx << 20) * 0x9e3779b97f4a7c15ull >> 20);
}

/* The calls of each (thread, coroutine context, function) open: a table with linear
 * probing, an entry removed when its count falls to 0, so that it holds
 * no more than the stacks' distinct functions.  Adds delta to the count
 * and returns the new count, or -1 out of memory. */
static int64_t active_add(struct report *r, uint32_t thread, uint32_t site, int delta)
{
	uint64_t key = (uint64_t)thread << 32 | site;
	uint32_t ctx = thread < r->ctx_cap ? r->ctx[thread] : 0;
	if (!r->active_cap || 2 * (r->active_cnt + 1) > r->active_cap) {
		size_t cap = r->active_cap ? 2 * r->active_cap : 1024;
		struct active_call *v = calloc(cap, sizeof(*v));
		if (!v)
			return -1;
		for (size_t i = 0; i < r->active_cap; i++) {
			if (!r->active[i].count)
				continue;
			size_t h = active_hash(r->active[i].key, r->active[i].ctx) & (cap - 1);
			while (v[h].count)
				h = (h + 1) & (cap - 1);
			v[h] = r->active[i];
		}
		free(r->active);
	free(r->ctx);
		r->active = v;
		r->active_cap = cap;
	}
	size_t mask = r->active_cap - 1, h = active_hash(key, ctx) & mask;
	while (r->active[h].count && (r->active[h].key != key || r->active[h].ctx != ctx)) {
		h = (h + 1) & mask;
		r->t->work++;
	}
	if (!r->active[h].count) {
		if (delta <= 0)
			return 0; /* an exit whose entry was not counted */
		r->active[h] = (struct active_call){ key, ctx, 0 };
		r->active_cnt++;
	}
	r->active[h].count += delta;
	int64_t left = r->active[h].count;
	if (!left) {
		/* Remove it, moving up the entries of its probe run that
		 * would no longer be found past the hole. */
		r->active_cnt--;
		size_t hole = h;
		for (size_t j = (h + 1) & mask; r->active[j].count; j = (j + 1) & mask) {
			size_t want = active_hash(r->active[j].key, r->active[j].ctx) & mask;
			if (((j - want) & mask) >= ((j - hole) & mask)) {
				r->active[hole] = r->active[j];
				r->active[j].count = 0;
				hole = j;
			}
		}
	}
	return left;
}

static int account(const struct trace_event *ev, void *arg)
{
	struct report *r = arg;
	struct func_stats *f;

	if (ev->kind == TEV_KERNEL) {
		/* -r: the system calls made in the range. */
		if (r->kernel_view && ev->kev.kind == KEV_SYSCALL && ev->ns >= r->range_start && ev->ns <= r->range_end) {
			struct sys_row *s = sys_row(r, ev->site, ev->kev.a);
			if (!s)
				return r->oom = 1;
			int64_t ret = (int64_t)ev->kev.b;
			s->calls++;
			s->errors += ret < 0 && ret >= -4095;
			s->total += ev->kev_ns;
		}
		return 0;
	}
	if (ev->kind == TEV_SWITCH) {
		if (ev->thread >= r->ctx_cap) {
			size_t cap = r->t->thread_cnt > ev->thread ? r->t->thread_cnt : ev->thread + 1;
			uint32_t *v = realloc(r->ctx, cap * sizeof(*v));
			if (!v)
				return r->oom = 1;
			memset(v + r->ctx_cap, 0, (cap - r->ctx_cap) * sizeof(*v));
			r->ctx = v;
			r->ctx_cap = cap;
		}
		r->ctx[ev->thread] = ev->site;
		return 0;
	}
	if (view_filter_active(&r->filter) && (ev->kind == TEV_ENTRY || ev->kind == TEV_EXIT) &&
	    !view_filter_shows(&r->filter, ev))
		return 0;
	/* -r: a call counts, whole, when it began in the range (its exit
	 * carries when that was). */
	if ((ev->kind == TEV_ENTRY || ev->kind == TEV_EXIT) && (r->range_start || r->range_end != UINT64_MAX)) {
		uint64_t began = ev->kind == TEV_ENTRY ? ev->ns : ev->entry_ns;
		if (began < r->range_start || began > r->range_end)
			return 0;
	}
	if (ev->kind == TEV_ENTRY) {
		/* A call open where a snapshot's window begins is not a call
		 * of the window (no line in replay), only its frame; nor is a
		 * forked child's copy of its parent's open call (its parent
		 * counted it), as uftrace counts, but for the child's own row
		 * under --task.  (Under -t a call counts at its exit, if it
		 * took long enough: the child's copy then too.) */
		if ((f = r->task ? stats_for(r, ev->thread) : row_for(r, ev)) && !(ev->flags & TEV_BEFORE)) {
			if (!r->min_ns && (r->task || !(ev->flags & TEV_INHERITED)))
				f->calls++;
			/* --task: the thread's outermost call that counts (depth
			 * 0, unless -F, -N, -D or -r left it out); a forked
			 * child's starts outside the calls it inherits. */
			if (r->task && !f->task_top && !(ev->flags & (TEV_FLAT | TEV_INHERITED)))
				f->task_top = ev->depth + 1;
		}
		/* A call open before a snapshot's window is no call of it:
		 * the window's calls of its function are outermost. */
		if (!r->task && !(ev->flags & (TEV_FLAT | TEV_BEFORE)) && active_add(r, ev->thread, ev->site, 1) < 0)
			return r->oom = 1;
		return 0;
	}
	/* Whether this call is the outermost of its function open in its
	 * thread: a recursion's total is its outermost calls' time, as
	 * uftrace and perf count it, not the sum of the nested ones.  A
	 * thread's (--task): the time of its outermost calls. */
	int outermost = 1;
	struct func_stats *task_row = NULL;
	/* --task: the end of a call a forked child inherited is no time of
	 * the child's (the call began in its parent), as its own calls are
	 * (so a thread's self time never passes its total). */
	if (r->task && ev->kind == TEV_EXIT && (ev->flags & TEV_INHERITED))
		return 0;
	if (r->task) {
		task_row = stats_for(r, ev->thread);
		outermost = task_row && ev->kind == TEV_EXIT && task_row->task_top == ev->depth + 1;
		if (outermost)
			task_row->task_top = 0;
	} else if (ev->kind == TEV_EXIT && !(ev->flags & (TEV_ORPHAN | TEV_BEFORE))) {
		int64_t left = active_add(r, ev->thread, ev->site, -1);
		if (left < 0)
			return r->oom = 1;
		outermost = left == 0;
	}
	/* Durations come from exits; a call still running at the end, whose
	 * exit was lost or whose entry is missing counts as a call but has
	 * no time. */
	/* --task: a thread whose outermost call still ran at the end (a
	 * program killed, a thread that never returned) ran at least from
	 * its entry to its last event: its total, so that it is no less
	 * than the time of the calls inside. */
	if (r->task && outermost && task_row && ev->kind == TEV_EXIT && (ev->flags & TEV_UNTIMED) == TEV_OPEN &&
	    !r->min_ns && ev->ns > ev->entry_ns)
		task_row->total += ev->ns - ev->entry_ns;
	if (ev->kind != TEV_EXIT || (ev->flags & TEV_UNTIMED) ||
	    !(f = r->task ? task_row : row_for(r, ev)))
		return 0;
	uint64_t d = ev->ns - ev->entry_ns;
	uint64_t self = d > ev->child_ns ? d - ev->child_ns : 0;
	/* -t: a call is counted, at its exit, when it lasted long enough. */
	if (r->min_ns) {
		if (d < r->min_ns)
			return 0;
		f->calls++;
	}
	if (!f->timed || d < f->min)
		f->min = d;
	if (d > f->max)
		f->max = d;
	if (!f->timed || self < f->self_min)
		f->self_min = self;
	if (self > f->self_max)
		f->self_max = self;
	f->timed++;
	if (outermost)
		f->total += d;
	f->sum += d;
	f->self += self;
	f->syscall += ev->syscall_ns;
	f->offcpu += ev->offcpu_ns;
	return 0;
}

/* The sort keys (-s, a comma-separated list: the first decides, the next
 * break its ties) and how they compare.  Names sort A to Z, numbers
 * largest first. */
enum report_key {
	K_TOTAL, K_SELF, K_CALLS, K_TOTAL_AVG, K_TOTAL_MIN, K_TOTAL_MAX, K_SELF_AVG, K_SELF_MIN, K_SELF_MAX,
	K_NAME, K_ONCPU, K_OFFCPU, K_SYSCALL,
};
static const struct {
	const char *name;
	enum report_key key;
} report_keys[] = {
	{ "total", K_TOTAL },	      { "self", K_SELF },	      { "calls", K_CALLS },
	{ "call", K_CALLS },	      { "total-avg", K_TOTAL_AVG },   { "total_avg", K_TOTAL_AVG },
	{ "total-min", K_TOTAL_MIN }, { "total_min", K_TOTAL_MIN },   { "total-max", K_TOTAL_MAX },
	{ "total_max", K_TOTAL_MAX }, { "self-avg", K_SELF_AVG },     { "self_avg", K_SELF_AVG },
	{ "self-min", K_SELF_MIN },   { "self_min", K_SELF_MIN },     { "self-max", K_SELF_MAX },
	{ "self_max", K_SELF_MAX },   { "name", K_NAME },	      { "func", K_NAME },
	{ "oncpu", K_ONCPU },	      { "offcpu", K_OFFCPU },	      { "syscall", K_SYSCALL },
};
#define SORT_KEYS_MAX 8
static enum report_key sort_keys[SORT_KEYS_MAX] = { K_TOTAL };
static int sort_key_cnt = 1;
static struct report *sort_report;

/* avg, min and max: of the total times, or of the self times with
 * --avg-self (uftrace's keys). */
static int parse_sort_keys(const char *arg, int avg_self)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", arg);
	sort_key_cnt = 0;
	for (char *save = NULL, *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		int found = -1;
		if (!strcmp(k, "avg"))
			found = avg_self ? K_SELF_AVG : K_TOTAL_AVG;
		else if (!strcmp(k, "min"))
			found = avg_self ? K_SELF_MIN : K_TOTAL_MIN;
		else if (!strcmp(k, "max"))
			found = avg_self ? K_SELF_MAX : K_TOTAL_MAX;
		for (size_t i = 0; found < 0 && i < sizeof(report_keys) / sizeof(report_keys[0]); i++)
			if (!strcmp(k, report_keys[i].name))
				found = (int)report_keys[i].key;
		if (found < 0) {
			cli_error("unknown sort key '%s' (total, self, calls, avg, min, max, self-avg, self-min, "
				  "self-max, name, oncpu, offcpu, syscall; several with commas)", k);
			return -1;
		}
		if (sort_key_cnt == SORT_KEYS_MAX) {
			cli_error("-s: at most %d keys", SORT_KEYS_MAX);
			return -1;
		}
		sort_keys[sort_key_cnt++] = (enum report_key)found;
	}
	if (!sort_key_cnt) {
		cli_error("-s: give a sort key");
		return -1;
	}
	return 0;
}

/* What the Function column shows: the name, or "name(arg1=value)";
 * with --task the thread's "TID  name" (its name alone when -f has a
 * tid column). */
static int tid_column;

static const char *row_name(struct report *r, const struct func_stats *f)
{
	if (r->task) {
		const struct trace_thread *th = &r->t->threads[f->site];
		const char *name = th->name[0] ? th->name : "?";
		if (tid_column)
			snprintf(r->task_name, sizeof(r->task_name), "%s", name);
		else
			snprintf(r->task_name, sizeof(r->task_name), "%6u  %s", th->tid, name);
		return r->task_name;
	}
	return f->group ? r->groups[f->group - 1].label : trace_site_name(r->t, f->site);
}

static uint64_t key_value(const struct func_stats *f, enum report_key k)
{
	switch (k) {
	case K_SELF:
		return f->self;
	case K_CALLS:
		return f->calls;
	case K_TOTAL_AVG:
		return f->timed ? f->sum / f->timed : 0;
	case K_TOTAL_MIN:
		return f->min;
	case K_TOTAL_MAX:
		return f->max;
	case K_SELF_AVG:
		return f->timed ? f->self / f->timed : 0;
	case K_SELF_MIN:
		return f->self_min;
	case K_SELF_MAX:
		return f->self_max;
	case K_ONCPU:
		return f->total > f->offcpu ? f->total - f->offcpu : 0;
	case K_OFFCPU:
		return f->offcpu;
	case K_SYSCALL:
		return f->syscall;
	default:
		return f->total;
	}
}

/* By name: the function's (or group's), or with --task the thread's,
 * then its tid. */
static int name_cmp(const struct func_stats *x, const struct func_stats *y)
{
	if (sort_report->task) {
		const struct trace_thread *a = &sort_report->t->threads[x->site], *b = &sort_report->t->threads[y->site];
		int c = strcmp(a->name, b->name);
		return c ? c : (a->tid > b->tid) - (a->tid < b->tid);
	}
	return strcmp(row_name(sort_report, x), row_name(sort_report, y));
}

static int cmp_stats(const void *a, const void *b)
{
	const struct func_stats *x = a, *y = b;

	for (int i = 0; i < sort_key_cnt; i++) {
		if (sort_keys[i] == K_NAME) {
			int c = name_cmp(x, y);
			if (c)
				return c;
			continue;
		}
		uint64_t vx = key_value(x, sort_keys[i]), vy = key_value(y, sort_keys[i]);
		if (vx != vy)
			return vx < vy ? 1 : -1;
	}
	return name_cmp(x, y);
}

/* --by-arg's argument: a number N (argN: 1-6 a register, 7 and up a
 * stack word) or a value's name. */
static int parse_by_arg(const char *s, char *name, size_t len)
{
	if ((*s >= '0' && *s <= '9') || *s == '-' || *s == '+') {
		char *end;
		unsigned long n = strtoul(s, &end, 10);
		if (*s >= '1' && *s <= '9' && !*end && n <= ARG_INDEX_MAX) {
			snprintf(name, len, "arg%lu", n);
			return 0;
		}
	} else if (*s && strlen(s) < len) {
		snprintf(name, len, "%s", s);
		return 0;
	}
	cli_error("--by-arg needs an argument number from 1 to %d or a value's name (arg1, fparg2), not '%s'",
		  ARG_INDEX_MAX, s);
	return -1;
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_field(const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

/* The first CSV columns of a row: "function" and, with --by-arg, the
 * value (empty for a function's own row). */
static void csv_name(struct report *r, const struct func_stats *f)
{
	if (r->task) {
		printf("%u,", r->t->threads[f->site].tid);
		csv_field(r->t->threads[f->site].name);
		return;
	}
	if (!r->by_arg) {
		fputs(trace_site_name(r->t, f->site), stdout);
		return;
	}
	csv_field(trace_site_name(r->t, f->site));
	putchar(',');
	if (f->group) {
		const char *v = r->groups[f->group - 1].value;
		csv_field(v ? v : "<other>");
	}
}

static void report_free(struct report *r)
{
	for (size_t i = 0; i < r->group_cnt; i++) {
		free(r->groups[i].value);
		free(r->groups[i].label);
	}
	free(r->groups);
	free(r->sys);
	free(r->slots);
	free(r->sites);
	free(r->v);
	free(r->active);
	free(r->ctx);
	view_filter_free(&r->filter);
	free(r->compiled);
	view_close(r->t);
}

static int sys_cmp(const void *a, const void *b)
{
	const struct sys_row *x = a, *y = b;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return x->site != y->site ? (x->site < y->site ? -1 : 1) : (x->nr < y->nr ? -1 : x->nr > y->nr);
}

/* report --kernel: a row per function and system call, by time. */
static int kernel_report(struct report *r, int csv)
{
	size_t n = 0;
	for (size_t i = 0; i < r->sys_cap; i++)
		if (r->sys[i].used)
			r->sys[n++] = r->sys[i];
	qsort(r->sys, n, sizeof(*r->sys), sys_cmp);
	if (!r->t->kernel_events[KEV_SYSCALL])
		cli_error("warning: %s has no system call (record with --kernel=syscall, as root)", r->t->path);
	if (csv)
		printf("function,syscall,calls,errors,total_ns\n");
	else
		printf("  %12s  %10s  %8s  %-20s  %s\n  %12s  %10s  %8s  %-20s  %s\n", "Total time", "Calls", "Errors",
		       "Syscall", "Function", "==========", "=====", "======", "=======", "========");
	for (size_t i = 0; i < n; i++) {
		const struct sys_row *s = &r->sys[i];
		char name[64], tot[32];
		const char *fn = s->site == UINT32_MAX ? "(outside any traced call)" : trace_site_name(r->t, s->site);
		view_syscall_name(s->nr, name, sizeof(name));
		if (csv) {
			csv_field(fn);
			printf(",%s,%llu,%llu,%llu\n", name, (unsigned long long)s->calls, (unsigned long long)s->errors,
			       (unsigned long long)s->total);
		} else {
			cli_format_duration(tot, sizeof(tot), s->total);
			printf("  %12s  %10llu  %8llu  %-20s  %s\n", tot, (unsigned long long)s->calls,
			       (unsigned long long)s->errors, name, fn);
		}
	}
	return view_close_output(stdout, "standard output");
}

static const char report_usage[] =
	"usage: needle report [-i FILE] [options] [PROGRAM]\n"
	"Per function: total (inclusive) and self (exclusive) time and the calls (uftrace\n"
	"report; -f +total-avg,total-min,total-max adds the average, shortest and longest call).\n"
	"  -i, --input FILE   trace file (default needle.data)\n"
	"      --tid TID      only this thread\n"
	"  -E, --event linux:schedule  each time a call was off the\n"
	"                     CPU (record -E linux:schedule or --kernel=switch) as a call\n"
	"                     to linux:schedule inside it; --event-full: outside calls too;\n"
	"                     --no-sched-preempt: not where it was preempted; --no-sched\n"
	"                     (or --no-event): none;\n"
	"                     an -E beside either wins; --no-pager: accepted (needle never pages)\n"
	"  -s, --sort KEYS    total (default), self, calls, avg, min, max, self-avg, self-min,\n"
	"                     self-max, name, or with kernel events (record --kernel) oncpu,\n"
	"                     offcpu, syscall; several with commas, the next breaking ties\n"
	"  -f, --output-fields FIELDS\n"
	"                     the columns: total, self, call, total-avg, total-min, total-max,\n"
	"                     self-avg, self-min, self-max, oncpu, offcpu, syscall (avg, min, max\n"
	"                     for total-*), none; +FIELDS adds to the default\n"
	"      --avg-total    the average, shortest and longest total time of a call\n"
	"      --avg-self     the same of its self time (and avg, min, max sort by it)\n"
	"      --diff OTHER   per function, the difference from this trace to OTHER's\n"
	"      --diff-policy full|compact,percent|no-percent,abs|no-abs\n"
	"                     full: each trace's numbers and the difference (compact: the\n"
	"                     difference); percent: times' differences as a percentage;\n"
	"                     abs (default): sorted by the difference's size\n"
	"      --sort-column 0|1|2\n"
	"                     with full, sort by the base's (0), the other's (1) or the\n"
	"                     difference (2, the default)\n"
	"  -F, --filter FUNC  only FUNC's calls and what they call (repeatable)\n"
	"  -N, --notrace FUNC not FUNC's calls nor what they call (repeatable)\n"
	"  -D, --depth N      at most N levels (below the outermost -F call)\n"
	"      --no-libcall   not the calls the program makes into libraries\n"
	"  -t, --time-filter TIME\n"
	"                     only the calls that lasted TIME or longer (100us, 2ms)\n"
	"  -r, --time-range START~END\n"
	"                     only the calls that began between START and END (either may be\n"
	"                     left out): seconds as replay -f time shows them, or with a unit\n"
	"      --csv          function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns (and with kernel\n"
	"                     events oncpu_ns,offcpu_ns,syscall_ns: the calls' time on and off the\n"
	"                     CPU and in system calls, their children's included)\n"
	"      --kernel       the system calls of each function (record --kernel=syscall): calls,\n"
	"                     errors and time in the kernel, by function and system call\n"
	"      --srcline      each function's source file and line (DWARF) after its name\n"
	"      --with-syms PATH  names for stripped objects' functions, from a trace recorded before\n"
	"                     they were stripped or a directory of their unstripped files\n"
	"      --task         a row per thread (uftrace's): its outermost calls' time, its\n"
	"                     self time and its calls (-f total,self,func,tid)\n"
	"      --by-arg N|NAME\n"
	"                     a row per function and value of argN (1-6 a register, 7-255 a stack\n"
	"                     word) or of the value NAME\n"
	"                     recorded with -A, e.g. kv_get(arg1=42); past " XSTR(BY_ARG_MAX_VALUES) " values of a\n"
	"                     function, the rest in one row, kv_get(arg1=<other>); with --csv,\n"
	"                     a column for the value after function\n"
	"PROGRAM, as uftrace report takes it, must name the recorded program.\n";

/* The columns (-f, uftrace's names; needle's kernel columns too). */
enum report_field {
	RF_TOTAL, RF_ONCPU, RF_OFFCPU, RF_SYSCALL, RF_SELF, RF_TOTAL_AVG, RF_TOTAL_MIN, RF_TOTAL_MAX, RF_SELF_AVG,
	RF_SELF_MIN, RF_SELF_MAX, RF_CALLS, RF_TID, RF_COUNT
};
static const struct {
	const char *name, *alias, *header;
	enum report_key key;
} report_fields[RF_COUNT] = {
	[RF_TOTAL] = { "total", NULL, "Total time", K_TOTAL },
	[RF_ONCPU] = { "oncpu", NULL, "On CPU", K_ONCPU },
	[RF_OFFCPU] = { "offcpu", NULL, "Off CPU", K_OFFCPU },
	[RF_SYSCALL] = { "syscall", NULL, "Syscall", K_SYSCALL },
	[RF_SELF] = { "self", NULL, "Self time", K_SELF },
	[RF_TOTAL_AVG] = { "total-avg", "avg", "Total avg", K_TOTAL_AVG },
	[RF_TOTAL_MIN] = { "total-min", "min", "Total min", K_TOTAL_MIN },
	[RF_TOTAL_MAX] = { "total-max", "max", "Total max", K_TOTAL_MAX },
	[RF_SELF_AVG] = { "self-avg", NULL, "Self avg", K_SELF_AVG },
	[RF_SELF_MIN] = { "self-min", NULL, "Self min", K_SELF_MIN },
	[RF_SELF_MAX] = { "self-max", NULL, "Self max", K_SELF_MAX },
	[RF_CALLS] = { "call", "calls", "Calls", K_CALLS },
	[RF_TID] = { "tid", NULL, "TID", K_NAME }, /* --task's */
};

struct report_columns {
	enum report_field v[RF_COUNT];
	int n;
};

static void columns_add(struct report_columns *c, enum report_field f)
{
	for (int i = 0; i < c->n; i++)
		if (c->v[i] == f)
			return;
	c->v[c->n++] = f;
}

/* The default columns, uftrace's: total, self and the calls just before
 * the function (the kernel's share after total when it was recorded);
 * -f +total-avg,total-min,total-max adds the average, shortest and
 * longest call, and --avg-total and --avg-self are uftrace's three
 * columns of the one or the other. */
static void columns_default(struct report_columns *c, int kern, int avg)
{
	c->n = 0;
	if (avg == 1) {
		columns_add(c, RF_TOTAL_AVG);
		columns_add(c, RF_TOTAL_MIN);
		columns_add(c, RF_TOTAL_MAX);
		return;
	}
	if (avg == 2) {
		columns_add(c, RF_SELF_AVG);
		columns_add(c, RF_SELF_MIN);
		columns_add(c, RF_SELF_MAX);
		return;
	}
	columns_add(c, RF_TOTAL);
	if (kern) {
		columns_add(c, RF_ONCPU);
		columns_add(c, RF_OFFCPU);
		columns_add(c, RF_SYSCALL);
	}
	columns_add(c, RF_SELF);
	columns_add(c, RF_CALLS);
}

/* -f FIELD,...: these columns; "+FIELD,..." the default's and these;
 * "none" the function alone. */
static int columns_parse(struct report_columns *c, const char *arg, int kern, int task)
{
	char buf[256];
	const char *list = arg;
	if (*arg == '+') {
		columns_default(c, kern, 0);
		list = arg + 1;
	} else {
		c->n = 0;
	}
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int found = -1;
		if (!strcmp(w, "none"))
			continue;
		for (int i = 0; i < RF_COUNT && found < 0; i++)
			if (!strcmp(w, report_fields[i].name) ||
			    (report_fields[i].alias && !strcmp(w, report_fields[i].alias)))
				found = i;
		/* uftrace's task fields: func (the calls), tid. */
		if (task && !strcmp(w, "func"))
			found = RF_CALLS;
		if (found == RF_TID && !task)
			found = -1;
		if (found < 0) {
			cli_error("report: unknown field '%s' (total, self, call, total-avg, total-min, total-max, "
				  "self-avg, self-min, self-max, oncpu, offcpu, syscall, or none; with --task "
				  "func and tid)", w);
			return -1;
		}
		columns_add(c, (enum report_field)found);
	}
	return 0;
}

static void print_columns(struct report *r, const struct report_columns *c)
{
	if (!c->n)
		return; /* -f none: the functions alone, as uftrace prints them */
	for (int i = 0; i < c->n; i++) {
		const char *h = r->task && c->v[i] == RF_CALLS ? "Num funcs" : report_fields[c->v[i]].header;
		printf("  %*s", c->v[i] == RF_CALLS ? 10 : c->v[i] == RF_TID ? 6 : 12, h);
	}
	const char *last = r->task ? (tid_column ? "Task name" : "   TID  Task name")
				   : r->srcline ? "Function [Source]" : "Function";
	printf("  %s\n", last);
	for (int i = 0; i < c->n; i++) {
		char line[16];
		const char *h = r->task && c->v[i] == RF_CALLS ? "Num funcs" : report_fields[c->v[i]].header;
		size_t len = strlen(h);
		memset(line, '=', len);
		line[len] = 0;
		printf("  %*s", c->v[i] == RF_CALLS ? 10 : c->v[i] == RF_TID ? 6 : 12, line);
	}
	printf("  %s\n", !r->task ? "========" : tid_column ? "=========" : "======  =========");
}

static void print_row(struct report *r, const struct report_columns *c, const struct func_stats *f)
{
	for (int i = 0; i < c->n; i++) {
		char buf[32];
		if (c->v[i] == RF_CALLS) {
			printf("  %10llu", (unsigned long long)f->calls);
			continue;
		}
		if (c->v[i] == RF_TID) {
			printf("  %6u", r->t->threads[f->site].tid);
			continue;
		}
		if (f->timed)
			cli_format_duration(buf, sizeof(buf), key_value(f, report_fields[c->v[i]].key));
		else
			strcpy(buf, "-"); /* called, but no call of it has a duration */
		printf("  %12s", buf);
	}
	const char *file;
	unsigned line;
	if (r->srcline && !r->task && view_site_srcline(r->t, f->site, &r->compiled, &file, &line))
		printf("  %s [%s:%u]\n", row_name(r, f), file, line);
	else
		printf("  %s\n", row_name(r, f));
}

/* The rows of r, compacted at the front of r->v: the functions' own,
 * then the --by-arg groups', each made a label.  Their number, or
 * SIZE_MAX out of memory; *timed set when some call has a duration. */
static size_t report_rows(struct report *r, int *timed)
{
	size_t n = 0;
	for (size_t i = 0; i < r->cap; i++) {
		if (r->v[i].calls)
			r->v[n++] = r->v[i];
		*timed |= r->v[i].timed != 0;
	}
	if (!r->group_cnt)
		return n;
	struct func_stats *v = realloc(r->v, (n + r->group_cnt) * sizeof(*v));
	if (!v)
		return SIZE_MAX;
	r->v = v;
	for (size_t i = 0; i < r->group_cnt; i++) {
		struct group *g = &r->groups[i];
		/* A value seen only outside -r's range (every call's value is
		 * grouped before the range is looked at): no row. */
		if (!g->st.calls)
			continue;
		const char *name = trace_site_name(r->t, g->st.site), *val = g->value ? g->value : "<other>";
		size_t len = strlen(name) + strlen(g->name) + strlen(val) + 4;
		if (!(g->label = malloc(len)))
			return SIZE_MAX;
		snprintf(g->label, len, "%s(%s=%s)", name, g->name, val);
		r->v[n++] = g->st;
		*timed |= g->st.timed != 0;
	}
	return n;
}

#define DIFF_FULL 1
#define DIFF_PERCENT 2
#define DIFF_ABS 4

/* --diff-policy full|compact,percent|no-percent,abs|no-abs. */
static int parse_diff_policy(const char *arg, int *flags)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "full"))
			*flags |= DIFF_FULL;
		else if (!strcmp(w, "compact"))
			*flags &= ~DIFF_FULL;
		else if (!strcmp(w, "percent"))
			*flags |= DIFF_PERCENT;
		else if (!strcmp(w, "no-percent"))
			*flags &= ~DIFF_PERCENT;
		else if (!strcmp(w, "abs"))
			*flags |= DIFF_ABS;
		else if (!strcmp(w, "no-abs"))
			*flags &= ~DIFF_ABS;
		else {
			cli_error("report: unknown --diff-policy '%s' (full, compact, percent, no-percent, abs, no-abs)", w);
			return -1;
		}
	}
	return 0;
}

/* report --diff: a row per function name of either trace, its numbers in
 * the base and the other trace.  compact (the default): the difference
 * of each column; full: the base's, the other's and the difference;
 * percent: the difference as a percentage of the base's (for times);
 * abs (the default): rows sorted by the difference's size, else by its
 * value. */
struct diff_row {
	const char *name;
	struct func_stats a, b;
};

static struct report *diff_base;
static enum report_key diff_keys[SORT_KEYS_MAX];
static int diff_key_cnt, diff_flags, diff_column;

static int by_name(const void *x, const void *y)
{
	const struct func_stats *a = x, *b = y;
	return strcmp(row_name(diff_base, a), row_name(diff_base, b));
}

/* The value a sort compares: the base's (column 0), the other's (1) or
 * the difference (2, the default). */
static double diff_sort_value(const struct diff_row *d, enum report_key k)
{
	double a = (double)key_value(&d->a, k), b = (double)key_value(&d->b, k);
	double v = diff_column == 0 ? a : diff_column == 1 ? b : b - a;
	if (diff_column == 2 && (diff_flags & DIFF_PERCENT) && k != K_CALLS)
		v = a ? (b - a) / a : 0;
	return diff_column == 2 && (diff_flags & DIFF_ABS) && v < 0 ? -v : v;
}

static int diff_cmp(const void *x, const void *y)
{
	const struct diff_row *a = x, *b = y;
	for (int i = 0; i < diff_key_cnt; i++) {
		if (diff_keys[i] == K_NAME) {
			int c = strcmp(a->name, b->name);
			if (c)
				return c;
			continue;
		}
		double va = diff_sort_value(a, diff_keys[i]), vb = diff_sort_value(b, diff_keys[i]);
		if (va != vb)
			return va < vb ? 1 : -1;
	}
	return strcmp(a->name, b->name);
}

/* Rows merged by name (a function of one name in two objects is one row
 * of each trace); r's rows sorted by name first. */
static size_t merge_by_name(struct report *r, size_t n)
{
	diff_base = r;
	qsort(r->v, n, sizeof(*r->v), by_name);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		struct func_stats *f = &r->v[i];
		if (m && !strcmp(row_name(r, &r->v[m - 1]), row_name(r, f))) {
			struct func_stats *g = &r->v[m - 1];
			if (f->timed && (!g->timed || f->min < g->min))
				g->min = f->min;
			if (f->timed && (!g->timed || f->self_min < g->self_min))
				g->self_min = f->self_min;
			g->max = f->max > g->max ? f->max : g->max;
			g->self_max = f->self_max > g->self_max ? f->self_max : g->self_max;
			g->calls += f->calls;
			g->timed += f->timed;
			g->total += f->total;
			g->sum += f->sum;
			g->self += f->self;
			g->syscall += f->syscall;
			g->offcpu += f->offcpu;
			continue;
		}
		r->v[m++] = *f;
	}
	return m;
}

/* "+1.234 ms", "-0.500 us", "+3", "+2.99%". */
static void format_delta(char *buf, size_t len, double a, double b, int is_time, int percent)
{
	if (percent && is_time) {
		if (!a)
			snprintf(buf, len, "%s", b ? "new" : "+0.00%");
		else
			snprintf(buf, len, "%+.2f%%", (b - a) * 100.0 / a);
		return;
	}
	if (!is_time) {
		snprintf(buf, len, "%+lld", (long long)(b - a));
		return;
	}
	char d[32];
	double v = b - a;
	cli_format_duration(d, sizeof(d), (uint64_t)(v < 0 ? -v : v));
	const char *p = d;
	while (*p == ' ')
		p++;
	snprintf(buf, len, "%c%s", v < 0 ? '-' : '+', p);
}

static int report_diff(struct report *r, size_t n, const char *other_path, uint32_t tid, const struct view_sched *sched,
		       const struct report_columns *fields, int flags, int column, const char *sort_arg)
{
	struct report o = { .by_arg = r->by_arg, .filter = r->filter, .min_ns = r->min_ns,
			     .range_start = r->range_start, .range_end = r->range_end };
	struct report_columns cols;
	int rc = 1;

	/* The other trace through the same filters, from its own start. */
	r->filter = (struct view_filter){ 0 };
	view_filter_stop(&o.filter);
	if (!(o.t = view_open(other_path)))
		goto out;
	if (r->with_syms && view_use_syms(o.t, r->with_syms))
		goto out;
	if (tid && !trace_thread_find(o.t, tid)) {
		cli_error("thread %u is not in %s (needle info lists the threads)", tid, o.t->path);
		goto out;
	}
	if (view_sched_apply(o.t, sched))
		goto out;
	if (view_filter_active(&o.filter) && view_filter_start(&o.filter, o.t)) {
		cli_error("out of memory");
		goto out;
	}
	if (o.by_arg ? view_each_event_mark(o.t, tid, group_of, &o, account, &o) : view_each_event(o.t, tid, account, &o))
		goto out;
	int timed = 0;
	size_t m = o.oom ? SIZE_MAX : report_rows(&o, &timed);
	if (m == SIZE_MAX) {
		cli_error("out of memory");
		goto out;
	}
	n = merge_by_name(r, n);
	m = merge_by_name(&o, m);
	struct diff_row *v = malloc((n + m ? n + m : 1) * sizeof(*v));
	if (!v) {
		cli_error("out of memory");
		goto out;
	}
	size_t k = 0, i = 0, j = 0;
	while (i < n || j < m) {
		const char *an = i < n ? row_name(r, &r->v[i]) : NULL, *bn = j < m ? row_name(&o, &o.v[j]) : NULL;
		int c = !an ? 1 : !bn ? -1 : strcmp(an, bn);
		v[k] = (struct diff_row){ c <= 0 ? an : bn, { 0 }, { 0 } };
		if (c <= 0)
			v[k].a = r->v[i++];
		if (c >= 0)
			v[k].b = o.v[j++];
		k++;
	}
	/* Sorted by the keys of -s (default total), on the differences. */
	if (parse_sort_keys(sort_arg ? sort_arg : "total", 0)) {
		free(v);
		rc = 2;
		goto out;
	}
	memcpy(diff_keys, sort_keys, sizeof(diff_keys));
	diff_key_cnt = sort_key_cnt;
	diff_flags = flags;
	diff_column = column;
	qsort(v, k, sizeof(*v), diff_cmp);
	if (fields)
		cols = *fields;
	else {
		cols.n = 0;
		columns_add(&cols, RF_TOTAL);
		columns_add(&cols, RF_SELF);
		columns_add(&cols, RF_CALLS);
	}
	printf("#\n# needle report --diff\n#  [0] base: %s\n#  [1] diff: %s\n#\n", r->t->path, o.t->path);
	int w = flags & DIFF_FULL ? 36 : 12;
	for (int c = 0; c < cols.n; c++) {
		char h[64];
		snprintf(h, sizeof(h), "%s%s", report_fields[cols.v[c]].header, flags & DIFF_FULL ? " (diff)" : "");
		printf("  %*s", w, h);
	}
	printf("  %s\n", "Function");
	for (int c = 0; c < cols.n; c++) {
		char line[64];
		memset(line, '=', (size_t)w);
		line[w] = 0;
		printf("  %s", line);
	}
	printf("  %s\n", "========");
	for (size_t x = 0; x < k; x++) {
		for (int c = 0; c < cols.n; c++) {
			enum report_key key = report_fields[cols.v[c]].key;
			int is_time = cols.v[c] != RF_CALLS;
			double a = (double)key_value(&v[x].a, key), b = (double)key_value(&v[x].b, key);
			char delta[48];
			format_delta(delta, sizeof(delta), a, b, is_time, flags & DIFF_PERCENT);
			if (flags & DIFF_FULL) {
				char ab[32], bb[32];
				if (is_time) {
					cli_format_duration(ab, sizeof(ab), (uint64_t)a);
					cli_format_duration(bb, sizeof(bb), (uint64_t)b);
				} else {
					snprintf(ab, sizeof(ab), "%llu", (unsigned long long)a);
					snprintf(bb, sizeof(bb), "%llu", (unsigned long long)b);
				}
				printf("  %10s %10s %12s", ab, bb, delta);
			} else {
				printf("  %12s", delta);
			}
		}
		printf("  %s\n", v[x].name);
	}
	free(v);
	rc = view_close_output(stdout, "standard output");
out:
	/* o's rows name o's sites: freed with it. */
	report_free(&o);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },   { "sort", required_argument, NULL, 's' },
		{ "tid", required_argument, NULL, 'T' },     { "help", no_argument, NULL, 'h' },
		{ "csv", no_argument, NULL, 'C' },           { "by-arg", required_argument, NULL, 'B' },
		{ "kernel", no_argument, NULL, 'K' },        { "output-fields", required_argument, NULL, 'f' },
		{ "avg-total", no_argument, NULL, 'A' },     { "avg-self", no_argument, NULL, 'S' },
		{ "filter", required_argument, NULL, 'F' },  { "notrace", required_argument, NULL, 'N' },
		{ "depth", required_argument, NULL, 'D' },   { "diff", required_argument, NULL, 'X' },
		{ "diff-policy", required_argument, NULL, 'P' }, { "sort-column", required_argument, NULL, 'O' },
		{ "no-libcall", no_argument, NULL, 'L' },    { "time-filter", required_argument, NULL, 't' },
		{ "task", no_argument, NULL, 'k' },          { "srcline", no_argument, NULL, 'l' },
		{ "time-range", required_argument, NULL, 'r' }, { "with-syms", required_argument, NULL, 'W' },
		VIEW_SCHED_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	const char *input = NULL, *sort_arg = NULL, *fields_arg = NULL, *diff_path = NULL;
	int diff_policy = DIFF_ABS, sort_column = 2;
	struct report r = { .range_end = UINT64_MAX };
	uint32_t tid = 0;
	int c, csv = 0, avg = 0;
	char by_arg[256];

	struct view_sched sched = { 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:d:s:f:F:N:D:t:r:hE:", longopts, NULL)) != -1) {
		switch (c) {
		VIEW_SCHED_CASES:
			if (view_sched_option(&sched, c, optarg))
				return 2;
			break;
		case 'r':
			if (view_parse_range(optarg, &r.range_start, &r.range_end)) {
				view_filter_free(&r.filter);
				return 2;
			}
			break;
		case 'i':
		case 'd': /* uftrace's -d DIR: here the trace file */
			input = optarg;
			break;
		case 's':
			sort_arg = optarg;
			break;
		case 'f':
			fields_arg = optarg;
			break;
		case 'A':
		case 'S':
			if (avg && avg != (c == 'A' ? 1 : 2)) {
				cli_error("report: --avg-total or --avg-self, not both");
				view_filter_free(&r.filter);
				return 2;
			}
			avg = c == 'A' ? 1 : 2;
			break;
		case 'F':
		case 'N':
			if (view_filter_add(&r.filter, "report", optarg, c == 'N')) {
				view_filter_free(&r.filter);
				return 2;
			}
			break;
		case 'D':
			if (view_filter_depth(&r.filter, "report", optarg)) {
				view_filter_free(&r.filter);
				return 2;
			}
			break;
		case 'T':
			if (view_parse_tid(optarg, &tid)) {
				view_filter_free(&r.filter);
				return 2;
			}
			break;
		case 'C':
			csv = 1;
			break;
		case 'K':
			r.kernel_view = 1;
			break;
		case 'k':
			r.task = 1;
			break;
		case 'l':
			r.srcline = 1;
			break;
		case 'W':
			r.with_syms = optarg;
			break;
		case 'X':
			diff_path = optarg;
			break;
		case 'L':
			r.filter.no_libcall = 1;
			break;
		case 't':
			if (cli_parse_duration(optarg, &r.min_ns) || !r.min_ns) {
				cli_error("report: -t takes a duration (100us, 2ms, 1s), not '%s'", optarg);
				view_filter_free(&r.filter);
				return 2;
			}
			break;
		case 'P':
			if (parse_diff_policy(optarg, &diff_policy)) {
				view_filter_free(&r.filter);
				return 2;
			}
			break;
		case 'O':
			if (strlen(optarg) != 1 || optarg[0] < '0' || optarg[0] > '2') {
				cli_error("report: --sort-column takes 0 (base), 1 (diff) or 2 (difference), not '%s'", optarg);
				view_filter_free(&r.filter);
				return 2;
			}
			sort_column = optarg[0] - '0';
			break;
		case 'B':
			if (parse_by_arg(optarg, by_arg, sizeof(by_arg))) {
				view_filter_free(&r.filter);
				return 1;
			}
			r.by_arg = by_arg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			view_filter_free(&r.filter);
			return 0;
		default:
			cli_option_error(argv[0], argc, argv, "i:d:s:f:F:N:D:t:r:hE:", longopts);
			view_filter_free(&r.filter);
			return 2;
		}
	}
	if (!diff_path && (diff_policy != DIFF_ABS || sort_column != 2)) {
		cli_error("report: --diff-policy and --sort-column are --diff's");
		view_filter_free(&r.filter);
		return 2;
	}
	if (r.task && (diff_path || r.kernel_view || r.by_arg)) {
		cli_error("report: --task gives a row per thread: not with --diff, --kernel or --by-arg");
		view_filter_free(&r.filter);
		return 2;
	}
	if (diff_path && (csv || r.kernel_view)) {
		cli_error("report: --diff prints a table: not with --csv or --kernel");
		view_filter_free(&r.filter);
		return 2;
	}
	if (parse_sort_keys(sort_arg ? sort_arg : avg ? "avg" : "total", avg == 2)) {
		view_filter_free(&r.filter);
		return 2;
	}
	struct report_columns cols;
	if (fields_arg && columns_parse(&cols, fields_arg, 0, r.task)) {
		view_filter_free(&r.filter);
		return 2;
	}
	/* uftrace report takes the program's name too (view_check_program_arg). */
	const char *prog_arg = optind == argc - 1 ? argv[--argc] : NULL;
	int status;
	if (!(r.t = view_start("report", argc, argv, optind, input, tid, &sched, &status))) {
		view_filter_free(&r.filter);
		return status;
	}
	if (prog_arg && view_check_program_arg(r.t, "report", prog_arg)) {
		report_free(&r);
		return 2;
	}
	if (r.with_syms && view_use_syms(r.t, r.with_syms)) {
		report_free(&r);
		return 1;
	}
	if (view_filter_active(&r.filter) && view_filter_start(&r.filter, r.t)) {
		cli_error("out of memory");
		report_free(&r);
		return 1;
	}
	if (r.by_arg ? view_each_event_mark(r.t, tid, group_of, &r, account, &r) : view_each_event(r.t, tid, account, &r)) {
		report_free(&r);
		return 1;
	}
	if (r.oom) {
		cli_error("out of memory");
		report_free(&r);
		return 1;
	}
	if (r.kernel_view) {
		int rc = kernel_report(&r, csv);
		report_free(&r);
		return rc;
	}
	if (r.by_arg && !r.group_cnt)
		cli_error("warning: no call in %s has a value named %s (recorded with -A): one row per function",
			  r.t->path, r.by_arg);
	int timed = 0;
	size_t n = report_rows(&r, &timed);
	if (n == SIZE_MAX) {
		cli_error("out of memory");
		report_free(&r);
		return 1;
	}
	if (diff_path) {
		int rc = report_diff(&r, n, diff_path, tid, &sched, fields_arg ? &cols : NULL, diff_policy, sort_column, sort_arg);
		report_free(&r);
		return rc;
	}
	/* Entries only (the function tracer): no time to sort by. */
	if (!timed && r.t->tracer == TRACER_FUNCTION && sort_keys[0] != K_NAME) {
		sort_keys[0] = K_CALLS;
		sort_key_cnt = 1;
	}
	sort_report = &r;
	qsort(r.v, n, sizeof(*r.v), cmp_stats);
	/* The times of calls that overlap a loss are missing or bounds; CSV
	 * keeps its lines all data, so the note goes to stderr there. */
	char why[256] = "";
	if (r.t->end.write_errno) /* the buffer's reason goes without saying here */
		view_lost_reason(r.t, why, sizeof(why));
	if (r.t->end.lost_events && csv)
		cli_error("warning: %llu events lost%s%s%s: times of calls around the loss are incomplete",
			  (unsigned long long)r.t->end.lost_events, why[0] ? " (" : "", why, why[0] ? ")" : "");
	else if (r.t->end.lost_events)
		printf("# %llu events lost%s%s%s: times of calls around the loss are incomplete\n",
		       (unsigned long long)r.t->end.lost_events, why[0] ? " (" : "", why, why[0] ? ")" : "");
	/* The function tracer's trace has no durations: calls alone.  (A
	 * function_graph trace keeps its columns whatever the filters leave,
	 * so that what reads them does not see them change.) */
	if (!timed && r.t->tracer == TRACER_FUNCTION) {
		if (csv)
			printf("function%s%s,calls\n", r.by_arg ? "," : "", r.by_arg ? r.by_arg : "");
		else
			printf("  %10s  %s\n  %10s  %s\n", "Calls", "Function", "=====", "========");
		for (size_t i = 0; i < n; i++) {
			if (csv) {
				csv_name(&r, &r.v[i]);
				printf(",%llu\n", (unsigned long long)r.v[i].calls);
			} else {
				printf("  %10llu  %s\n", (unsigned long long)r.v[i].calls, row_name(&r, &r.v[i]));
			}
		}
		report_free(&r);
		return view_close_output(stdout, "standard output");
	}
	int kern = r.t->kernel_events[KEV_SYSCALL] || r.t->kernel_events[KEV_OFFCPU];
	if (csv) {
		printf("%s%s%s,calls,total_ns,self_ns,avg_ns,min_ns,max_ns%s\n", r.task ? "tid,task" : "function",
		       r.by_arg ? "," : "", r.by_arg ? r.by_arg : "", kern ? ",oncpu_ns,offcpu_ns,syscall_ns" : "");
		for (size_t i = 0; i < n; i++) {
			struct func_stats *f = &r.v[i];
			csv_name(&r, f);
			printf(",%llu,%llu,%llu,%llu,%llu,%llu", (unsigned long long)f->calls, (unsigned long long)f->total,
			       (unsigned long long)f->self, (unsigned long long)(f->timed ? f->sum / f->timed : 0),
			       (unsigned long long)f->min, (unsigned long long)f->max);
			if (kern)
				printf(",%llu,%llu,%llu", (unsigned long long)(f->total > f->offcpu ? f->total - f->offcpu : 0),
				       (unsigned long long)f->offcpu, (unsigned long long)f->syscall);
			putchar('\n');
		}
		report_free(&r);
		return view_close_output(stdout, "standard output");
	}
	if (!fields_arg && r.task) {
		/* uftrace's: total, self, the calls; then TID and name. */
		cols.n = 0;
		columns_add(&cols, RF_TOTAL);
		columns_add(&cols, RF_SELF);
		columns_add(&cols, RF_CALLS);
	} else if (!fields_arg) {
		columns_default(&cols, kern, avg);
	} else if (*fields_arg == '+') {
		columns_parse(&cols, fields_arg, kern, r.task); /* checked above; the kernel's columns known now */
	}
	for (int i = 0; i < cols.n; i++)
		tid_column |= cols.v[i] == RF_TID;
	print_columns(&r, &cols);
	for (size_t i = 0; i < n; i++)
		print_row(&r, &cols, &r.v[i]);
	report_free(&r);
	return view_close_output(stdout, "standard output");
}
