/* graph.c - `needle graph [FUNC]`: the call graph of a function, uftrace's
 * graph command.  Every call of FUNC (the outermost, when it recurses)
 * adds its subtree to one tree in which a function's calls from one
 * caller path are merged by name: "(6) loop" under "(2) foo" is six calls
 * of loop made by the two calls of foo, with their total time.  Above
 * it, the distinct backtraces that led to FUNC, with how often each did.
 * Without FUNC, the whole program's graph under its name.  A program
 * exec'ed in the trace (a thread whose tid an earlier thread had) is a
 * session of its own, with graphs of its own, printed newest first as
 * uftrace prints its sessions.
 *
 * Invariants:
 *  - a node is (parent node, name): functions of one name merge whatever
 *    object or address they have, as uftrace merges them; its children
 *    print in the order they were first called;
 *  - an event costs O(1): one hash lookup in the tree for an entry inside
 *    FUNC, an addition for an exit; a backtrace costs the depth of the
 *    stack once per outermost call of FUNC;
 *  - memory grows with the distinct name paths below FUNC and the distinct
 *    backtraces, and per thread with its deepest stack, never with the
 *    number of events;
 *  - a call's time is counted when it ends: returned, unwound, closed at
 *    a loss or still running at the end (then up to the thread's last
 *    event, as replay closes it); an exit whose entry is not in the trace,
 *    and the calls a forked child inherits, add nothing (and a child
 *    inside its parent's call of FUNC does not start a graph, as under
 *    uftrace). */
#include <getopt.h>
#include <regex.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "cli/util/cli_util.h"
#include "cli/view/task_graph.h"
#include "cli/view/view.h"
#include "cli/view/view_filter.h"
#include "cli/view/view_format.h"
#include "common/pattern.h"

enum graph_field { GF_TOTAL, GF_SELF, GF_ADDR };
#define GRAPH_FIELDS 3
/* Keys of the sessions' nodes in both trees, apart from every site id. */
#define SESSION_KEY 0x80000000u

struct graph_thread {
	uint32_t *node;   /* by depth: the graph node of the open call, 0 outside FUNC */
	uint32_t *site;   /* by depth: the open call's site */
	uint8_t *counted; /* by depth: the entry was counted (not inherited) */
	uint32_t *path;   /* by depth: the backtrace node of the path to that call */
	uint32_t path_valid; /* levels of path that still describe the stack */
	uint32_t session;
	int placed;          /* its session is known (from its first event) */
	size_t cap;
	uint32_t start;   /* depth of the outermost open call of FUNC */
	int on;           /* inside a call of FUNC */
	uint32_t bt;      /* that call's backtrace node */
};

struct graph {
	struct trace *t;
	const char *func;    /* NULL: the whole program */
	int is_regex;
	regex_t re;
	uint32_t max_depth;  /* -D: levels shown below FUNC, 0 all */
	uint64_t min_ns;     /* -t: only calls that lasted this long, counted at their exit */
	int srcline;         /* --srcline: each function's source file and line */
	struct view_filter filter; /* -F, -N, --no-libcall: what the graph is built from */
	signed char *compiled; /* view_module_compiled's cache, for --srcline */
	struct call_tree g;  /* keyed by a name's first site */
	uint64_t *time, *child; /* by node */
	size_t time_cap, child_cap;
	uint32_t *name_of;   /* by site: the first site of its name */
	uint8_t *matches;    /* by site: its name is FUNC */
	struct call_tree bt; /* backtraces: paths of sites */
	uint64_t *bt_time;   /* by backtrace node */
	size_t bt_cap;
	struct graph_thread *th;
	uint32_t root;       /* the node of FUNC, or of the program */
	uint32_t *module_session; /* by object: the program it belongs to (0, then one per exec) */
	uint32_t *session_node; /* by session: the program's node, or FUNC's graphs' parent */
	uint32_t *session_thread; /* by session: its first thread (UINT32_MAX: none yet) */
	uint32_t session_cnt;
	int fields[GRAPH_FIELDS], field_cnt;
	int oom;
};

static int grow_u64(uint64_t **v, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 256;
	while (n < need)
		n *= 2;
	uint64_t *p = realloc(*v, n * sizeof(*p));
	if (!p)
		return -1;
	memset(p + *cap, 0, (n - *cap) * sizeof(*p));
	*v = p;
	*cap = n;
	return 0;
}

static int graph_name_matches(struct graph *gr, const char *name, const char *sym)
{
	if (gr->is_regex && (!regexec(&gr->re, name, 0, NULL, 0) || (sym && view_regex_for_symbols(gr->func) && !regexec(&gr->re, sym, 0, NULL, 0))))
		return 1;
	/* A glob ("fa*", "kv_[gs]et"), as the filters take it; else the
	 * name itself (uftrace's graph FUNC); or a C++ name as needle
	 * record's -F takes it ("twice<long>"). */
	return !fnmatch(gr->func, name, 0) || view_cxx_pattern_names(gr->func, sym);
}

/* name_of: sites of one name share a key; matches: FUNC's sites. */
static int index_names(struct graph *gr)
{
	size_t n = gr->t->site_cap;
	gr->name_of = view_name_keys(gr->t);
	gr->matches = calloc(n ? n : 1, 1);
	if (!gr->name_of || !gr->matches)
		return -1;
	for (size_t s = 0; s < n && gr->func; s++)
		gr->matches[s] = graph_name_matches(gr, trace_site_name(gr->t, (uint32_t)s), gr->t->sites[s].sym);
	return 0;
}

static int thread_reserve(struct graph_thread *th, size_t depth)
{
	if (depth < th->cap)
		return 0;
	size_t n = th->cap ? th->cap * 2 : 64;
	while (n <= depth)
		n *= 2;
	uint32_t *a = realloc(th->node, n * sizeof(*a));
	if (a)
		th->node = a;
	uint32_t *b = realloc(th->site, n * sizeof(*b));
	if (b)
		th->site = b;
	uint8_t *c = realloc(th->counted, n);
	if (c)
		th->counted = c;
	uint32_t *p = realloc(th->path, n * sizeof(*p));
	if (p)
		th->path = p;
	if (!a || !b || !c || !p)
		return -1;
	th->cap = n;
	return 0;
}

/* The outermost call of FUNC begins at depth d: its backtrace, the sites
 * open from depth 0 to it, is counted once.  The path's nodes are kept
 * by depth and only the levels entered since the last backtrace are
 * looked up again, so that a FUNC called deep in a stack costs O(1) per
 * call, not the depth. */
static void begin_func(struct graph *gr, struct graph_thread *th, uint32_t d)
{
	uint32_t b = th->path_valid ? th->path[th->path_valid - 1] : call_tree_child(&gr->bt, 0, SESSION_KEY | th->session);
	if (!b)
		b = UINT32_MAX;
	for (uint32_t i = th->path_valid; i <= d && b != UINT32_MAX; i++) {
		if (th->site[i] == UINT32_MAX) {
			th->path[i] = b; /* a hidden level: not in the backtrace */
			continue;
		}
		uint32_t c = call_tree_child(&gr->bt, b, th->site[i]);
		b = c ? c : UINT32_MAX;
		th->path[i] = b;
	}
	th->path_valid = b == UINT32_MAX ? 0 : d + 1;
	if (b == UINT32_MAX || grow_u64(&gr->bt_time, &gr->bt_cap, gr->bt.cnt)) {
		gr->oom = 1;
		b = 0;
	} else if (!gr->min_ns) {
		gr->bt.v[b].value++; /* with -t, at its exit if it lasted long enough */
	}
	th->bt = b;
	th->on = 1;
	th->start = d;
}

static int graph_event(const struct trace_event *ev, void *arg)
{
	struct graph *gr = arg;
	struct graph_thread *th = &gr->th[ev->thread];
	uint32_t d = ev->depth;

	if (!th->placed && (ev->kind == TEV_ENTRY || ev->kind == TEV_EXIT) && ev->site < gr->t->site_cap) {
		uint32_t m = gr->t->sites[ev->site].module;
		th->session = m < gr->t->module_cnt ? gr->module_session[m] : 0;
		th->placed = 1;
		if (gr->session_thread[th->session] == UINT32_MAX)
			gr->session_thread[th->session] = ev->thread;
	}

	if (ev->kind == TEV_ENTRY) {
		if (thread_reserve(th, d)) {
			gr->oom = 1;
			return 1;
		}
		/* A call at FUNC's depth or above while FUNC's graph is on:
		 * that call of FUNC has ended without an exit (the function
		 * tracer records none; a lost one), and this call is not in
		 * it. */
		if (th->on && gr->func && d <= th->start)
			th->on = 0;
		th->site[d] = ev->site;
		th->node[d] = 0;
		if (th->path_valid > d)
			th->path_valid = d;
		if (!th->on && !gr->func) {
			/* The program's graph: every call, from the first. */
			th->on = 1;
			th->start = 0;
			th->bt = 0;
		}
		/* A call the filters hide is not a node: what it calls
		 * (when shown) hangs from its caller.  A function the file
		 * does not describe (a damaged trace) is hidden too. */
		int hidden = ev->site >= gr->t->site_cap;
		if (!hidden && view_filter_active(&gr->filter))
			hidden = !view_filter_shows(&gr->filter, ev);
		if (hidden) {
			th->counted[d] = 0;
			th->node[d] = d && d > th->start ? th->node[d - 1]
				      : th->on && !gr->func ? gr->session_node[th->session] : 0;
			th->site[d] = UINT32_MAX;
			return 0;
		}
		th->counted[d] = !(ev->flags & TEV_INHERITED);
		if (!th->on && gr->func && gr->matches[ev->site] && th->counted[d])
			begin_func(gr, th, d);
		if (!th->on || d < th->start || (gr->max_depth && d - th->start >= gr->max_depth))
			return 0;
		uint32_t parent = d == th->start ? gr->session_node[th->session] : th->node[d - 1];
		if (!parent && d != th->start)
			return 0; /* under a call -D left out */
		uint32_t n = call_tree_child(&gr->g, parent, gr->name_of[ev->site]);
		if (!n || grow_u64(&gr->time, &gr->time_cap, gr->g.cnt) ||
		    grow_u64(&gr->child, &gr->child_cap, gr->g.cnt)) {
			gr->oom = 1;
			return 1;
		}
		/* An inherited call has its node, so that the child's calls
		 * merge under its parent's, but is not counted again. */
		if (th->counted[d] && !gr->min_ns)
			gr->g.v[n].value++;
		th->node[d] = n;
		return 0;
	}
	if (ev->kind == TEV_EXIT &&
	    (ev->site >= gr->t->site_cap || (view_filter_active(&gr->filter) && !view_filter_shows(&gr->filter, ev))))
		return 0;
	if (ev->kind != TEV_EXIT || (ev->flags & TEV_ORPHAN) || d >= th->cap || !th->on || d < th->start)
		return 0;
	uint32_t n = th->node[d];
	uint64_t dur = ev->ns > ev->entry_ns ? ev->ns - ev->entry_ns : 0;
	/* -t: a call counts, at its exit, if it lasted long enough (and
	 * then so did every call it is in). */
	int long_enough = !gr->min_ns || dur >= gr->min_ns;
	if (n && th->counted[d] && long_enough) {
		/* The time arrays were grown with the tree at the entry. */
		if (gr->min_ns)
			gr->g.v[n].value++;
		gr->time[n] += dur;
		gr->child[n] += ev->child_ns < dur ? ev->child_ns : dur;
	}
	th->node[d] = 0;
	if (d == th->start && gr->func) {
		if (th->bt && long_enough) {
			if (gr->min_ns)
				gr->bt.v[th->bt].value++;
			gr->bt_time[th->bt] += dur;
		}
		th->on = 0;
	}
	return 0;
}

static void print_fields(struct graph *gr, uint32_t n, int blank)
{
	char buf[32];
	for (int i = 0; i < gr->field_cnt; i++) {
		if (blank) {
			printf("%*s", gr->fields[i] == GF_ADDR ? 14 : 12, "");
			continue;
		}
		switch (gr->fields[i]) {
		case GF_TOTAL:
			cli_format_duration(buf, sizeof(buf), gr->time[n]);
			printf("  %s", buf);
			break;
		case GF_SELF:
			cli_format_duration(buf, sizeof(buf), gr->time[n] - gr->child[n]);
			printf("  %s", buf);
			break;
		case GF_ADDR: {
			const struct trace_site *s = gr->g.v[n].site & SESSION_KEY ? NULL : &gr->t->sites[gr->g.v[n].site];
			printf("  %12llx", s ? (unsigned long long)s->func_ip : 0ull);
			break;
		}
		}
	}
	if (gr->field_cnt)
		fputs(" : ", stdout);
}

struct walk {
	uint32_t node;
	uint32_t indent;
	uint8_t line;      /* its parent has more than one child */
	uint8_t last;      /* the last child of its parent */
	uint8_t after;     /* a blank separator line comes before it */
};

static int id_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static const char *node_name(struct graph *gr, uint32_t n)
{
	if (gr->g.v[n].site & SESSION_KEY) {
		/* A program's node: the first session is the recorded
		 * command, a later one the program exec'ed (its thread's
		 * name). */
		uint32_t s = gr->g.v[n].site & ~SESSION_KEY;
		uint32_t first = gr->session_thread[s];
		const char *p = gr->t->argv && gr->t->argv[0] ? gr->t->argv[0] : "program";
		if ((s || !gr->t->argv) && first != UINT32_MAX && gr->t->threads[first].name[0])
			p = gr->t->threads[first].name;
		const char *slash = strrchr(p, '/');
		return slash ? slash + 1 : p;
	}
	return trace_site_name(gr->t, gr->g.v[n].site);
}

/* Depth first, without recursion (a deep recursion is a deep tree). */
static int print_tree(struct graph *gr)
{
	size_t cap = 64, sp = 0, open_cap = 64, kids_cap = 64;
	struct walk *st = malloc(cap * sizeof(*st));
	uint8_t *open = calloc(open_cap, 1);
	uint32_t *kids = malloc(kids_cap * sizeof(*kids));
	int ret = -1;

	if (!st || !open || !kids)
		goto out;
	st[sp++] = (struct walk){ gr->root, 0, 0, 1, 0 };
	while (sp) {
		struct walk w = st[--sp];
		struct call_node *n = &gr->g.v[w.node];
		gr->t->work++;
		if (w.after) {
			print_fields(gr, 0, 1);
			view_print_indent(open, w.indent, 0);
			putchar('\n');
		}
		if (w.indent + 2 > open_cap) {
			uint8_t *o = realloc(open, open_cap * 2);
			if (!o)
				goto out;
			memset(o + open_cap, 0, open_cap);
			open = o;
			open_cap *= 2;
		}
		print_fields(gr, w.node, 0);
		view_print_indent(open, w.indent, w.line);
		printf("(%llu) %s", (unsigned long long)(n->site & SESSION_KEY ? 1 : n->value),
		       node_name(gr, w.node));
		const char *file;
		unsigned line;
		/* The function graphed heads its graph without a source, as
		 * uftrace draws it: its callees are what the lines place. */
		if (gr->srcline && !(n->site & SESSION_KEY) && !(gr->func && w.indent == 0) &&
		    view_site_srcline(gr->t, n->site, &gr->compiled, &file, &line))
			printf(" [%s:%u]", file, line);
		putchar('\n');
		/* This node's level loses its "|" once its last sibling is
		 * drawn. */
		if (w.line && w.last && w.indent > 0)
			open[w.indent - 1] = 0;
		size_t k = 0;
		for (uint32_t c = n->first_child; c; c = gr->g.v[c].next_sibling) {
			/* -t: a path no call of which lasted long enough. */
			if (gr->min_ns && !gr->g.v[c].value && !(gr->g.v[c].site & SESSION_KEY))
				continue;
			if (k == kids_cap) {
				uint32_t *v = realloc(kids, kids_cap * 2 * sizeof(*v));
				if (!v)
					goto out;
				kids = v;
				kids_cap *= 2;
			}
			kids[k++] = c;
			gr->t->work++;
		}
		/* Node ids grow in creation order: first called first. */
		qsort(kids, k, sizeof(*kids), id_cmp);
		uint32_t indent = w.indent;
		if (k > 1)
			open[indent++] = 1;
		else
			open[indent] = 0;
		if (sp + k > cap) {
			struct walk *v = realloc(st, (sp + k) * 2 * sizeof(*v));
			if (!v)
				goto out;
			st = v;
			cap = (sp + k) * 2;
		}
		for (size_t i = k; i-- > 0;)
			st[sp++] = (struct walk){ kids[i], indent, k > 1, i == k - 1, i > 0 };
	}
	ret = 0;
out:
	free(st);
	free(open);
	free(kids);
	return ret;
}

static int bt_newest_first(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x < y) - (x > y);
}

/* The backtraces of the graph's function (gr->root), newest first as
 * uftrace lists them: "[0] main (0x...)" from the outermost frame down to
 * it.  Returns the number printed, or -1. */
static int print_backtraces(struct graph *gr)
{
	uint32_t *leaf = malloc((gr->bt.cnt ? gr->bt.cnt : 1) * sizeof(*leaf));
	uint32_t key = gr->g.v[gr->root].site;
	uint32_t session = gr->g.v[gr->g.v[gr->root].parent].site;
	uint32_t *path = NULL;
	size_t n = 0, path_cap = 0;
	char buf[32];

	if (!leaf)
		return -1;
	for (uint32_t i = 1; i < gr->bt.cnt; i++)
		if (gr->bt.v[i].value && !(gr->bt.v[i].site & SESSION_KEY) && gr->name_of[gr->bt.v[i].site] == key)
			leaf[n++] = i;
	qsort(leaf, n, sizeof(*leaf), bt_newest_first);
	int shown = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		uint32_t top = leaf[i];
		while (gr->bt.v[top].parent)
			top = gr->bt.v[top].parent;
		if (gr->bt.v[top].site != session)
			continue;
		for (uint32_t b = leaf[i]; gr->bt.v[b].parent; b = gr->bt.v[b].parent) {
			if (len == path_cap) {
				size_t c = path_cap ? path_cap * 2 : 64;
				uint32_t *p = realloc(path, c * sizeof(*p));
				if (!p) {
					free(leaf);
					free(path);
					return -1;
				}
				path = p;
				path_cap = c;
			}
			path[len++] = gr->bt.v[b].site;
		}
		cli_format_duration(buf, sizeof(buf), gr->bt_time[leaf[i]]);
		if (!shown++)
			puts("=============== BACKTRACE ===============");
		printf(" backtrace #%d: hit %llu, time %s\n", shown - 1, (unsigned long long)gr->bt.v[leaf[i]].value, buf);
		for (size_t k = 0; k < len; k++) {
			uint32_t s = path[len - 1 - k];
			printf("   [%zu] %s (%#llx)\n", k, trace_site_name(gr->t, s),
			       (unsigned long long)gr->t->sites[s].func_ip);
		}
		putchar('\n');
	}
	free(leaf);
	free(path);
	return shown;
}

/* Sessions: the programs of the trace (view_module_programs); a thread
 * belongs to the program of the first function it is seen in. */
static int find_sessions(struct graph *gr)
{
	if (!(gr->module_session = view_module_programs(gr->t, &gr->session_cnt)))
		return -1;
	gr->session_thread = calloc(gr->session_cnt, sizeof(*gr->session_thread));
	gr->session_node = calloc(gr->session_cnt, sizeof(*gr->session_node));
	if (!gr->session_thread || !gr->session_node)
		return -1;
	for (uint32_t k = 0; k < gr->session_cnt; k++) {
		gr->session_thread[k] = UINT32_MAX;
		if (!(gr->session_node[k] = call_tree_child(&gr->g, 0, SESSION_KEY | k)))
			return -1;
	}
	return grow_u64(&gr->time, &gr->time_cap, gr->g.cnt) || grow_u64(&gr->child, &gr->child_cap, gr->g.cnt);
}

static const char graph_usage[] =
	"usage: needle graph [-i FILE] [options] [FUNC]\n"
	"The call graph of FUNC (uftrace graph): every call of FUNC merged into one tree,\n"
	"a function's calls from one path as one line with their count and total time,\n"
	"after the backtraces that led to FUNC.  Without FUNC, the whole program's graph.\n"
	"  -i, --input FILE    trace file (default needle.data)\n"
	"      --tid TID       only this thread's calls\n"
	"  -E, --event linux:schedule  each time a call was off the\n"
	"                     CPU (record -E linux:schedule or --kernel=switch) as a call\n"
	"                     to linux:schedule inside it; --event-full: outside calls too;\n"
	"                     --no-sched-preempt: not where it was preempted; --no-sched\n"
	"                     (or --no-event): none;\n"
	"                     an -E beside either wins; --no-pager: accepted (needle never pages)\n"
	"  -D, --depth N       at most N levels, FUNC's the first (-D 1: FUNC alone)\n"
	"  -t, --time-filter TIME  only the calls that lasted TIME or more (e.g. 1ms)\n"
	"  -f, --output-fields total,self,addr|none\n"
	"                      the columns before the graph (default total; +FIELDS adds)\n"
	"  -F, --filter FUNC   only calls inside FUNC's (repeatable)\n"
	"  -N, --notrace FUNC  not FUNC's calls nor what they call (repeatable)\n"
	"      --no-libcall    not the calls the program makes into libraries\n"
	"      --srcline       each function's source file and line (DWARF)\n"
	"      --with-syms PATH  names for stripped objects' functions, from a trace recorded\n"
	"                      before they were stripped or a directory of their unstripped files\n"
	"      --task          the task tree instead: processes and threads, how long each ran\n"
	"                      (and less its time off the CPU, with record --kernel)\n"
	"FUNC is a function's name as replay shows it, a glob, or a regular expression\n"
	"(^, $, '.', ...: see needle replay --help) that names several.\n";

static int parse_fields(struct graph *gr, const char *arg)
{
	char buf[256];
	/* +FIELDS: the default's (total) and these. */
	if (*arg == '+') {
		gr->field_cnt = 1;
		gr->fields[0] = GF_TOTAL;
		arg++;
	} else {
		gr->field_cnt = 0;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *save = NULL, *f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		int k;
		if (!strcmp(f, "none"))
			continue;
		if (!strcmp(f, "total"))
			k = GF_TOTAL;
		else if (!strcmp(f, "self"))
			k = GF_SELF;
		else if (!strcmp(f, "addr"))
			k = GF_ADDR;
		else {
			cli_error("graph: unknown field '%s' (total, self, addr or none)", f);
			return -1;
		}
		int dup = 0;
		for (int i = 0; i < gr->field_cnt; i++)
			dup |= gr->fields[i] == k;
		if (!dup && gr->field_cnt < GRAPH_FIELDS)
			gr->fields[gr->field_cnt++] = k;
	}
	return 0;
}

static void graph_free(struct graph *gr)
{
	for (size_t i = 0; gr->th && i < gr->t->thread_cnt; i++) {
		free(gr->th[i].node);
		free(gr->th[i].site);
		free(gr->th[i].counted);
		free(gr->th[i].path);
	}
	free(gr->th);
	free(gr->time);
	free(gr->child);
	free(gr->bt_time);
	free(gr->name_of);
	free(gr->matches);
	free(gr->module_session);
	free(gr->session_node);
	free(gr->session_thread);
	call_tree_free(&gr->g);
	call_tree_free(&gr->bt);
	view_filter_free(&gr->filter);
	free(gr->compiled);
	if (gr->is_regex)
		regfree(&gr->re);
}

int cmd_graph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },	   { "tid", required_argument, NULL, 'T' },
		{ "depth", required_argument, NULL, 'D' },	   { "output-fields", required_argument, NULL, 'f' },
		{ "srcline", no_argument, NULL, 'L' },		   { "help", no_argument, NULL, 'h' },
		{ "filter", required_argument, NULL, 'F' },	   { "notrace", required_argument, NULL, 'N' },
		{ "no-libcall", no_argument, NULL, 'B' },	   { "time-filter", required_argument, NULL, 't' },
		{ "task", no_argument, NULL, 'k' },		   { "with-syms", required_argument, NULL, 'W' },
		VIEW_SCHED_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct graph gr = { .field_cnt = 1, .fields = { GF_TOTAL } };
	const char *input = NULL, *with_syms = NULL;
	uint32_t tid = 0;
	int c, status, task = 0, other_opts = 0;

	struct view_sched sched = { 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:d:D:f:F:N:t:hE:", longopts, NULL)) != -1) {
		switch (c) {
		VIEW_SCHED_CASES:
			if (view_sched_option(&sched, c, optarg))
				return 2;
			break;
		case 'i':
		case 'd': /* uftrace's -d DIR: here the trace file */
			input = optarg;
			break;
		case 'T':
			if (view_parse_tid(optarg, &tid))
				return 2;
			break;
		case 'D': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (!*optarg || *end || !v || v > 65535) {
				cli_error("graph: -D takes a depth from 1 to 65535, not '%s'", optarg);
				return 2;
			}
			gr.max_depth = (uint32_t)v;
			break;
		}
		case 'f':
			if (parse_fields(&gr, optarg))
				return 2;
			break;
		case 't':
			if (cli_parse_duration(optarg, &gr.min_ns) || !gr.min_ns) {
				cli_error("graph: -t takes a duration (100us, 2ms, 1s), not '%s'", optarg);
				view_filter_free(&gr.filter);
				return 2;
			}
			break;
		case 'L':
			gr.srcline = 1;
			break;
		case 'W':
			with_syms = optarg;
			break;
		case 'F':
		case 'N':
			if (view_filter_add(&gr.filter, "graph", optarg, c == 'N')) {
				view_filter_free(&gr.filter);
				return 2;
			}
			break;
		case 'B':
			gr.filter.no_libcall = 1;
			break;
		case 'k':
			task = 1;
			break;
		case 'h':
			fputs(graph_usage, stdout);
			return 0;
		default:
			cli_option_error(argv[0], argc, argv, "i:d:D:f:F:N:t:hE:", longopts);
			return 2;
		}
		other_opts |= c != 'k' && c != 'i' && c != 'd' && c != 't' && c != VIEW_OPT_NO_EVENT && c != VIEW_OPT_NO_PAGER;
	}
	if (task) {
		/* uftrace graph --task takes the program's name after the
		 * options too; nothing else applies to the task tree. */
		const char *prog_arg = optind == argc - 1 ? argv[--argc] : NULL;
		if (other_opts || optind < argc) {
			cli_error("graph: --task draws the task tree: no FUNC, and only with -i and -t");
			view_filter_free(&gr.filter);
			return 2;
		}
		if (!(gr.t = view_start("graph", argc, argv, optind, input, 0, &sched, &status)))
			return status;
		int err = prog_arg && view_check_program_arg(gr.t, "graph", prog_arg) ? 2 : graph_task(gr.t, gr.min_ns);
		view_close(gr.t);
		return err;
	}
	if (optind < argc)
		gr.func = argv[optind++];
	if (gr.func && cli_pattern_is_regex(gr.func)) {
		if (regcomp(&gr.re, gr.func, REG_EXTENDED | REG_NOSUB)) {
			cli_error("graph: '%s' is not a regular expression", gr.func);
			return 2;
		}
		gr.is_regex = 1;
	}
	if (!(gr.t = view_start("graph", argc, argv, optind, input, tid, &sched, &status))) {
		if (gr.is_regex)
			regfree(&gr.re);
		return status;
	}
	int err = 1;
	if (with_syms && view_use_syms(gr.t, with_syms))
		goto out;
	if (call_tree_init(&gr.g, &gr.t->work) || call_tree_init(&gr.bt, &gr.t->work) || index_names(&gr) ||
	    (view_filter_active(&gr.filter) && view_filter_start(&gr.filter, gr.t)) ||
	    !(gr.th = calloc(gr.t->thread_cnt ? gr.t->thread_cnt : 1, sizeof(*gr.th)))) {
		cli_error("out of memory");
		goto out;
	}
	if (find_sessions(&gr)) {
		cli_error("out of memory");
		goto out;
	}
	if (view_each_event(gr.t, tid, graph_event, &gr))
		goto out;
	if (gr.oom) {
		cli_error("out of memory");
		goto out;
	}
	size_t nroots = 0;
	uint32_t *rv = malloc((gr.g.cnt ? gr.g.cnt : 1) * sizeof(*rv));
	if (!rv) {
		cli_error("out of memory");
		goto out;
	}
	/* Newest session first; in each, the program's graph, or FUNC's
	 * (several with a regular expression) in the order first called. */
	for (uint32_t sess = gr.session_cnt; sess-- > 0;) {
		uint32_t sn = gr.session_node[sess];
		size_t from = nroots;
		if (!gr.func) {
			/* The program's time: its outermost calls'. */
			for (uint32_t c2 = gr.g.v[sn].first_child; c2; c2 = gr.g.v[c2].next_sibling) {
				gr.time[sn] += gr.time[c2];
				gr.child[sn] += gr.time[c2];
			}
			if (gr.g.v[sn].first_child)
				rv[nroots++] = sn;
			continue;
		}
		for (uint32_t r = gr.g.v[sn].first_child; r; r = gr.g.v[r].next_sibling)
			rv[nroots++] = r;
		qsort(rv + from, nroots - from, sizeof(*rv), id_cmp);
	}
	if (gr.func && !nroots) {
		cli_error("graph: no call of '%s' in %s (needle report lists the functions)", gr.func, gr.t->path);
		free(rv);
		goto out;
	}
	view_buffer_output(stdout);
	static const char *const header[] = { [GF_TOTAL] = "TOTAL TIME", [GF_SELF] = " SELF TIME",
					      [GF_ADDR] = "   ADDRESS  " };
	err = 0;
	for (size_t i = 0; i < nroots && !err; i++) {
		gr.root = rv[i];
		printf("# Function Call Graph for '%s'\n", node_name(&gr, gr.root));
		if (gr.func && print_backtraces(&gr) < 0)
			err = 1;
		puts("========== FUNCTION CALL GRAPH ==========");
		if (gr.field_cnt) {
			fputs("# ", stdout);
			for (int k = 0; k < gr.field_cnt; k++)
				printf("%s%s", k ? "  " : "", header[gr.fields[k]]);
			fputs(gr.srcline ? "   FUNCTION [SOURCE]\n" : "   FUNCTION\n", stdout);
		}
		if (!err && print_tree(&gr))
			err = 1;
		putchar('\n');
	}
	free(rv);
	if (err)
		cli_error("out of memory");
	if (view_close_output(stdout, "standard output"))
		err = 1;
out:
	graph_free(&gr);
	view_close(gr.t);
	return err;
}
