/* tui.c - needle tui: an interactive terminal browser over a trace, as
 * uftrace's tui is over its data: the call graph of the whole trace,
 * folded and unfolded by key, the report of its functions, the call graph
 * of one function (its callers as an inverted tree, its callees merged),
 * search, per thread.
 *
 * Invariants:
 *  - One pass over the trace, in batches between keys: the first screen
 *    shows after the first batch (a few milliseconds, whatever the size
 *    of the trace), and the screens fill in as the pass goes on; the
 *    status line says how far it is.  No event is read twice.
 *  - Memory is the call tree of distinct paths (call_tree.h, paths merged
 *    by function name as needle graph merges them) with each node's calls
 *    and times, and the reader's stacks of open calls: bounded by the
 *    paths and the deepest stack, never by the number of events.
 *  - Every screen is derived from the tree when it is shown: the graph's
 *    rows are the unfolded nodes, the report and a function's call graph
 *    one walk of the tree, iterative (a recursion 100,000 deep is a path
 *    100,000 nodes long, never as deep a C stack).
 *  - The terminal is given back as it was on every way out (q, end of
 *    input, a damaged file, SIGINT/SIGTERM through ncurses' handlers).
 */
#include <curses.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/view/view.h"
#include "reader/call_tree.h"

/* Events decoded between two looks at the keyboard while loading: about
 * 20 ms of the reader's work on a 2-vCPU VM.  NEEDLE_TUI_BATCH sets
 * another (the tests make reading slow enough to act while it goes on). */
#define LOAD_BATCH 200000u
static unsigned load_batch_events = LOAD_BATCH;

/* calls: entries; ended: exits with a duration (total and self are
 * theirs: a call still running, or begun before a snapshot, has none). */
struct node_stats {
	uint64_t calls, ended, total, self;
};

/* A tree as a screen shows it: its nodes' numbers, which are unfolded,
 * and the rows the unfolded ones make. */
struct tree_screen {
	struct call_tree tree;
	struct node_stats *st;
	uint8_t *folded;
	size_t cap;                 /* st and folded hold cap nodes */
	uint32_t *row_node, *row_depth;
	size_t row_cnt, row_cap;
	size_t cursor, top;
};

enum tui_screen { SCR_GRAPH, SCR_REPORT, SCR_CALLS, SCR_HELP };

/* Labels of the call graph's own nodes (sites no trace has). */
#define SITE_CALLERS (UINT32_MAX - 1)
#define SITE_CALLEES (UINT32_MAX - 2)

struct report_row {
	uint32_t site;
	struct node_stats st;
};

struct tui {
	struct trace *t;
	const char *path;
	struct trace_iter it;
	int loading;
	uint64_t events;
	uint32_t *keys;              /* site -> the site its name goes by */
	struct tree_screen graph;    /* the whole trace: root, threads, calls */
	struct tree_screen calls;    /* one function's callers and callees */
	uint32_t calls_site;
	struct report_row *report;
	size_t report_cnt, report_cursor, report_top;
	int report_sort;             /* enum report_sort */
	enum tui_screen screen, back;
	size_t threads;              /* threads shown, once read */
	char search[128];
	char msg[256];               /* until the next key */
	char damage[192];            /* why reading stopped early, for good */
};

static const char *node_label(struct tui *u, struct tree_screen *ts, uint32_t n, char *buf, size_t len)
{
	const struct call_node *c = &ts->tree.v[n];
	if (ts == &u->graph && c->parent == 0) {
		const struct trace_thread *th = trace_thread_find(u->t, c->site);
		snprintf(buf, len, "[%u] %.40s", c->site, th && th->name[0] ? th->name : "thread");
		return buf;
	}
	if (c->site == SITE_CALLERS)
		return "callers (backtraces, innermost first)";
	if (c->site == SITE_CALLEES)
		return "callees (its calls merged)";
	return trace_site_name(u->t, c->site);
}

static void add_stats(struct node_stats *to, const struct node_stats *from)
{
	to->calls += from->calls;
	to->ended += from->ended;
	to->total += from->total;
	to->self += from->self;
}

/* Room for the tree's nodes in the screen's arrays: new nodes unfolded. */
static int screen_grow(struct tree_screen *ts)
{
	if (ts->tree.cnt <= ts->cap)
		return 0;
	size_t cap = ts->cap ? ts->cap : 1024;
	while (cap < ts->tree.cnt)
		cap *= 2;
	struct node_stats *st = realloc(ts->st, cap * sizeof(*st));
	if (!st)
		return -1;
	ts->st = st;
	uint8_t *f = realloc(ts->folded, cap);
	if (!f)
		return -1;
	ts->folded = f;
	memset(ts->st + ts->cap, 0, (cap - ts->cap) * sizeof(*st));
	memset(ts->folded + ts->cap, 0, cap - ts->cap);
	ts->cap = cap;
	return 0;
}

static void screen_free(struct tree_screen *ts)
{
	call_tree_free(&ts->tree);
	free(ts->st);
	free(ts->folded);
	free(ts->row_node);
	free(ts->row_depth);
	memset(ts, 0, sizeof(*ts));
}

/* The children of n in the order they were first called (the tree links
 * them newest first), into *v. */
static size_t children(const struct call_tree *t, uint32_t n, uint32_t **v, size_t *cap)
{
	size_t k = 0;
	for (uint32_t c = t->v[n].first_child; c; c = t->v[c].next_sibling) {
		if (k == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			uint32_t *nv = realloc(*v, nc * sizeof(*nv));
			if (!nv)
				return SIZE_MAX;
			*v = nv;
			*cap = nc;
		}
		(*v)[k++] = c;
	}
	for (size_t i = 0; i < k / 2; i++) {
		uint32_t x = (*v)[i];
		(*v)[i] = (*v)[k - 1 - i];
		(*v)[k - 1 - i] = x;
	}
	return k;
}

/* The threads of the graph by tid (the reader meets them in time order,
 * newest first in the tree's lists): the program's first thread first. */
static const struct call_tree *sorting_tree;

static int by_tid(const void *a, const void *b)
{
	uint32_t x = sorting_tree->v[*(const uint32_t *)a].site, y = sorting_tree->v[*(const uint32_t *)b].site;
	return (x > y) - (x < y);
}

/* The rows: every node whose callers are all unfolded, depth first in
 * call order, the cursor kept on its node.  An explicit stack. */
static int screen_rows(struct tui *u, struct tree_screen *ts)
{
	uint32_t at = ts->row_cnt && ts->cursor < ts->row_cnt ? ts->row_node[ts->cursor] : 0;
	uint32_t *stack = NULL, *kids = NULL, *dep = NULL;
	size_t sp = 0, scap = 0, kcap = 0;
	int err = 0;

	ts->row_cnt = 0;
	if (screen_grow(ts))
		return -1;
	/* Push the root's children, last first, so the first pops first. */
	size_t k = children(&ts->tree, 0, &kids, &kcap);
	if (ts == &u->graph && k != SIZE_MAX) {
		sorting_tree = &ts->tree;
		qsort(kids, k, sizeof(*kids), by_tid);
	}
	for (size_t i = k; i-- > 0 && k != SIZE_MAX;) {
		if (sp == scap) {
			scap = scap ? scap * 2 : 256;
			uint32_t *ns = realloc(stack, scap * sizeof(*ns)), *nd = ns ? realloc(dep, scap * sizeof(*nd)) : NULL;
			if (ns)
				stack = ns;
			if (!ns || !nd) {
				err = -1;
				goto out;
			}
			dep = nd;
		}
		stack[sp] = kids[i];
		dep[sp++] = 0;
	}
	if (k == SIZE_MAX)
		err = -1;
	while (!err && sp) {
		uint32_t n = stack[--sp], d = dep[sp];
		if (ts->row_cnt == ts->row_cap) {
			size_t rc = ts->row_cap ? ts->row_cap * 2 : 1024;
			uint32_t *rn = realloc(ts->row_node, rc * sizeof(*rn));
			if (rn)
				ts->row_node = rn;
			uint32_t *rd = rn ? realloc(ts->row_depth, rc * sizeof(*rd)) : NULL;
			if (!rn || !rd) {
				err = -1;
				break;
			}
			ts->row_depth = rd;
			ts->row_cap = rc;
		}
		ts->row_node[ts->row_cnt] = n;
		ts->row_depth[ts->row_cnt++] = d;
		if (ts->folded[n])
			continue;
		k = children(&ts->tree, n, &kids, &kcap);
		if (k == SIZE_MAX) {
			err = -1;
			break;
		}
		for (size_t i = k; i-- > 0;) {
			if (sp == scap) {
				scap *= 2;
				uint32_t *ns = realloc(stack, scap * sizeof(*ns));
				if (ns)
					stack = ns;
				uint32_t *nd = ns ? realloc(dep, scap * sizeof(*nd)) : NULL;
				if (!ns || !nd) {
					err = -1;
					break;
				}
				dep = nd;
			}
			stack[sp] = kids[i];
			dep[sp++] = d + 1;
		}
	}
out:
	free(stack);
	free(dep);
	free(kids);
	ts->cursor = 0;
	for (size_t i = 0; at && i < ts->row_cnt; i++)
		if (ts->row_node[i] == at) {
			ts->cursor = i;
			break;
		}
	return err;
}

/* One batch of the pass: each call's count at its entry, its time and
 * self time at its exit (a call still running at the end, or whose entry
 * or exit is not in the trace, counts with no time, as report says). */
static int load_batch(struct tui *u)
{
	struct tree_screen *g = &u->graph;
	struct trace_event ev;

	for (unsigned i = 0; i < load_batch_events; i++) {
		int r = trace_iter_next(&u->it, &ev);
		if (r < 0) {
			snprintf(u->damage, sizeof(u->damage), "%.180s", u->it.err);
			u->loading = 0;
			return -1;
		}
		if (!r) {
			u->loading = 0;
			return 0;
		}
		u->events++;
		if ((ev.kind != TEV_ENTRY && ev.kind != TEV_EXIT) || !ev.node)
			continue;
		if (screen_grow(g))
			return -ENOMEM;
		struct node_stats *s = &g->st[ev.node];
		if (ev.kind == TEV_ENTRY) {
			if (!(ev.flags & TEV_INHERITED))
				s->calls++;
		} else if (!(ev.flags & TEV_UNTIMED)) {
			uint64_t d = ev.ns - ev.entry_ns;
			s->ended++;
			s->total += d;
			s->self += d > ev.child_ns ? d - ev.child_ns : 0;
		}
	}
	return 0;
}

/* The report's row of a site, through an open-addressed table of the
 * sites seen (any id: a trace whose SITES section is short names its
 * functions site#N and still has them).  -1 when out of memory. */
struct site_rows {
	uint32_t *key, *row; /* key: site + 1, 0 when free */
	size_t cap;
};

static long site_row(struct tui *u, struct site_rows *m, uint32_t site)
{
	size_t j = (site * 2654435761u) & (m->cap - 1);
	while (m->key[j] && m->key[j] != site + 1)
		j = (j + 1) & (m->cap - 1);
	if (!m->key[j]) {
		m->key[j] = site + 1;
		m->row[j] = (uint32_t)u->report_cnt;
		u->report[u->report_cnt++] = (struct report_row){ .site = site };
	}
	return m->row[j];
}

/* The report: per function (by name), its calls, its self time, and the
 * time of its outermost calls (a recursion's nested calls are inside
 * their caller's time already), from one walk of the tree with a count
 * of each function's nodes open on the path.  Functions with no call
 * counted (open only before a snapshot's window) are left out, as
 * report leaves them. */
static int build_report(struct tui *u)
{
	struct call_tree *t = &u->graph.tree;
	size_t n_nodes = t->cnt ? t->cnt : 1;
	struct site_rows m = { 0 };
	uint32_t *open = NULL, *stack = malloc(n_nodes * sizeof(*stack));
	uint8_t *leaving = calloc(n_nodes, 1);
	int err = -1;

	for (m.cap = 16; m.cap < 2 * n_nodes; m.cap *= 2)
		;
	free(u->report);
	u->report_cnt = 0;
	u->report = calloc(n_nodes, sizeof(*u->report));
	m.key = calloc(m.cap, sizeof(*m.key));
	m.row = malloc(m.cap * sizeof(*m.row));
	open = calloc(n_nodes, sizeof(*open));
	if (!stack || !leaving || !u->report || !m.key || !m.row || !open)
		goto out;
	size_t sp = 0;
	for (uint32_t c = t->v[0].first_child; c; c = t->v[c].next_sibling)
		stack[sp++] = c;
	while (sp) {
		uint32_t n = stack[sp - 1];
		int is_call = t->v[n].parent != 0;
		long row = is_call ? site_row(u, &m, t->v[n].site) : -1;
		if (leaving[n]) {
			sp--;
			if (row >= 0 && leaving[n] == 1)
				open[row]--;
			continue;
		}
		leaving[n] = 1;
		if (row >= 0) {
			struct report_row *r = &u->report[row];
			const struct node_stats *s = &u->graph.st[n];
			r->st.calls += s->calls;
			r->st.ended += s->ended;
			r->st.self += s->self;
			if (!open[row])
				r->st.total += s->total;
			/* A path whose calls all began before a snapshot's
			 * window (no call counted) holds none of the others. */
			if (s->calls)
				open[row]++;
			else
				leaving[n] = 2;
		}
		for (uint32_t c = t->v[n].first_child; c; c = t->v[c].next_sibling)
			stack[sp++] = c;
	}
	size_t k = 0;
	for (size_t i = 0; i < u->report_cnt; i++)
		if (u->report[i].st.calls)
			u->report[k++] = u->report[i];
	u->report_cnt = k;
	err = 0;
out:
	free(m.key);
	free(m.row);
	free(open);
	free(stack);
	free(leaving);
	return err;
}

/* The report's order, as report -s: a key, largest first (names: in
 * order), ties by name. */
enum report_sort { SORT_TOTAL, SORT_SELF, SORT_CALLS, SORT_NAME, SORT_COUNT };
static const char *const report_sort_names[SORT_COUNT] = { "total", "self", "call", "func" };
static const struct tui *sorting_tui;
static enum report_sort sorting_key;

static int report_order(const void *a, const void *b)
{
	const struct report_row *x = a, *y = b;
	uint64_t p = 0, q = 0;
	switch (sorting_key) {
	case SORT_TOTAL:
		p = x->st.total, q = y->st.total;
		break;
	case SORT_SELF:
		p = x->st.self, q = y->st.self;
		break;
	case SORT_CALLS:
		p = x->st.calls, q = y->st.calls;
		break;
	default:
		break;
	}
	if (p != q)
		return p < q ? 1 : -1;
	return strcmp(trace_site_name(sorting_tui->t, x->site), trace_site_name(sorting_tui->t, y->site));
}

/* The call graph of site: under "callers", each path that led to its
 * outermost calls, innermost caller first (an inverted tree: callers
 * merge where their paths do); under "callees", those calls merged with
 * everything they called.  One walk of the graph's tree. */
static int build_calls(struct tui *u, uint32_t site)
{
	struct call_tree *t = &u->graph.tree;
	struct tree_screen *cs = &u->calls;
	uint32_t *stack = malloc((t->cnt + 1) * sizeof(*stack)), *map = NULL;
	uint8_t *leaving = calloc(t->cnt ? t->cnt : 1, 1);
	uint32_t open = 0;
	int err = -1;

	screen_free(cs);
	u->calls_site = site;
	if (!stack || !leaving || call_tree_init(&cs->tree, NULL) || !(map = calloc(t->cnt ? t->cnt : 1, sizeof(*map))))
		goto out;
	uint32_t callers = call_tree_child(&cs->tree, 0, SITE_CALLERS);
	uint32_t callees = callers ? call_tree_child(&cs->tree, 0, SITE_CALLEES) : 0;
	uint32_t self = callees ? call_tree_child(&cs->tree, callees, site) : 0;
	if (!self || screen_grow(cs))
		goto out;
	size_t sp = 0;
	for (uint32_t c = t->v[0].first_child; c; c = t->v[c].next_sibling)
		stack[sp++] = c;
	while (sp) {
		uint32_t n = stack[sp - 1];
		int mine = t->v[n].parent != 0 && t->v[n].site == site;
		if (leaving[n]) {
			sp--;
			open -= mine;
			continue;
		}
		leaving[n] = 1;
		const struct node_stats *s = &u->graph.st[n];
		uint32_t m = 0;
		if (mine && !open) {
			/* An outermost call: the path that led to it, then
			 * itself, merged with the others. */
			uint32_t at = callers;
			for (uint32_t p = t->v[n].parent; p && t->v[p].parent; p = t->v[p].parent) {
				if (!(at = call_tree_child(&cs->tree, at, t->v[p].site)) || screen_grow(cs))
					goto out;
				add_stats(&cs->st[at], s);
			}
			m = self;
		} else if (open) {
			/* Inside one (a nested call of the function too):
			 * merged under its caller's merged node. */
			if (!(m = call_tree_child(&cs->tree, map[t->v[n].parent], t->v[n].site)) || screen_grow(cs))
				goto out;
		}
		if (m) {
			map[n] = m;
			add_stats(&cs->st[m], s);
		}
		open += mine;
		for (uint32_t c = t->v[n].first_child; c; c = t->v[c].next_sibling)
			stack[sp++] = c;
	}
	cs->st[callers] = cs->st[self];
	cs->st[callees] = cs->st[self];
	err = screen_rows(u, cs);
out:
	free(stack);
	free(leaving);
	free(map);
	return err;
}

/* ---- drawing ---- */

/* A time column: '-' when no call of the line ended in the trace. */
static void put_time(char *buf, size_t len, uint64_t ns, uint64_t ended)
{
	if (!ended)
		snprintf(buf, len, "-");
	else
		cli_format_duration(buf, len, ns);
}

/* Width of the columns before a line's function: mark, total, self,
 * calls. */
#define ROW_PREFIX 36

/* One line of a table, cut at the terminal's width (a line longer than
 * it would wrap onto the next); the cursor's reversed and marked '>'.
 * Calls deeper than the width can indent show their depth instead of
 * more indentation, so that their name stays in sight. */
static void put_row(int y, int cursor, const struct node_stats *s, uint32_t depth, const char *mark,
		    const char *label)
{
	char tot[32], self[32], line[512], deep[32] = "";
	int room = COLS > ROW_PREFIX + 24 ? COLS - ROW_PREFIX - 24 : 0;
	long indent = 2L * depth;

	if (indent > room) {
		indent = room & ~1;
		snprintf(deep, sizeof(deep), "[depth %u] ", depth);
	}
	put_time(tot, sizeof(tot), s->total, s->ended);
	put_time(self, sizeof(self), s->self, s->ended);
	snprintf(line, sizeof(line), "%c%10s %11s %10llu  %*s%s%s%s", cursor ? '>' : ' ', tot, self,
		 (unsigned long long)s->calls, (int)indent, "", mark, deep, label);
	if (cursor)
		attron(A_REVERSE);
	mvaddnstr(y, 0, line, COLS);
	clrtoeol();
	if (cursor)
		attroff(A_REVERSE);
}

static void draw_tree(struct tui *u, struct tree_screen *ts, int y0, int rows)
{
	char lab[64];

	if (ts->cursor < ts->top)
		ts->top = ts->cursor;
	if (ts->cursor >= ts->top + (size_t)rows)
		ts->top = ts->cursor - (size_t)rows + 1;
	for (int y = 0; y < rows && ts->top + (size_t)y < ts->row_cnt; y++) {
		size_t i = ts->top + (size_t)y;
		uint32_t n = ts->row_node[i];
		const char *mark = !ts->tree.v[n].first_child ? "  " : ts->folded[n] ? "+ " : "- ";
		put_row(y0 + y, i == ts->cursor, &ts->st[n], ts->row_depth[i], mark, node_label(u, ts, n, lab, sizeof(lab)));
	}
}

static void draw_report(struct tui *u, int y0, int rows)
{
	if (u->report_cursor < u->report_top)
		u->report_top = u->report_cursor;
	if (u->report_cursor >= u->report_top + (size_t)rows)
		u->report_top = u->report_cursor - (size_t)rows + 1;
	for (int y = 0; y < rows && u->report_top + (size_t)y < u->report_cnt; y++) {
		size_t i = u->report_top + (size_t)y;
		const struct report_row *r = &u->report[i];
		put_row(y0 + y, i == u->report_cursor, &r->st, 0, "", trace_site_name(u->t, r->site));
	}
}

static const char *const help_lines[] = {
	"needle tui: keys",
	"",
	"  up, down, k, j         move",
	"  page up, page down     move a screen",
	"  home, end              first, last line",
	"  enter, space           fold or unfold the call (report: its call graph)",
	"  left, right            fold, unfold (left on a folded call: to its caller)",
	"  c                      fold the calls under this one",
	"  e                      unfold everything under this one",
	"  g                      the call graph of the whole trace, per thread",
	"  G                      the call graph of the function under the cursor",
	"  R                      the report: each function's time and calls",
	"  s                      (report) sort by the next key: total, self, call, func",
	"  /                      search a function by name (part of it); n, N: next, previous",
	"                         (escape: keep the last search)",
	"  h, ?                   this help",
	"  q                      quit",
	"",
	"TOTAL TIME counts a function's outermost calls (a recursion once), SELF TIME",
	"leaves out the calls it made; '-': no call of it ended in the trace.",
	"",
	"any key: back",
};

/* A line of text at row y, cut at the terminal's width (on the last row
 * one short of it: writing its last cell would scroll the screen). */
__attribute__((format(printf, 2, 3))) static void put_line(int y, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	mvaddnstr(y, 0, line, y == LINES - 1 && COLS > 1 ? COLS - 1 : COLS);
	clrtoeol();
}

static void draw(struct tui *u)
{
	int rows = LINES - 3;
	const char *name = u->screen == SCR_GRAPH    ? "graph"
			   : u->screen == SCR_REPORT ? "report"
			   : u->screen == SCR_CALLS  ? "call graph"
						     : "help";

	erase();
	attron(A_BOLD);
	if (u->screen == SCR_CALLS)
		put_line(0, "needle tui: %s: %s of %s", u->path, name, trace_site_name(u->t, u->calls_site));
	else
		put_line(0, "needle tui: %s: %s%s%s", u->path, name, u->screen == SCR_REPORT ? ", sorted by " : "",
			 u->screen == SCR_REPORT ? report_sort_names[u->report_sort] : "");
	attroff(A_BOLD);
	if (u->screen == SCR_HELP) {
		for (size_t i = 0; i < sizeof(help_lines) / sizeof(help_lines[0]) && (int)i + 1 < LINES - 1; i++)
			put_line((int)i + 1, "%s", help_lines[i]);
	} else {
		attron(A_UNDERLINE);
		put_line(1, "%11s %11s %10s  %s", "TOTAL TIME", "SELF TIME", "CALLS", "FUNCTION");
		attroff(A_UNDERLINE);
		if (rows > 0) {
			if (u->screen == SCR_REPORT)
				draw_report(u, 2, rows);
			else
				draw_tree(u, u->screen == SCR_GRAPH ? &u->graph : &u->calls, 2, rows);
		}
	}
	/* The file's own count of events (the reader adds closings of
	 * calls still open at the end, which are none of them). */
	uint64_t total = u->t->end.events;
	const char *keys = "  (h: help, q: quit)";
	if (u->msg[0])
		put_line(LINES - 1, "%s", u->msg);
	else if (u->loading)
		put_line(LINES - 1, "loading: %llu%% of %llu events%s",
			 (unsigned long long)(total && u->events < total ? u->events * 100 / total : 99),
			 (unsigned long long)total, keys);
	else if (u->damage[0])
		put_line(LINES - 1, "damaged: %s; shown up to there%s", u->damage, keys);
	else
		put_line(LINES - 1, "%llu events, %zu thread%s%s%s", (unsigned long long)total, u->threads,
			 u->threads == 1 ? "" : "s", u->t->incomplete ? " (the recording did not finish)" : "", keys);
	refresh();
}

/* ---- keys ---- */

static void move_cursor(size_t *cursor, size_t cnt, long by)
{
	if (!cnt)
		return;
	long c = (long)*cursor + by;
	*cursor = c < 0 ? 0 : (size_t)c >= cnt ? cnt - 1 : (size_t)c;
}

static void set_fold_under(struct tree_screen *ts, uint32_t n, uint8_t folded, int children_only)
{
	uint32_t *stack = malloc((ts->tree.cnt + 1) * sizeof(*stack));
	size_t sp = 0;

	if (!stack)
		return;
	stack[sp++] = n;
	while (sp) {
		uint32_t m = stack[--sp];
		if (m != n || !children_only)
			ts->folded[m] = folded;
		if (children_only && m != n)
			continue;
		for (uint32_t c = ts->tree.v[m].first_child; c; c = ts->tree.v[c].next_sibling)
			stack[sp++] = c;
	}
	free(stack);
}

/* Search from the cursor's node on, in the rows' order with every node
 * unfolded, for a label that contains u->search; unfold its callers and
 * put the cursor on it. */
static void search(struct tui *u, struct tree_screen *ts, int backward)
{
	char lab[64];
	size_t n = ts->tree.cnt;
	uint32_t *order = malloc((n + 1) * sizeof(*order)), *stack = malloc((n + 1) * sizeof(*stack));
	size_t cnt = 0, sp = 0, at = 0;
	uint32_t cur = ts->row_cnt ? ts->row_node[ts->cursor] : 0;

	if (!order || !stack || !u->search[0])
		goto out;
	for (uint32_t c = ts->tree.v[0].first_child; c; c = ts->tree.v[c].next_sibling)
		stack[sp++] = c; /* newest first: popped oldest first */
	while (sp) {
		uint32_t m = stack[--sp];
		if (m == cur)
			at = cnt;
		order[cnt++] = m;
		for (uint32_t c = ts->tree.v[m].first_child; c; c = ts->tree.v[c].next_sibling)
			stack[sp++] = c;
	}
	for (size_t k = 1; k <= cnt; k++) {
		uint32_t m = order[(at + (backward ? cnt - k : k)) % cnt];
		if (!strstr(node_label(u, ts, m, lab, sizeof(lab)), u->search))
			continue;
		for (uint32_t p = ts->tree.v[m].parent; p; p = ts->tree.v[p].parent)
			ts->folded[p] = 0;
		if (screen_rows(u, ts))
			break;
		for (size_t i = 0; i < ts->row_cnt; i++)
			if (ts->row_node[i] == m)
				ts->cursor = i;
		u->msg[0] = 0;
		goto out;
	}
	snprintf(u->msg, sizeof(u->msg), "no function matches '%s'", u->search);
out:
	free(order);
	free(stack);
}

/* The search's text, typed on the status line: enter takes it (1),
 * escape or an empty line leaves the last one, and the cursor, as they
 * were (0); backspace erases.  A resize
 * redraws the prompt; nothing typed here is taken as a command. */
static int read_search(struct tui *u)
{
	char buf[sizeof(u->search)] = "";
	size_t len = 0;
	int given = 0;

	curs_set(1);
	timeout(-1);
	for (;;) {
		put_line(LINES - 1, "/%s", buf);
		refresh();
		int key = getch();
		if (key == '\n' || key == KEY_ENTER) {
			if (len)
				snprintf(u->search, sizeof(u->search), "%s", buf);
			given = len != 0;
			break;
		}
		if (key == 27 || key == ERR)
			break;
		if ((key == KEY_BACKSPACE || key == 127 || key == 8) && len)
			buf[--len] = 0;
		else if (key >= ' ' && key < 127 && len + 1 < sizeof(buf)) {
			buf[len++] = (char)key;
			buf[len] = 0;
		}
	}
	curs_set(0);
	return given;
}

/* The report's next line (or previous) whose function contains the
 * search, from the cursor on, wrapping. */
static void report_search(struct tui *u, int backward)
{
	size_t cnt = u->report_cnt;

	for (size_t k = 1; k <= cnt; k++) {
		size_t i = (u->report_cursor + (backward ? cnt - k : k)) % cnt;
		if (strstr(trace_site_name(u->t, u->report[i].site), u->search)) {
			u->report_cursor = i;
			return;
		}
	}
	snprintf(u->msg, sizeof(u->msg), "no function matches '%s'", u->search);
}

/* The site under the cursor, or UINT32_MAX (a thread's line, or one of
 * a call graph's headings). */
static uint32_t cursor_site(struct tui *u)
{
	if (u->screen == SCR_REPORT)
		return u->report_cnt ? u->report[u->report_cursor].site : UINT32_MAX;
	struct tree_screen *ts = u->screen == SCR_GRAPH ? &u->graph : &u->calls;
	if (!ts->row_cnt)
		return UINT32_MAX;
	const struct call_node *c = &ts->tree.v[ts->row_node[ts->cursor]];
	if (ts == &u->graph ? !c->parent : c->site == SITE_CALLERS || c->site == SITE_CALLEES)
		return UINT32_MAX;
	return c->site;
}

static int show_calls(struct tui *u)
{
	uint32_t site = cursor_site(u);
	if (site == UINT32_MAX) {
		snprintf(u->msg, sizeof(u->msg), "no function here: move to a call first");
		return 0;
	}
	if (build_calls(u, site))
		return -ENOMEM;
	u->screen = SCR_CALLS;
	return 0;
}

/* The report, built again (as the trace read so far has it), the
 * cursor on the function it was on. */
static int show_report(struct tui *u)
{
	int shown = u->screen == SCR_REPORT || (u->screen == SCR_HELP && u->back == SCR_REPORT);
	uint32_t at = shown && u->report_cnt ? u->report[u->report_cursor].site : UINT32_MAX;

	if (build_report(u))
		return -ENOMEM;
	sorting_tui = u;
	sorting_key = (enum report_sort)u->report_sort;
	qsort(u->report, u->report_cnt, sizeof(*u->report), report_order);
	u->report_cursor = u->report_top = 0;
	for (size_t i = 0; at != UINT32_MAX && i < u->report_cnt; i++)
		if (u->report[i].site == at)
			u->report_cursor = i;
	u->screen = SCR_REPORT;
	return 0;
}

/* Reading ended: the screen that was built from part of the trace is
 * built again from all of it, the cursor where it was. */
static int loaded(struct tui *u)
{
	u->threads = 0;
	for (uint32_t c = u->graph.tree.v[0].first_child; c; c = u->graph.tree.v[c].next_sibling)
		u->threads++;
	if (u->screen == SCR_REPORT || (u->screen == SCR_HELP && u->back == SCR_REPORT)) {
		enum tui_screen was = u->screen;
		int err = show_report(u);
		u->screen = was;
		return err;
	}
	if (u->screen == SCR_CALLS || (u->screen == SCR_HELP && u->back == SCR_CALLS)) {
		/* The cursor's line is found again by its path of sites (node
		 * numbers are the new tree's); folds start over. */
		struct tree_screen *cs = &u->calls;
		uint32_t path[64];
		size_t len = 0;
		for (uint32_t n = cs->row_cnt ? cs->row_node[cs->cursor] : 0; n && len < 64; n = cs->tree.v[n].parent)
			path[len++] = cs->tree.v[n].site;
		if (build_calls(u, u->calls_site))
			return -ENOMEM;
		uint32_t n = 0;
		while (len) {
			uint32_t c = cs->tree.v[n].first_child;
			while (c && cs->tree.v[c].site != path[len - 1])
				c = cs->tree.v[c].next_sibling;
			if (!c)
				break;
			n = c;
			len--;
		}
		for (size_t i = 0; n && i < cs->row_cnt; i++)
			if (cs->row_node[i] == n)
				cs->cursor = i;
	}
	return 0;
}

/* 1: quit, 0: go on, negative errno. */
static int on_key(struct tui *u, int key)
{
	if (u->screen == SCR_HELP) {
		u->screen = u->back;
		return 0;
	}
	if (key == 'q')
		return 1;
	u->msg[0] = 0;
	if (key == 'h' || key == '?') {
		u->back = u->screen;
		u->screen = SCR_HELP;
		return 0;
	}
	if (key == 'g') {
		u->screen = SCR_GRAPH;
		return 0;
	}
	if (key == 'R')
		return show_report(u);
	if (key == 'G')
		return show_calls(u);
	size_t page = LINES > 4 ? (size_t)LINES - 4 : 1;
	if (u->screen == SCR_REPORT) {
		if (key == KEY_UP || key == 'k')
			move_cursor(&u->report_cursor, u->report_cnt, -1);
		else if (key == KEY_DOWN || key == 'j')
			move_cursor(&u->report_cursor, u->report_cnt, 1);
		else if (key == KEY_PPAGE)
			move_cursor(&u->report_cursor, u->report_cnt, -(long)page);
		else if (key == KEY_NPAGE)
			move_cursor(&u->report_cursor, u->report_cnt, (long)page);
		else if (key == KEY_HOME)
			u->report_cursor = 0;
		else if (key == KEY_END && u->report_cnt)
			u->report_cursor = u->report_cnt - 1;
		else if (key == '\n' || key == KEY_ENTER || key == ' ')
			return show_calls(u);
		else if (key == 's') {
			u->report_sort = (u->report_sort + 1) % SORT_COUNT;
			return show_report(u);
		} else if (key == '/') {
			if (read_search(u))
				report_search(u, 0);
		} else if (key == 'n' || key == 'N') {
			if (!u->search[0])
				snprintf(u->msg, sizeof(u->msg), "no search yet: / then a name");
			else
				report_search(u, key == 'N');
		}
		return 0;
	}
	struct tree_screen *ts = u->screen == SCR_GRAPH ? &u->graph : &u->calls;
	uint32_t n = ts->row_cnt ? ts->row_node[ts->cursor] : 0;
	switch (key) {
	case KEY_UP:
	case 'k':
		move_cursor(&ts->cursor, ts->row_cnt, -1);
		return 0;
	case KEY_DOWN:
	case 'j':
		move_cursor(&ts->cursor, ts->row_cnt, 1);
		return 0;
	case KEY_PPAGE:
		move_cursor(&ts->cursor, ts->row_cnt, -(long)page);
		return 0;
	case KEY_NPAGE:
		move_cursor(&ts->cursor, ts->row_cnt, (long)page);
		return 0;
	case KEY_HOME:
		ts->cursor = 0;
		return 0;
	case KEY_END:
		if (ts->row_cnt)
			ts->cursor = ts->row_cnt - 1;
		return 0;
	case '/':
		if (read_search(u))
			search(u, ts, 0);
		return 0;
	case 'n':
	case 'N':
		if (!u->search[0])
			snprintf(u->msg, sizeof(u->msg), "no search yet: / then a name");
		else
			search(u, ts, key == 'N');
		return 0;
	}
	if (!n)
		return 0;
	switch (key) {
	case '\n':
	case KEY_ENTER:
	case ' ':
		ts->folded[n] = !ts->folded[n];
		break;
	case KEY_RIGHT:
	case 'l':
		ts->folded[n] = 0;
		break;
	case KEY_LEFT:
		if (ts->folded[n] || !ts->tree.v[n].first_child) {
			uint32_t p = ts->tree.v[n].parent;
			for (size_t i = 0; p && i < ts->row_cnt; i++)
				if (ts->row_node[i] == p)
					ts->cursor = i;
			return 0;
		}
		ts->folded[n] = 1;
		break;
	case 'c':
		set_fold_under(ts, n, 1, 1);
		ts->folded[n] = 0;
		break;
	case 'e':
		set_fold_under(ts, n, 0, 0);
		break;
	default:
		return 0;
	}
	return screen_rows(u, ts) ? -ENOMEM : 0;
}

static const char usage[] = "usage: needle tui [-i FILE] [--tid TID]\n"
			    "\n"
			    "Browse a trace in the terminal: the call graph of each thread, folded\n"
			    "and unfolded by key, the report (R), a function's call graph (G), search (/).\n"
			    "Press h in it for the keys.\n"
			    "\n"
			    "  -i, --input=FILE   the trace (default needle.data)\n"
			    "      --tid=TID      one thread's calls only\n"
			    "  -E linux:schedule, --event-full, --no-sched-preempt, --no-sched: as replay's\n";

int cmd_tui(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "tid", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		VIEW_SCHED_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	const char *input = "needle.data";
	uint32_t tid = 0;
	int c, status, ret = 0;

	struct view_sched sched = { 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:d:hE:", longopts, NULL)) != -1) {
		switch (c) {
		VIEW_SCHED_CASES:
			if (view_sched_option(&sched, c, optarg))
				return 2;
			break;
		case 'i':
		case 'd':
			input = optarg;
			break;
		case 'T':
			if (view_parse_tid(optarg, &tid))
				return 2;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			cli_option_error(argv[0], argc, argv, "i:d:hE:", longopts);
			return 2;
		}
	}
	struct tui u = { .path = input };
	const char *batch = getenv("NEEDLE_TUI_BATCH");
	if (batch && atoi(batch) > 0)
		load_batch_events = (unsigned)atoi(batch);
	if (!(u.t = view_start("tui", argc, argv, optind, input, tid, &sched, &status)))
		return status;
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		cli_error("tui: needs a terminal on its input and output; for text use needle replay, report or graph");
		view_close(u.t);
		return 2;
	}
	if (!(u.keys = view_name_keys(u.t)) || call_tree_init(&u.graph.tree, &u.t->work)) {
		cli_error("tui: out of memory");
		free(u.keys);
		view_close(u.t);
		return 1;
	}
	u.graph.tree.site_key = u.keys;
	u.graph.tree.site_key_cnt = u.t->site_cap;
	if (trace_iter_init_tree(&u.it, u.t, tid, &u.graph.tree)) {
		cli_error("tui: %s", u.it.err);
		call_tree_free(&u.graph.tree);
		free(u.keys);
		view_close(u.t);
		return 1;
	}
	u.loading = 1;
	if (!initscr()) {
		cli_error("tui: cannot set up the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
		ret = 1;
		goto done;
	}
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	for (;;) {
		if (u.loading) {
			int err = load_batch(&u);
			if (err == -ENOMEM || screen_rows(&u, &u.graph)) {
				ret = -ENOMEM;
				break;
			}
			if (!u.loading && loaded(&u)) {
				ret = -ENOMEM;
				break;
			}
		}
		draw(&u);
		/* While loading, a look at the keyboard between batches. */
		timeout(u.loading ? 0 : -1);
		int key = getch();
		if (key == ERR)
			continue;
		if (key == KEY_RESIZE)
			continue;
		int r = on_key(&u, key);
		if (r) {
			ret = r < 0 ? r : 0;
			break;
		}
	}
	endwin();
	if (ret == -ENOMEM)
		cli_error("tui: out of memory");
done:
	trace_iter_free(&u.it);
	screen_free(&u.graph);
	screen_free(&u.calls);
	free(u.report);
	free(u.keys);
	view_close(u.t);
	return ret ? 1 : 0;
}
