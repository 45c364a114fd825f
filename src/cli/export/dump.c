/* dump.c - `needle dump`: every event of a trace as a line, thread by
 * thread, as uftrace's dump prints its records:
 *
 *   thread 5231 (t-abc): 14 events
 *   58348.873444506   5231: [entry] main(55e7c4d0024c) depth: 0
 *     arg1 = 5
 *   58348.873449309   5231: [exit ] main(55e7c4d0024c) depth: 0
 *     retval = 0
 *
 * Times are CLOCK_MONOTONIC seconds (the trace's clock mapped as the
 * uftrace export maps it, so that both dumps agree).  -F/-N keep or drop
 * a function's subtree, -D the levels below the outermost -F (or below
 * the top); --chrome and --flame-graph write what export's chrome and
 * folded formats write, on standard output.
 *
 * It lives with the exports, whose writers its --chrome and --flame-graph
 * call.
 *
 * Invariants: threads in the file's order, each read alone (a cursor at a
 * time, trace_iter_init_thread): memory is one thread's stack, work
 * linear in the events; a call still running at the end prints no exit
 * (it has none in the trace), nor does an entry a forked child inherits. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/util/cli_util.h"
#include "cli/export/export.h"
#include "cli/view/view.h"
#include "cli/view/view_defer.h"
#include "cli/view/view_filter.h"
#include "cli/view/view_format.h"

struct dump {
	struct trace *t;
	struct view_filter filter;
	uint64_t min_ns;          /* -t: only calls that lasted this long */
	int no_args;              /* --no-args: no values written */
	struct view_defer defer;  /* ... their entries waiting for their exits */
	uint64_t mono0;
};

static int dump_call(const struct trace_event *ev, void *arg);

static void print_time(struct dump *d, const struct trace_event *ev)
{
	uint64_t ns = d->mono0 + ev->ns;
	printf("%llu.%09llu  %5u: ", (unsigned long long)(ns / 1000000000), (unsigned long long)(ns % 1000000000),
	       ev->tid);
}

static void print_values(struct dump *d, const struct trace_event *ev)
{
	char name[64], val[512];
	size_t at = 0;
	while (view_value_next(d->t, ev, &at, name, sizeof(name), val, sizeof(val)))
		printf("  %s = %s\n", name, val);
}

static int dump_event(struct dump *d, const struct trace_event *ev)
{
	char buf[512];

	switch (ev->kind) {
	case TEV_ENTRY:
	case TEV_EXIT: {
		if (ev->kind == TEV_EXIT && (ev->flags & TEV_OPEN))
			return 0;
		/* An inherited entry goes through the filter too (it sets
		 * where a forked child's levels count from, as for the other
		 * views), but has no line: its call is the parent's. */
		if (view_filter_active(&d->filter) && !view_filter_shows(&d->filter, ev))
			return 0;
		if (ev->kind == TEV_ENTRY && (ev->flags & TEV_INHERITED))
			return 0;
		if (d->min_ns && !(ev->flags & TEV_FLAT))
			return view_defer_event(&d->defer, ev, dump_call, d) < 0 ? -1 : 0;
		return dump_call(ev, d);
	}
	case TEV_LOST:
		print_time(d, ev);
		printf("[lost ] %llu events\n", (unsigned long long)ev->lost);
		return 0;
	case TEV_SWITCH:
		print_time(d, ev);
		printf("[switch] to coroutine context %u\n", ev->site);
		return 0;
	case TEV_KERNEL:
		view_format_kernel(buf, sizeof(buf), ev);
		print_time(d, ev);
		printf("[kernel] %s\n", buf);
		return 0;
	default:
		return 0;
	}
}

/* An entry or exit, written. */
static int dump_call(const struct trace_event *ev, void *arg)
{
	struct dump *d = arg;
	{
		const char *name = trace_site_name(d->t, ev->site);
		unsigned long long addr = ev->site < d->t->site_cap ? (unsigned long long)d->t->sites[ev->site].func_ip : 0;
		print_time(d, ev);
		printf("[%s] %s(%llx) depth: %u", ev->kind == TEV_ENTRY ? "entry" : "exit ", name, addr, ev->depth);
		if (ev->kind == TEV_ENTRY && (ev->flags & TEV_FLAT))
			fputs(" (no exit: function tracer)", stdout);
		if (ev->kind == TEV_EXIT) {
			if (ev->flags & TEV_ORPHAN)
				fputs(" (its entry is not in the trace)", stdout);
			else if (ev->flags & TEV_BEFORE)
				fputs(" (entered before the snapshot)", stdout);
			else if (ev->flags & TEV_EXIT_LOST)
				fputs(" (exit lost: closed where events were lost)", stdout);
			else if (ev->flags & TEV_UNWOUND)
				fputs(" (unwound)", stdout);
			else if (ev->flags & TEV_UNMATCHED)
				fputs(" (its own exit was lost: closed by an outer one)", stdout);
		}
		putchar('\n');
		if (ev->data_len && !d->no_args)
			print_values(d, ev);
		/* -W cpu's note: no value, but the event carries it. */
		char note[64];
		if (view_format_watch(note, sizeof(note), ev->data, ev->data_len))
			printf("  %s\n", note);
		return 0;
	}
}

/* Threads in the order they began (their first chunk's clock), as
 * uftrace lists its tasks. */
static struct trace *order_trace;

static uint64_t thread_began(uint32_t i)
{
	const struct trace_thread *th = &order_trace->threads[i];
	return th->chunk_cnt ? th->chunks[0].base : UINT64_MAX;
}

static int began_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t bx = thread_began(x), by = thread_began(y);
	if (bx != by)
		return bx < by ? -1 : 1;
	return (x > y) - (x < y);
}

/* --graphviz and --mermaid: the call graph by path (a node per function
 * per caller path, as needle graph merges calls), from the calls -F, -N,
 * -D and --no-libcall leave, with the number of calls on each edge.  A
 * call the filters hide passes its children to its caller. */
struct callgraph {
	struct dump *d;
	struct call_tree tree;
	uint32_t root;
	uint32_t **stack; /* by thread: the node of each depth */
	size_t *cap;
	int oom;
};

static int callgraph_event(const struct trace_event *ev, void *arg)
{
	struct callgraph *g = arg;
	if ((ev->kind != TEV_ENTRY && ev->kind != TEV_EXIT) || (ev->kind == TEV_EXIT && (ev->flags & TEV_OPEN)))
		return 0;
	int shown = !view_filter_active(&g->d->filter) || view_filter_shows(&g->d->filter, ev);
	if (ev->kind != TEV_ENTRY)
		return 0;
	uint32_t t = ev->thread, d = ev->depth;
	if (d >= g->cap[t]) {
		size_t n = g->cap[t] ? g->cap[t] * 2 : 64;
		while (n <= d)
			n *= 2;
		uint32_t *v = realloc(g->stack[t], n * sizeof(*v));
		if (!v)
			return g->oom = 1;
		/* Levels never entered (a thread that begins deeper) hang
		 * from the program's node. */
		for (size_t i = g->cap[t]; i < n; i++)
			v[i] = g->root;
		g->stack[t] = v;
		g->cap[t] = n;
	}
	uint32_t parent = d ? g->stack[t][d - 1] : g->root;
	if (!shown) {
		g->stack[t][d] = parent;
		return 0;
	}
	uint32_t n = call_tree_child(&g->tree, parent, ev->site);
	if (!n)
		return g->oom = 1;
	/* A forked child's inherited calls: its calls merge under them,
	 * counted once, in the parent. */
	if (ev->flags & TEV_INHERITED) {
		g->stack[t][d] = n;
		return 0;
	}
	g->tree.v[n].value++;
	g->stack[t][d] = n;
	return 0;
}

static int id_order(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* The edges depth first, children in the order first called. */
static int callgraph_print(struct callgraph *g, int mermaid, const char *prog)
{
	struct walk {
		uint32_t node, depth;
	} *st = NULL;
	uint32_t *kids = NULL, *num = calloc(g->tree.cnt ? g->tree.cnt : 1, sizeof(*num));
	size_t sp = 0, cap = 0, kcap = 0;
	uint32_t next = 0;
	int ret = -1;
	if (!num)
		return -1;
	if (mermaid)
		printf("<html>\n<body>\n<script src=\"https://cdn.jsdelivr.net/npm/mermaid/dist/mermaid.min.js\"></script>\n"
		       "<script>\n  var config = {\n  startOnLoad: true,\n  maxTextSize: 99999999,\n"
		       "  flowchart: { useMaxWidth: false }\n  };\n  mermaid.initialize(config);\n</script>\n"
		       "<h2>Function Call Graph for <span style=\"color:blue\">%s</span></h2>\n"
		       "<div class=\"mermaid\">\nflowchart TB\n", prog);
	else
		printf("# needle dump --graphviz\n\ndigraph \"%s\" {\n", prog);
	num[g->root] = next++;
	for (;;) {
		uint32_t node = sp ? st[--sp].node : g->root, depth = sp || node != g->root ? st[sp].depth : 0;
		size_t k = 0;
		for (uint32_t c = g->tree.v[node].first_child; c; c = g->tree.v[c].next_sibling) {
			if (k == kcap) {
				kcap = kcap ? kcap * 2 : 64;
				uint32_t *v = realloc(kids, kcap * sizeof(*v));
				if (!v)
					goto out;
				kids = v;
			}
			kids[k++] = c;
			g->d->t->work++;
		}
		qsort(kids, k, sizeof(*kids), id_order);
		const char *from = node == g->root ? prog : trace_site_name(g->d->t, g->tree.v[node].site);
		for (size_t i = 0; i < k; i++) {
			const char *to = trace_site_name(g->d->t, g->tree.v[kids[i]].site);
			num[kids[i]] = next++;
			if (mermaid)
				printf("  %u_%u[\"%s\"] -->|%llu| %u_%u[\"%s\"];\n", depth, num[node], from,
				       (unsigned long long)g->tree.v[kids[i]].value, depth + 1, num[kids[i]], to);
			else
				printf("    \"%s\" -> \"%s\" [xlabel = \"%llu\"]\n", from, to,
				       (unsigned long long)g->tree.v[kids[i]].value);
		}
		if (sp + k > cap) {
			cap = (sp + k) * 2;
			struct walk *v = realloc(st, cap * sizeof(*v));
			if (!v)
				goto out;
			st = v;
		}
		for (size_t i = k; i-- > 0;)
			st[sp++] = (struct walk){ kids[i], depth + 1 };
		if (!sp)
			break;
	}
	fputs(mermaid ? "</div>\n</body>\n</html>\n" : "}\n", stdout);
	ret = 0;
out:
	free(st);
	free(kids);
	free(num);
	return ret;
}

static int dump_callgraph(struct dump *d, uint32_t tid, int mermaid)
{
	struct callgraph g = { .d = d };
	size_t n = d->t->thread_cnt ? d->t->thread_cnt : 1;
	int err = 1;
	g.stack = calloc(n, sizeof(*g.stack));
	g.cap = calloc(n, sizeof(*g.cap));
	if (!g.stack || !g.cap || call_tree_init(&g.tree, &d->t->work) ||
	    !(g.root = call_tree_child(&g.tree, 0, UINT32_MAX))) {
		cli_error("out of memory");
		goto out;
	}
	if (view_each_event(d->t, tid, callgraph_event, &g))
		goto out;
	const char *prog = d->t->argv && d->t->argv[0] ? d->t->argv[0] : "program";
	const char *base = strrchr(prog, '/');
	if (g.oom || callgraph_print(&g, mermaid, base ? base + 1 : prog)) {
		cli_error("out of memory");
		goto out;
	}
	err = 0;
out:
	for (size_t i = 0; g.stack && i < n; i++)
		free(g.stack[i]);
	free(g.stack);
	free(g.cap);
	call_tree_free(&g.tree);
	return err;
}

static const char dump_usage[] =
	"usage: needle dump [-i FILE] [options]\n"
	"Every event of the trace as a line, thread by thread (uftrace dump): its time\n"
	"(CLOCK_MONOTONIC seconds), thread, kind, function and address, and depth, the\n"
	"values recorded with -A/-R after it.\n"
	"  -i, --input FILE    trace file (default needle.data)\n"
	"      --tid TID       only this thread\n"
	"      --with-syms PATH  names for stripped objects' functions (see needle replay --help)\n"
	"  -E, --event linux:schedule  each time a call was off the\n"
	"                     CPU (record -E linux:schedule or --kernel=switch) as a call\n"
	"                     to linux:schedule inside it; --event-full: outside calls too;\n"
	"                     --no-sched-preempt: not where it was preempted; --no-sched\n"
	"                     (or --no-event): none\n"
	"  -F, --filter FUNC   only FUNC's calls and what they call (repeatable)\n"
	"  -N, --notrace FUNC  not FUNC's calls nor what they call (repeatable)\n"
	"  -D, --depth N       at most N levels (below the outermost -F call)\n"
	"      --no-libcall    not the calls the program makes into libraries\n"
	"      --no-args       not the values recorded with -A/-R\n"
	"  -t, --time-filter TIME  only the calls that lasted TIME or more, and (so) the calls\n"
	"                      they are in\n"
	"      --chrome        Chrome trace JSON instead (needle export --format=chrome), of the\n"
	"                      calls the filters and --tid leave\n"
	"      --flame-graph   folded stacks instead, as uftrace writes them: every thread's\n"
	"                      stacks merged, valued in samples of --sample-time (needle export\n"
	"                      --format=folded keeps threads apart, in ns); of the whole\n"
	"                      trace: not with -F, -N, -D, -t, --tid or --no-libcall\n"
	"      --sample-time TIME\n"
	"                      --flame-graph's sample (default: 1us, times 10 for each\n"
	"                      decade the trace spans beyond 1s, as uftrace chooses)\n"
	"      --graphviz      the call graph (by caller path, with the calls on each edge) as\n"
	"                      Graphviz's dot, from the calls the filters leave\n"
	"      --mermaid       the same as an HTML page of a Mermaid flowchart\n"
	"FUNC is a glob or, with ^ $ . ( | + \\, a regular expression; the last -F or -N\n"
	"that names a function decides.\n";

/* uftrace's default sample: 1us, times 10 while a million samples do not
 * cover the trace's span (from its earliest chunk to its latest), at most
 * 1s. */
static uint64_t default_sample_ns(const struct trace *t)
{
	uint64_t lo = UINT64_MAX, hi = 0, sample = 1000;

	for (size_t i = 0; i < t->thread_cnt; i++) {
		const struct trace_thread *th = &t->threads[i];
		if (!th->chunk_cnt)
			continue;
		uint64_t a = trace_ns(t, th->chunks[0].base), b = trace_ns(t, th->chunks[th->chunk_cnt - 1].base);
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	while (hi > lo && sample * 1000000 < hi - lo && sample < 1000000000)
		sample *= 10;
	return sample;
}

/* --flame-graph: uftrace's folded stacks; a trace of entries only (the
 * function tracer) counts calls, as uftrace does without durations. */
static int dump_flame_graph(struct trace *t, uint64_t sample_ns)
{
	struct folded_opts o = { .merge_threads = 1 };

	if (t->tracer != TRACER_FUNCTION)
		o.sample_ns = sample_ns ? sample_ns : default_sample_ns(t);
	return export_folded_opts(t, stdout, &o);
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },   { "tid", required_argument, NULL, 'T' },
		{ "filter", required_argument, NULL, 'F' },  { "notrace", required_argument, NULL, 'N' },
		{ "depth", required_argument, NULL, 'D' },   { "chrome", no_argument, NULL, 'C' },
		{ "flame-graph", no_argument, NULL, 'G' },   { "help", no_argument, NULL, 'h' },
		{ "no-libcall", no_argument, NULL, 'L' },    { "graphviz", no_argument, NULL, 'V' },
		{ "mermaid", no_argument, NULL, 'M' },       { "time-filter", required_argument, NULL, 't' },
		{ "no-args", no_argument, NULL, 'A' },       { "sample-time", required_argument, NULL, 'S' },
		{ "with-syms", required_argument, NULL, 'W' },
		VIEW_SCHED_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct dump d = { 0 };
	uint64_t sample_ns = 0;
	const char *input = NULL, *with_syms = NULL;
	uint32_t tid = 0;
	int c, status, other = 0, callgraph = 0, err = 2;

	struct view_sched sched = { 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:d:F:N:D:t:hE:", longopts, NULL)) != -1) {
		switch (c) {
		VIEW_SCHED_CASES:
			if (view_sched_option(&sched, c, optarg))
				return 2;
			break;
		case 'W':
			with_syms = optarg;
			break;
		case 'i':
		case 'd': /* uftrace's -d DIR: here the trace file */
			input = optarg;
			break;
		case 'T':
			if (view_parse_tid(optarg, &tid))
				goto out;
			break;
		case 'F':
		case 'N':
			if (view_filter_add(&d.filter, "dump", optarg, c == 'N'))
				goto out;
			break;
		case 'D':
			if (view_filter_depth(&d.filter, "dump", optarg))
				goto out;
			break;
		case 'C':
		case 'G':
			if ((other && other != c) || callgraph) {
				cli_error("dump: one of --chrome, --flame-graph, --graphviz and --mermaid");
				goto out;
			}
			other = c;
			break;
		case 'L':
			d.filter.no_libcall = 1;
			break;
		case 'V':
		case 'M':
			if ((callgraph && callgraph != c) || other) {
				cli_error("dump: one of --chrome, --flame-graph, --graphviz and --mermaid");
				goto out;
			}
			callgraph = c;
			break;
		case 'A':
			d.no_args = 1;
			break;
		case 'S':
			if (cli_parse_duration(optarg, &sample_ns) || !sample_ns) {
				cli_error("dump: --sample-time takes a duration (1us, 2ms, 1s), not '%s'", optarg);
				goto out;
			}
			break;
		case 't':
			if (cli_parse_duration(optarg, &d.min_ns) || !d.min_ns) {
				cli_error("dump: -t takes a duration (100us, 2ms, 1s), not '%s'", optarg);
				goto out;
			}
			break;
		case 'h':
			fputs(dump_usage, stdout);
			err = 0;
			goto out;
		default:
			cli_option_error(argv[0], argc, argv, "i:d:F:N:D:t:hE:", longopts);
			goto out;
		}
	}
	if (other == 'G' && (view_filter_active(&d.filter) || tid || d.min_ns)) {
		cli_error("dump: --flame-graph writes the whole trace: without -F, -N, -D, -t, --tid or --no-libcall");
		goto out;
	}
	if (sample_ns && other != 'G') {
		cli_error("dump: --sample-time goes with --flame-graph");
		goto out;
	}
	if (callgraph && d.min_ns) {
		cli_error("dump: --graphviz and --mermaid count every call: not with -t");
		goto out;
	}
	/* uftrace dump takes the program's name too (view_check_program_arg). */
	const char *prog_arg = optind == argc - 1 ? argv[--argc] : NULL;
	if (!(d.t = view_start("dump", argc, argv, optind, input, tid, &sched, &status))) {
		err = status;
		goto out;
	}
	if (prog_arg && view_check_program_arg(d.t, "dump", prog_arg)) {
		view_close(d.t);
		goto out;
	}
	if (with_syms && view_use_syms(d.t, with_syms)) {
		view_close(d.t);
		err = 1;
		goto out;
	}
	err = 1;
	if (d.min_ns && view_defer_start(&d.defer, d.min_ns, d.t->thread_cnt)) {
		cli_error("out of memory");
		view_close(d.t);
		goto out;
	}
	view_buffer_output(stdout);
	if (callgraph) {
		if (view_filter_active(&d.filter) && view_filter_start(&d.filter, d.t)) {
			cli_error("out of memory");
			view_close(d.t);
			goto out;
		}
		err = dump_callgraph(&d, tid, callgraph == 'M');
		if (view_close_output(stdout, "standard output"))
			err = 1;
		view_close(d.t);
		goto out;
	}
	if (other) {
		if (view_filter_active(&d.filter) && view_filter_start(&d.filter, d.t)) {
			cli_error("out of memory");
			view_close(d.t);
			goto out;
		}
		err = other == 'C' ? export_chrome_filtered(d.t, stdout, view_filter_active(&d.filter) ? &d.filter : NULL,
							    d.min_ns ? &d.defer : NULL, tid)
				   : dump_flame_graph(d.t, sample_ns);
		if (view_close_output(stdout, "standard output"))
			err = 1;
		view_close(d.t);
		goto out;
	}
	uint32_t *order = malloc((d.t->thread_cnt ? d.t->thread_cnt : 1) * sizeof(*order));
	if (!order || view_filter_start(&d.filter, d.t)) {
		free(order);
		cli_error("out of memory");
		view_close(d.t);
		goto out;
	}
	d.mono0 = trace_monotonic_base(d.t);
	printf("# needle trace %s: format version %d, %zu threads, %llu events\n", d.t->path, d.t->version,
	       d.t->thread_cnt, (unsigned long long)d.t->end.events);
	for (size_t i = 0; i < d.t->thread_cnt; i++)
		order[i] = (uint32_t)i;
	order_trace = d.t;
	qsort(order, d.t->thread_cnt, sizeof(*order), began_cmp);
	err = 0;
	for (size_t k = 0; k < d.t->thread_cnt && !err; k++) {
		uint32_t i = order[k];
		struct trace_thread *th = &d.t->threads[i];
		if (tid && th->tid != tid)
			continue;
		struct trace_iter it;
		struct trace_event ev;
		int r;
		printf("\nthread %u (%s): %llu events\n", th->tid, th->name[0] ? th->name : "?",
		       (unsigned long long)th->events);
		if (trace_iter_init_thread(&it, d.t, i)) {
			cli_error("%s: %s", d.t->path, it.err);
			trace_iter_free(&it);
			err = 1;
			break;
		}
		while ((r = trace_iter_next(&it, &ev)) > 0) {
			d.t->work++;
			if (dump_event(&d, &ev) < 0) {
				cli_error("out of memory");
				err = 1;
				break;
			}
			if (view_output_failed(stdout))
				break;
		}
		if (r < 0) {
			cli_error("%s: %s", d.t->path, it.err);
			err = 1;
		}
		trace_iter_free(&it);
		if (view_output_failed(stdout))
			break;
	}
	if (view_close_output(stdout, "standard output"))
		err = 1;
	free(order);
	view_close(d.t);
out:
	view_filter_free(&d.filter);
	view_defer_free(&d.defer);
	return err;
}
