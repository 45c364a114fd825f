/* replay.c - `needle replay`: the function graph, like ftrace's
 * function_graph tracer and uftrace replay:
 *
 *   # DURATION     TID     FUNCTION
 *               [  4242] | main() {
 *      0.250 us [  4242] |   kv_hash();
 *      1.875 us [  4242] | } // main
 *
 * A call with no traced children takes one line with its duration; others
 * open with "{" and close with their duration.  Calls still running when
 * the trace ended have no closing line: they are listed after the graph,
 * per thread, innermost first (uftrace's "remaining functions"); calls
 * that returned while events were being lost close with "exit lost",
 * where the loss begins.
 *
 * --ret-ne V / --ret-eq V show only the calls whose return value differs
 * from (equals) V, one line each at its exit, as a leaf is shown:
 *
 *      0.310 us [  4242] |     lookup(arg1=3) = -1;
 *
 * The return value is known only at the exit, so the entry's values wait
 * until then: the reader marks each call that has some with a slot that
 * holds a copy (trace_iter_init_mark), freed at its exit.  -t TIME shows
 * its one line per call the same way, with its values.
 *
 * Invariants: one pass over the events, O(1) work per event (a thread's
 * pending one-line leaf is a flag indexed by the thread), memory bounded
 * by the number of threads (and, with --ret-*, by the calls open at once);
 * the output stops at the first write error. */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/util/cli_util.h"
#include "cli/view/view.h"
#include "cli/view/view_format.h"
#include "cli/util/trigger_spec.h"
#include "common/pattern.h"
#include "common/record_config.h"

/* Patterns of -F, -N, -C, -H and -T: globs, or regular expressions
 * (pattern.h), with what a match does (trigger_spec.h's actions; -F is
 * filter, -N notrace, -H hide) and the object they are in. */
struct pat_list {
	struct pat_list *next;
	int is_regex;
	regex_t re;
	const char *glob;
	char *module;     /* FUNC@MODULE: only in this object; NULL: any */
	unsigned actions; /* TRIGGER_*, or CL_CALLER for -C */
	uint32_t depth;   /* TRIGGER_DEPTH: levels from the call (-F GLOB@depth=N) */
	uint64_t time_ns; /* TRIGGER_TIME: the -t of its subtree */
	uint64_t size;    /* TRIGGER_SIZE: hidden when its function has fewer bytes */
};

#define CL_CALLER (1u << 16) /* -C: shown with its callers, one line */

/* -L LOCATION[@hide]: source files (a regular expression found anywhere
 * in the file's name as DWARF gives it), uftrace's location filter. */
struct loc_list {
	struct loc_list *next;
	regex_t re;
	int hide; /* @hide: the functions of matching files are hidden */
};

/* -f FIELD,...: the columns before the function, uftrace's, laid out as
 * uftrace lays them out: the header '#' then each title (padded as
 * uftrace spells it: its length is the column's width) with one space
 * between, and each value right-aligned in that width after one space. */
enum field { F_DURATION, F_TID, F_TIME, F_DELTA, F_ELAPSED, F_ADDR, F_TASK, F_MODULE };
static const struct {
	const char *name, *title;
} fields_info[] = {
	[F_DURATION] = { "duration", " DURATION " },
	[F_TID] = { "tid", "   TID  " },
	[F_TIME] = { "time", "     TIMESTAMP    " },
	[F_DELTA] = { "delta", " TIMEDELTA" },
	[F_ELAPSED] = { "elapsed", "  ELAPSED " },
	[F_ADDR] = { "addr", "   ADDRESS  " },
	[F_TASK] = { "task", "      TASK NAME" },
	[F_MODULE] = { "module", "     MODULE NAME" },
};
#define FIELDS_MAX 8

/* Add arg to l: a -T spec when actions is 0, else a pattern whose matches
 * get actions (and an @depth=N or @MODULE after it, as uftrace's -F
 * takes). */
static int pat_add(struct pat_list **l, const char *arg, unsigned actions)
{
	struct pat_list *n = calloc(1, sizeof(*n));
	struct trigger_spec ts;
	char err[512], spec[600];

	if (!n)
		return -1;
	if (!actions || strchr(arg, '@')) {
		if (actions)
			snprintf(spec, sizeof(spec), "%s,%s", arg,
				 actions & TRIGGER_NOTRACE ? "notrace" : actions & TRIGGER_HIDE ? "hide" : "filter");
		if ((actions & CL_CALLER) || trigger_spec_parse(actions ? spec : arg, &ts, err, sizeof(err))) {
			if (actions & CL_CALLER)
				snprintf(err, sizeof(err), "-C '%s': give a function's name or pattern", arg);
			cli_error("%s", err);
			free(n);
			return -1;
		}
		/* With actions, the trace's own -T (needle record took its
		 * values as -A and -R). */
		if (!ts.actions && (ts.args[0] || ts.rets[0] || ts.auto_args)) {
			cli_error("'%s': values are chosen when recording (needle record -A, -R or -T FUNC@arg1), "
				  "not at replay", arg);
			free(n);
			return -1;
		}
		n->glob = strdup(ts.pattern);
		n->module = ts.module[0] ? strdup(ts.module) : NULL;
		n->actions = ts.actions;
		n->depth = ts.depth;
		n->time_ns = ts.time_ns;
		n->size = ts.size;
	} else {
		n->glob = strdup(arg);
		n->actions = actions;
	}
	if (!n->glob) {
		free(n);
		return -1;
	}
	n->is_regex = cli_pattern_is_regex(n->glob);
	if (n->is_regex && regcomp(&n->re, n->glob, REG_EXTENDED | REG_NOSUB)) {
		cli_error("'%s' is not a regular expression", n->glob);
		free((char *)n->glob);
		free(n->module);
		free(n);
		return -1;
	}
	n->next = *l;
	*l = n;
	return 0;
}

static void pat_free(struct pat_list *l)
{
	while (l) {
		struct pat_list *n = l->next;
		if (l->is_regex)
			regfree(&l->re);
		free((char *)l->glob);
		free(l->module);
		free(l);
		l = n;
	}
}

/* The actions of the patterns of l that name the function: its name as
 * replay shows it, or its symbol, in module (NULL: not known); *depth
 * and *time_ns the depth= and time= of the last given that has one. */
static unsigned pat_match(const struct pat_list *l, const char *name, const char *sym, const char *module,
			  int in_program, uint64_t func_size, uint32_t *depth, uint64_t *time_ns)
{
	unsigned actions = 0, mode = TRIGGER_FILTER | TRIGGER_NOTRACE;
	int have_depth = 0, have_time = 0;

	/* l is newest first: of the patterns that name the function, the
	 * one given last chooses between filter and notrace, and its depth=
	 * counts (uftrace's rule: -F 'ns1::.*' -N 'bar2$' -F 'bar2$' shows
	 * bar2); other actions add up. */
	for (; l; l = l->next) {
		/* FUNC@PLT: uftrace's name for the program's calls into
		 * other objects, which needle records as the called
		 * object's functions: any object but the program. */
		if (l->module && !strcasecmp(l->module, "plt") ? !module || in_program
		    : l->module && (!module || !module_name_matches(l->module, module)))
			continue;
		if (view_pattern_names(l->glob, l->is_regex ? &l->re : NULL, name, sym)) {
			if ((l->actions & TRIGGER_DEPTH) && !have_depth) {
				*depth = l->depth;
				have_depth = 1;
			}
			if ((l->actions & TRIGGER_TIME) && !have_time) {
				*time_ns = l->time_ns;
				have_time = 1;
			}
			/* size=: a function of known size under it is hidden,
			 * as if -Z had kept it from being recorded. */
			if ((l->actions & TRIGGER_SIZE) && func_size && func_size < l->size)
				actions |= TRIGGER_HIDE;
			actions |= l->actions & (~(TRIGGER_FILTER | TRIGGER_NOTRACE | TRIGGER_SIZE) | mode);
			if (l->actions & mode)
				mode = 0;
		}
	}
	return actions;
}

/* Add -L arg (LOCATION or LOCATION@hide) to l. */
static int loc_add(struct loc_list **l, const char *arg)
{
	struct loc_list *n = calloc(1, sizeof(*n));
	size_t len = strlen(arg);
	char *re = strdup(arg);

	if (!n || !re) {
		free(n);
		free(re);
		cli_error("out of memory");
		return -1;
	}
	if (len > 5 && !strcmp(arg + len - 5, "@hide")) {
		n->hide = 1;
		re[len - 5] = 0;
	}
	if (!*re || regcomp(&n->re, re, REG_EXTENDED | REG_NOSUB)) {
		cli_error("-L '%s': give a source file's name or a regular expression for it "
			  "(s-lib.c, dir/, \\.cc$), with @hide to hide its functions", arg);
		free(n);
		free(re);
		return -1;
	}
	free(re);
	n->next = *l;
	*l = n;
	return 0;
}

static void loc_free(struct loc_list *l)
{
	while (l) {
		struct loc_list *n = l->next;
		regfree(&l->re);
		free(l);
		l = n;
	}
}

/* -L's verdict on a function defined in file (NULL: not known): hidden
 * when a LOCATION@hide matches, or when there are LOCATIONs to show and
 * none matches.  The last given that matches decides. */
static int loc_hidden(const struct loc_list *l, int locs_show, const char *file)
{
	for (; file && l; l = l->next)
		if (!regexec(&l->re, file, 0, NULL, 0))
			return l->hide;
	return locs_show;
}

struct replay {
	struct trace *t;
	uint32_t max_depth;  /* 0: all */
	uint64_t threshold;  /* ns; 0: none */
	/* By thread index: the thread's next event is the exit of a leaf
	 * already printed with its entry. */
	uint8_t *skip;
	/* The line being built, written with one call when complete. */
	struct view_buf line;
	/* --ret-eq / --ret-ne: RET_EQ or RET_NE, and V. */
	int ret_filter;
	struct view_int ret_value;
	int seen_ret; /* some call had a return value */
	/* The entry values of the open calls, while their return value is
	 * not known (--ret-*): slots by mark - 1, and the free ones. */
	struct arg_slot {
		uint8_t *p;
		size_t len, cap;
	} *slots;
	uint32_t *free_slots;
	size_t slot_cnt, free_cnt;
	/* The tree view (tree set): the patterns of -F, -N, -C, -H and -T
	 * (have_sel: one of them is a filter, have_callers: -C), by thread. */
	int tree;
	struct pat_list *pats;
	int have_sel, have_callers;
	uint32_t *site_class; /* by site: CL_MATCHED | actions, 0 not yet matched */
	uint32_t *site_depth; /* by site: the depth= of a pattern that matched it (0: -D) */
	uint64_t *site_time;  /* by site: the time= of a pattern that matched it */
	int finished;         /* a finish trigger fired: nothing more is shown */
	/* The calls still open when the recording ended, innermost first
	 * per thread: listed after the graph, as uftrace lists them. */
	struct open_call {
		uint32_t thread, depth, site;
		size_t seq; /* the order they came in: a thread's, innermost first */
	} *open_calls;
	size_t open_cnt, open_cap;
	struct tree_stacks *tt; /* by thread */
	int no_comment;
	/* A trace_off among record's -T (the trace's view options): the
	 * recording "stopped" there, as uftrace's would have, so the calls
	 * whose ends fall in it are listed as left open (put_open_calls);
	 * a replay's own trace_off only stops showing. */
	int recorded_trace_off;
	int mark_unwound; /* --mark-unwound: a call left without returning says so in its comment */
	int no_kernel;  /* --no-kernel: no line for the kernel's events */
	struct view_sched sched; /* -E, --no-sched, ... (view.h) */
	int no_merge;  /* a call with no shown calls opens and closes, as others do */
	int disabled;  /* --disable: showing starts at a trace_on */
	enum view_values_style values_style; /* --arg-names: VIEW_VALUES_EXACT */
	int demangle;                        /* --demangle: enum trace_demangle + 1, 0 not given */
	int no_args;                         /* --no-args: values recorded, not shown */
	/* -f: the columns (custom set: 0 for the default duration,tid,
	 * or field_cnt 0 with -f none: the function alone). */
	int custom_fields, field_cnt;
	enum field fields[FIELDS_MAX];
	/* What the line being started is about (its event's time, site and
	 * thread index), for -f's columns; the last line's time for delta. */
	uint64_t at_ns, last_ns;
	uint32_t at_site, at_thread;
	uint32_t *watch_last;    /* -W cpu: by thread, the CPU its last note shown said, plus one */
	uint32_t *watch_seen;    /* ... and the CPU its latest event noted, shown or hidden, plus one */
	int have_first;
	/* -r START~END: only what happened in that time (ns since the
	 * trace's first event; 0, UINT64_MAX: open). */
	uint64_t range_start, range_end;
	int no_libcall;         /* --no-libcall: library calls (and their calls) not shown */
	/* --column-view: each thread's lines indented by its column (the
	 * order threads first show a line in) times column_offset levels. */
	int column_view;
	uint32_t column_offset, columns;
	uint32_t *column; /* by thread index: column + 1, 0 none yet */
	signed char *module_compiled; /* view_module_compiled's cache */
	int srcline;             /* --srcline: a call's source file and line after its opening */
	const char *with_syms;   /* --with-syms: names for stripped objects' functions */
	struct loc_list *locs;   /* -L */
	int locs_show;           /* some -L without @hide: the functions of other files are hidden */
	uint64_t min_size;       /* -Z: functions of fewer bytes are hidden */
	/* --libname: a library's function shown as NAME@LIBRARY (by site,
	 * made at its first line). */
	int libname;
	char **lib_names;
	/* -f module: by thread index, the site of the last line at each
	 * depth, so that a line's module is its caller's (the object that
	 * made the call, as uftrace records a library call at the caller's
	 * PLT).  Grows with the deepest line. */
	struct line_sites {
		uint32_t *site;
		uint32_t cap;
	} *line_sites;
	uint32_t at_depth;
};

#define CL_MATCHED (1u << 31)

enum { RET_EQ = 1, RET_NE = 2 };

/* The tree view of the filters (-F, -N, -C, -t, -D): a call's line is
 * written when it is known to be shown, so the calls a filter hides leave
 * no empty braces (a call whose shown children are none is one line, as
 * a leaf).  Per thread, a frame per open call, indexed by its depth:
 * memory grows with the deepest stack, never with the events, and each
 * frame's line is written at most once. */
enum {
	FR_SHOWN = 1,   /* passes the filters: its line is written when a descendant's is, or at its exit */
	FR_PRINTED = 2, /* its "name() {" line is written */
	FR_IN = 4,      /* a -F call: the thread's count of them drops at its exit */
	FR_OUT = 8,     /* a -N call, or a -C call (whose calls are not shown) */
	FR_CALLER = 16, /* a -C call: shown, with its callers */
	FR_LIMIT = 32,  /* a -F or depth= call: the thread's depth limit is restored at its exit */
	FR_ENTERED = 64, /* its entry was seen while showing (not in a trace_off) */
	FR_HIDDEN = 128, /* -H, hide: not shown, its calls are, a level up */
	FR_FORCE = 256,  /* trace: shown whatever -t says */
	FR_TIME = 512,   /* time=: the thread's threshold is restored at its exit */
};

struct tree_frame {
	uint64_t saved_threshold;
	uint64_t ns; /* its entry's time (-f's columns of lines written later) */
	uint32_t site, sdepth, saved_limit;
	uint16_t flags;
	uint16_t data_len;
	uint8_t *data; /* the entry's values, copied: written later than read */
	size_t cap;
	uint32_t watch_cpu; /* -W cpu: the CPU the thread was last noted on at the entry, plus one */
};

/* A stack of a thread: its own, or a coroutine context's (each has its
 * depths: the reader keeps a stack per context). */
struct tree_thread {
	struct tree_frame *f;
	size_t cap;
	uint32_t in, out, limit, sdepth;
	uint32_t ctx_id; /* CTX_UNNAMED: not known yet (the thread's own stack) */
	uint64_t threshold; /* -t, or the time= of the innermost open call that has one */
	/* trace_off: nothing is shown, and no frame changes, until a
	 * trace_on; then the depth shown is the depth less bias, as it was
	 * when showing stopped (uftrace's way: a call that returns after
	 * the trace_on closes what is open at its depth). */
	int off, was_off;
	uint32_t bias;
	int before_range; /* -r START~: off until the thread's first event at START or later */
};

#define CTX_UNNAMED UINT32_MAX

struct tree_stacks {
	struct tree_thread *v; /* v[cur] is the stack running */
	size_t cnt, cur;
};

static const char replay_usage[] =
	"usage: needle replay [-i FILE] [--tid TID] [-F GLOB] [-N GLOB] [-C GLOB] [-H GLOB] [-T TRIGGER]\n"
	"                     [-D DEPTH] [-t TIME] [--disable] [--no-merge] [--no-comment] [--arg-names]\n"
	"                     [--demangle=simple|full|no] [-f FIELDS] [--no-libcall] [--srcline]\n"
	"                     [-L LOCATION] [-Z BYTES] [--ret-ne V | --ret-eq V] [--mark-unwound]\n"
	"  -i, --input FILE   trace file (default needle.data); -d FILE, uftrace's spelling, too\n"
	"      --tid TID      only this thread\n"
	"  -E, --event linux:schedule  each time a call was off the\n"
	"                     CPU (record -E linux:schedule or --kernel=switch) as a call\n"
	"                     to linux:schedule inside it; --event-full: outside calls too;\n"
	"                     --no-sched-preempt: not where it was preempted; --no-sched\n"
	"                     (or --no-event): none; --no-event hides the renames' lines\n"
	"                     (linux:task-name) too; an -E beside either wins;\n"
	"                     -E PROVIDER:NAME (a glob): USDT probes the trace must hold\n"
	"                     (recorded with -E; shown always)\n"
	"      --no-pager     accepted for uftrace's command lines (needle never pages)\n"
	"  -F, --filter GLOB  only the calls of matching functions and what they call (repeatable);\n"
	"                     GLOB@depth=N: N levels of them; GLOB@MODULE: only in that object,\n"
	"                     GLOB@PLT: the program's calls into other objects\n"
	"  -N, --notrace GLOB not the calls of matching functions, nor what they call (repeatable)\n"
	"  -C, --caller-filter GLOB  only the calls of matching functions, one line each, and their\n"
	"                     callers (repeatable)\n"
	"  -H, --hide GLOB    not the matching functions, but what they call, a level up\n"
	"  -L, --loc-filter LOCATION  only the functions defined in matching source files (a regular\n"
	"                     expression, found in the file's name); the others are hidden, their\n"
	"                     calls shown a level up (repeatable); LOCATION@hide: those hidden\n"
	"      --srcline      each call's source file and line (from the objects' DWARF, read\n"
	"                     from their files: an object rebuilt since the recording has none)\n"
	"      --with-syms PATH  names for the functions of stripped objects (func_0x...@OBJECT):\n"
	"                     from PATH, a trace recorded before they were stripped, or a directory\n"
	"                     of their unstripped files (or OBJECT.debug files)\n"
	"  -T, --trigger FUNC@ACTION[,ACTION...]  uftrace's triggers: filter, notrace, depth=N, hide,\n"
	"                     backtrace (its callers first), trace_on, trace_off (showing stops at\n"
	"                     its entry until a trace_on), trace (shown whatever -t says),\n"
	"                     time=TIME (-t TIME for it and what it calls), size=BYTES (hidden\n"
	"                     when smaller, as -Z), finish (showing ends at its entry, and the\n"
	"                     calls open then are listed); the readings of needle record -T\n"
	"                     FUNC@read=proc/statm|page-fault are shown inside each call\n"
	"  -Z, --size-filter BYTES  not the functions smaller than BYTES (a library call counts as\n"
	"                     its 16-byte PLT entry), but what they call, a level up\n"
	"      --disable      start with showing stopped, until a trace_on trigger\n"
	"  -D, --depth N      only N levels of nesting (from each -F call, with -F)\n"
	"  -t, --time TIME    only calls that took TIME or more (e.g. 10us; a number alone is\n"
	"                     nanoseconds, as uftrace reads it), and the calls they are in\n"
	"      --no-merge     a call with no calls shown opens and closes as the others do\n"
	"      --no-comment   no /* name */ after a closing brace\n"
	"      --mark-unwound a call left without returning (longjmp, a C++ exception, a thread's\n"
	"                     exit) ends in } /* NAME (unwound) */; by default, as uftrace, in\n"
	"                     } /* NAME */ where the unwinding passed it\n"
	"      --no-kernel    no line for the kernel's events (record --kernel)\n"
	"      --libname      a library's function as NAME@LIBRARY (uftrace's)\n"
	"      --no-args      no values shown (those recorded with -A, -R, --auto-args)\n"
	"  -r, --time-range START~END  only what happened between START and END (either may be left\n"
	"                     out): seconds as -f time shows them, or with a unit (1.5ms)\n"
	"      --column-view  each thread's lines in a column of its own, --column-offset N levels\n"
	"                     (default 8) right of the thread before it\n"
	"      --no-libcall   no library calls (functions of objects built without patchable\n"
	"                     entries); what they call back (a signal handler) shows a level up\n"
	"  -f, --output-fields LIST  the columns before the function, uftrace's: duration, tid\n"
	"                     (the default), time (seconds since the trace's first event), delta\n"
	"                     (since the line before), elapsed (time as a duration), addr, task\n"
	"                     (the thread's name), module (the object that made the call: the\n"
	"                     caller's); +LIST\n"
	"                     adds to the default; none: the function alone, no header\n"
	"      --arg-names    each value with its name (fd=3, arg2=5) and floats to their last digit;\n"
	"                     by default values are shown as uftrace shows them: (3, 5), %f\n"
	"      --demangle=simple|full|no  C++ names without their parameters and template\n"
	"                     arguments (the default: std::vector::push_back), with them\n"
	"                     (ns::f<int>(int) const), or as the symbol (_ZNK2ns1fIiEEvi)\n"
	"      --ret-ne V     only calls whose return value (-R) is not V, one line each at its exit\n"
	"      --ret-eq V     only calls whose return value is V (V: 0, -1, 0x7f; one of the two)\n"
	"The options needle record kept for the views (its -t, -T, -H, --disable, --no-merge,\n"
	"--no-comment, -F GLOB@depth=N; needle info lists them) come first; these add to them or\n"
	"override them.  Patterns are globs; one with ^, $, '.', (, | or + is a regular expression\n"
	"(as uftrace's), found anywhere in the name as replay shows it.\n";

static void put(struct replay *r, const char *s)
{
	view_buf_put(&r->line, s, strlen(s));
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* The function's name as lines show it: with --libname, a function of
 * another object than the program's (module 0) as NAME@LIBRARY. */
static const char *shown_name(struct replay *r, uint32_t site)
{
	const char *name = trace_site_name(r->t, site);
	if (!r->libname || site >= r->t->site_cap || !r->t->sites[site].name)
		return name;
	uint32_t m = r->t->sites[site].module;
	if (!m || m >= r->t->module_cnt || !r->t->modules[m])
		return name;
	if (!r->lib_names && !(r->lib_names = calloc(r->t->site_cap, sizeof(*r->lib_names))))
		return name;
	if (!r->lib_names[site] && asprintf(&r->lib_names[site], "%s@%s", name, base_name(r->t->modules[m])) < 0)
		r->lib_names[site] = NULL;
	return r->lib_names[site] ? r->lib_names[site] : name;
}

/* -f module: the object of the line's caller (the last line one level
 * up in its thread), or of its own function at depth 0. */
static const char *line_module(struct replay *r)
{
	uint32_t site = r->at_site;
	struct line_sites *ls = r->line_sites && r->at_thread < r->t->thread_cnt ? &r->line_sites[r->at_thread] : NULL;

	if (ls && r->at_depth && r->at_depth - 1 < ls->cap && ls->site[r->at_depth - 1] != UINT32_MAX)
		site = ls->site[r->at_depth - 1];
	if (site >= r->t->site_cap)
		return "";
	uint32_t m = r->t->sites[site].module;
	return m < r->t->module_cnt && r->t->modules[m] ? base_name(r->t->modules[m]) : "";
}

/* The line's site is the one at its depth from now on (-f module). */
static void note_line_site(struct replay *r)
{
	if (!r->line_sites || r->at_thread >= r->t->thread_cnt)
		return;
	struct line_sites *ls = &r->line_sites[r->at_thread];
	if (r->at_depth >= ls->cap) {
		uint32_t cap = ls->cap ? ls->cap * 2 : 64;
		while (cap <= r->at_depth)
			cap *= 2;
		uint32_t *v = realloc(ls->site, cap * sizeof(*v));
		if (!v)
			return;
		memset(v + ls->cap, 0xff, (cap - ls->cap) * sizeof(*v));
		ls->site = v;
		ls->cap = cap;
	}
	ls->site[r->at_depth] = r->at_site;
}

/* Start a line: "%10s [%6u] | " and two spaces per level.  The output
 * grows with the depth (that is the format); the work to make it is a
 * memset. */
/* -f task: each line's thread by the name it had at that line's time
 * (trace_thread_name_at: the kernel's names, --kernel=comm). */
static const char *task_name_at(const struct replay *r)
{
	if (r->at_thread >= r->t->thread_cnt)
		return "";
	return trace_thread_name_at(r->t, &r->t->threads[r->at_thread], r->at_ns);
}

/* -f's columns, then " | " (nothing with -f none): their length. */
static int custom_prefix(struct replay *r, char *pre, size_t len, const char *dur, uint32_t tid)
{
	size_t n = 0;

	for (int i = 0; i < r->field_cnt && n + 48 < len; i++) {
		char v[40];
		int w = (int)strlen(fields_info[r->fields[i]].title);
		switch (r->fields[i]) {
		case F_DURATION:
			snprintf(v, sizeof(v), "%s", dur);
			break;
		case F_TID:
			snprintf(v, sizeof(v), "[%6u]", tid);
			break;
		case F_TIME:
			snprintf(v, sizeof(v), "%.9f", (double)r->at_ns / 1e9);
			break;
		case F_DELTA:
			cli_format_duration(v, sizeof(v), r->at_ns >= r->last_ns ? r->at_ns - r->last_ns : 0);
			break;
		case F_ELAPSED: /* since the trace's first event, as -r counts */
			cli_format_duration(v, sizeof(v), r->at_ns);
			break;
		case F_ADDR: {
			const struct trace_site *ts = r->at_site < r->t->site_cap ? &r->t->sites[r->at_site] : NULL;
			snprintf(v, sizeof(v), "%llx", (unsigned long long)(ts ? ts->func_ip : 0));
			break;
		}
		case F_TASK:
			snprintf(v, sizeof(v), "%.15s", task_name_at(r));
			break;
		case F_MODULE:
			snprintf(v, sizeof(v), "%.16s", line_module(r));
			break;
		}
		n += (size_t)snprintf(pre + n, len - n, " %*s", w, v);
	}
	if (r->field_cnt)
		n += (size_t)snprintf(pre + n, len - n, " | ");
	return (int)n;
}

static void line(struct replay *r, const char *dur, uint32_t tid, uint32_t depth)
{
	char pre[320];

	r->at_depth = depth;
	note_line_site(r);
	if (r->column && r->at_thread < r->t->thread_cnt) {
		if (!r->column[r->at_thread])
			r->column[r->at_thread] = ++r->columns;
		depth += (r->column[r->at_thread] - 1) * r->column_offset;
	}

	if (!r->have_first) {
		r->last_ns = r->at_ns; /* the first line's delta is 0 */
		r->have_first = 1;
	}
	int n = r->custom_fields ? custom_prefix(r, pre, sizeof(pre), dur, tid) : view_format_prefix(pre, dur, tid);
	r->last_ns = r->at_ns;

	r->line.len = 0;
	if (view_buf_reserve(&r->line, (size_t)n + 2 * (size_t)depth + 64))
		return;
	memcpy(r->line.p, pre, (size_t)n);
	memset(r->line.p + n, ' ', 2 * (size_t)depth);
	r->line.len = (size_t)n + 2 * (size_t)depth;
}

static void end_line(struct replay *r)
{
	put(r, "\n");
	if (!r->line.oom)
		fwrite_unlocked(r->line.p, 1, r->line.len, stdout);
}

/* ev's values into *buf (grown to *cap as needed): 0, or -ENOMEM. */
static int copy_values(uint8_t **buf, size_t *cap, const struct trace_event *ev)
{
	if (*cap < ev->data_len) {
		uint8_t *p = realloc(*buf, ev->data_len);
		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = ev->data_len;
	}
	memcpy(*buf, ev->data, ev->data_len);
	return 0;
}

static int put_ret(struct replay *r, const struct trace_event *ev);

/* TEV_UNWOUND when a call left without returning is marked as such
 * (--mark-unwound), else 0: uftrace closes it as a return, where the
 * unwinding passed it (a leaf of it is then one line). */
static uint32_t marked_unwound(const struct replay *r)
{
	return r->mark_unwound ? TEV_UNWOUND : 0;
}

/* The closing line of a call that returned, ns after its entry, begun but
 * not ended. */
static void put_closed(struct replay *r, const struct trace_event *ev, const char *name, uint32_t depth,
		       uint64_t ns)
{
	char dur[32] = "";
	/* A forked child's return from a call its parent made: when it
	 * began is its parent's to say. */
	if (!(ev->kind == TEV_EXIT && (ev->flags & TEV_INHERITED)))
		cli_format_duration(dur, sizeof(dur), ns);
	line(r, dur, ev->tid, depth);
	put(r, "}");
	/* A call's end with its value is a statement, as a leaf's is
	 * ("} = 0;", then the name's comment): uftrace's form. */
	if (put_ret(r, ev))
		put(r, ";");
	uint32_t marked = ev->flags & (marked_unwound(r) | TEV_UNMATCHED);
	if (!r->no_comment || marked) {
		put(r, " /* ");
		put(r, name);
		put(r, marked & TEV_UNWOUND        ? " (unwound) */"
		       : ev->flags & TEV_UNMATCHED ? " (return not recorded) */"
						   : " */");
	}
}

/* The return of a call whose entry is not in the trace: in a snapshot,
 * entered before the thread's window (whether the window's first chunk
 * entered it again, TEV_BEFORE, or it was too deep for that, an orphan);
 * it has no duration and its opening no line. */
static void put_return_before(struct replay *r, const struct trace_event *ev, const char *name, uint32_t depth)
{
	line(r, "", ev->tid, depth);
	put(r, "/* return from ");
	put(r, name);
	put(r, r->t->have_snapshot ? " (entered before the snapshot) */" : " (its entry was not recorded) */");
}

/* A call that has no duration: still running when the recording ended
 * (no closing line, as uftrace shows it: the call is listed after the
 * graph, 2), or its exit lost (its closing line, begun but not ended, 1);
 * 0 for any other. */
/* A call listed after the graph with those the recording ended in. */
static void add_open_call(struct replay *r, uint32_t thread, uint32_t depth, uint32_t site)
{
	if (r->open_cnt == r->open_cap) {
		size_t cap = r->open_cap ? r->open_cap * 2 : 16;
		struct open_call *v = realloc(r->open_calls, cap * sizeof(*v));
		if (!v) {
			r->line.oom = 1;
			return;
		}
		r->open_calls = v;
		r->open_cap = cap;
	}
	r->open_calls[r->open_cnt] = (struct open_call){ thread, depth, site, r->open_cnt };
	r->open_cnt++;
}

static int put_unfinished(struct replay *r, const struct trace_event *ev, const char *name, uint32_t depth)
{
	if (ev->flags & TEV_OPEN) {
		add_open_call(r, ev->thread, depth, ev->site);
		return 2;
	}
	if (!(ev->flags & TEV_EXIT_LOST))
		return 0;
	line(r, "", ev->tid, depth);
	put(r, "} /* ");
	put(r, name);
	put(r, ": exit lost */");
	return 1;
}

/* After the graph: the calls the recording ended in, per thread,
 * innermost first, as uftrace lists its "remaining functions".  Memory:
 * the calls open at the end, never the events. */
/* Is the call an exec (the execve family)?  A thread whose innermost
 * open call is one ended there: the exec replaced its program (which,
 * when followed, goes on as a thread of its own under the same tid), so
 * its calls did not stay open; uftrace lists none of them either. */
static int ended_by_exec(struct replay *r, uint32_t site)
{
	static const char *const execs[] = { "execve", "execv", "execvp", "execvpe", "execl", "execle",
					     "execlp", "fexecve", "execveat" };
	const char *name = trace_site_name(r->t, site);
	for (size_t i = 0; i < sizeof(execs) / sizeof(execs[0]); i++)
		if (!strcmp(name, execs[i]))
			return 1;
	return 0;
}

/* By thread, each thread's in the order they came (the calls -r's end
 * left open come as their exits do, the threads' interleaved). */
static int open_call_cmp(const void *a, const void *b)
{
	const struct open_call *x = a, *y = b;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Run as uftrace, the title of both lists of calls left open (at the
 * trace's end, at a finish trigger): uftrace's one title for them. */
static const char uftrace_remaining_title[] = "\nuftrace stopped tracing with remaining functions\n"
					      "================================================\n";

static void put_open_calls(struct replay *r)
{
	char idx[48];
	size_t shown = 0;

	if (r->open_cnt > 1)
		qsort(r->open_calls, r->open_cnt, sizeof(*r->open_calls), open_call_cmp);

	/* Innermost first: a thread's group begins with its innermost call. */
	for (size_t i = 0, skip = 0; i < r->open_cnt; i++) {
		const struct open_call *c = &r->open_calls[i];
		if (!i || c->thread != r->open_calls[i - 1].thread)
			skip = ended_by_exec(r, c->site);
		if (!skip)
			r->open_calls[shown++] = *c;
	}
	r->open_cnt = shown;
	if (!r->open_cnt)
		return;
	fputs(cli_uftrace_style ? uftrace_remaining_title
				: "\nneedle stopped recording with these calls open\n"
				  "==============================================\n",
	      stdout);
	for (size_t i = 0; i < r->open_cnt; i++) {
		const struct open_call *c = &r->open_calls[i];
		if (!i || c->thread != r->open_calls[i - 1].thread) {
			snprintf(idx, sizeof(idx), "task: %u\n",
				 c->thread < r->t->thread_cnt ? r->t->threads[c->thread].tid : 0);
			fputs(idx, stdout);
		}
		snprintf(idx, sizeof(idx), "[%u] ", c->depth);
		fputs(idx, stdout);
		fputs(shown_name(r, c->site), stdout);
		fputc('\n', stdout);
	}
}

static int site_srcline(struct replay *r, uint32_t site, const char **file, unsigned *line);

/* --srcline: the call's source file and line in a comment after its opening,
 * where known. */
static void put_srcline(struct replay *r, uint32_t site)
{
	const char *file;
	unsigned ln;
	char num[16];

	if (!r->srcline || !site_srcline(r, site, &file, &ln))
		return;
	snprintf(num, sizeof(num), ":%u */", ln);
	put(r, " /* ");
	put(r, file);
	put(r, num);
}

/* "(arg1=5, ...)" for an entry of site with values, "()" without. */
static void put_values(struct replay *r, uint32_t site, const uint8_t *data, size_t n)
{
	char v[512];
	struct trace_event entry = { .kind = TEV_ENTRY, .site = site, .data = data, .data_len = (uint16_t)n };

	size_t len = n && !r->no_args ? view_format_values_style(v, sizeof(v), r->t, &entry, r->values_style) : 0;
	/* --demangle=full: a C++ name has its parameter list already. */
	if (!len && r->demangle == TRACE_DEMANGLE_FULL + 1) {
		const char *name = trace_site_name(r->t, site);
		if ((*name && name[strlen(name) - 1] == ')') || strstr(name, ") const"))
			return;
	}
	put(r, "(");
	if (len)
		put(r, v);
	put(r, ")");
}

static void put_args(struct replay *r, const struct trace_event *ev)
{
	put_values(r, ev->site, ev->data, ev->data_len);
}

/* " = 5" for an exit with a return value; 1 if there was one to show. */
static int put_ret(struct replay *r, const struct trace_event *ev)
{
	char v[512];

	if (ev->data_len && !r->no_args && view_format_values_style(v, sizeof(v), r->t, ev, r->values_style)) {
		put(r, " = ");
		put(r, v);
		return 1;
	}
	return 0;
}

/* The reader's mark of a call (--ret-*): a slot with a copy of its
 * entry's values, + 1, or 0 when it has none. */
static uint32_t keep_args(const struct trace_event *ev, void *arg)
{
	struct replay *r = arg;
	uint32_t i;

	/* An entry of the function tracer has no exit to free a slot. */
	if (!ev->data_len || (ev->flags & TEV_FLAT) || r->line.oom)
		return 0;
	if (r->free_cnt) {
		i = r->free_slots[--r->free_cnt];
	} else {
		/* Room for every slot in the free list too, so a free never fails. */
		struct arg_slot *s = realloc(r->slots, (r->slot_cnt + 1) * sizeof(*s));
		uint32_t *f = s ? realloc(r->free_slots, (r->slot_cnt + 1) * sizeof(*f)) : NULL;
		if (s)
			r->slots = s;
		if (f)
			r->free_slots = f;
		if (!s || !f || r->slot_cnt >= UINT32_MAX - 1) {
			r->line.oom = 1;
			return 0;
		}
		i = (uint32_t)r->slot_cnt++;
		r->slots[i] = (struct arg_slot){ 0 };
	}
	struct arg_slot *s = &r->slots[i];
	if (copy_values(&s->p, &s->cap, ev)) {
		r->free_slots[r->free_cnt++] = i;
		r->line.oom = 1;
		return 0;
	}
	s->len = ev->data_len;
	return i + 1;
}

/* At an exit: the entry's values its mark kept, its slot freed now and
 * read by the caller (the reader decodes the next event, which may take
 * the slot, only when asked for it). */
static void take_args(struct replay *r, const struct trace_event *ev, const uint8_t **args, size_t *args_len)
{
	if (!ev->mark)
		return;
	*args = r->slots[ev->mark - 1].p;
	*args_len = r->slots[ev->mark - 1].len;
	r->free_slots[r->free_cnt++] = ev->mark - 1;
}

/* --ret-* and -t TIME: a call whose return value compares as asked, or
 * that took TIME or more, one line at its exit with its values. */
static int print_at_exit(struct replay *r, const struct trace_event *ev)
{
	const uint8_t *args = NULL;
	size_t args_len = 0;
	char dur[32];

	if (ev->kind != TEV_EXIT)
		return 0;
	take_args(r, ev, &args, &args_len);
	/* No duration: still running, exit lost, entry not recorded or
	 * before a snapshot's window. */
	if (ev->flags & TEV_UNTIMED)
		return 0;
	if (r->ret_filter) {
		int eq = view_ret_equals(ev->data, ev->data_len, &r->ret_value);
		if (eq < 0)
			return 0;
		r->seen_ret = 1;
		if (eq != (r->ret_filter == RET_EQ))
			return 0;
	}
	uint64_t ns = ev->ns - ev->entry_ns;
	if (ns < r->threshold || (r->max_depth && ev->depth >= r->max_depth))
		return 0;
	cli_format_duration(dur, sizeof(dur), ns);
	line(r, dur, ev->tid, ev->depth);
	put(r, shown_name(r, ev->site));
	put_values(r, ev->site, args, args_len);
	put_ret(r, ev);
	put(r, ";");
	end_line(r);
	return 0;
}

static int module_compiled(struct replay *r, uint32_t module)
{
	return view_module_compiled(r->t, module, &r->module_compiled);
}

static int site_srcline(struct replay *r, uint32_t site, const char **file, unsigned *line)
{
	return view_site_srcline(r->t, site, &r->module_compiled, file, line);
}

/* The actions (TRIGGER_*, CL_CALLER) of a site, matched once. */
static unsigned site_class(struct replay *r, uint32_t site)
{
	if (site < r->t->site_cap && r->site_class[site])
		return r->site_class[site] & ~CL_MATCHED;
	const char *name = trace_site_name(r->t, site);
	const struct trace_site *ts = site < r->t->site_cap ? &r->t->sites[site] : NULL;
	const char *module = ts && ts->module < r->t->module_cnt ? r->t->modules[ts->module] : NULL;
	uint32_t depth = 0;
	uint64_t time_ns = 0;
	/* Module 0 is the program: discovery takes it first. */
	/* A library call's size is its PLT entry's (uftrace's view of a
	 * call the program makes to a library), or its function's when
	 * smaller, as record -Z counts it. */
	int libcall = ts && ts->module != 0 && !module_compiled(r, ts->module);
	uint64_t size = ts ? ts->func_size : 0;
	if (libcall && (!size || size > PLT_ENTRY_BYTES))
		size = PLT_ENTRY_BYTES;
	unsigned c = pat_match(r->pats, name, ts ? ts->sym : NULL, module, ts && ts->module == 0, size, &depth,
			       &time_ns);
	/* Hidden, not dropped: what a library calls back (a signal handler
	 * run by raise, a qsort comparator) shows a level up. */
	if (r->no_libcall && libcall)
		c |= TRIGGER_HIDE;
	/* -Z: a function smaller than that, hidden as if not recorded;
	 * one of unknown size (a trace without sizes) is shown. */
	if (r->min_size && size && size < r->min_size)
		c |= TRIGGER_HIDE;
	if (r->locs) {
		const char *file = NULL;
		unsigned line;
		if (!site_srcline(r, site, &file, &line))
			file = NULL;
		if (loc_hidden(r->locs, r->locs_show, file))
			c |= TRIGGER_HIDE;
	}
	if (site < r->t->site_cap) {
		r->site_class[site] = c | CL_MATCHED;
		r->site_depth[site] = depth;
		r->site_time[site] = time_ns;
	}
	return c;
}

static struct tree_frame *tree_frame(struct replay *r, struct tree_thread *th, uint32_t depth)
{
	if (depth >= th->cap) {
		size_t cap = th->cap ? th->cap : 16;
		while (cap <= depth)
			cap *= 2;
		struct tree_frame *f = realloc(th->f, cap * sizeof(*f));
		if (!f) {
			r->line.oom = 1;
			return NULL;
		}
		memset(f + th->cap, 0, (cap - th->cap) * sizeof(*f));
		th->f = f;
		th->cap = cap;
	}
	return &th->f[depth];
}

/* Write the "name() {" lines of the shown calls around depth that are
 * not written yet, outermost first: a line inside them is about to be.
 * A written frame's shown callers are written, so the walk stops at the
 * first written one. */
/* -T FUNC@read=: a call's readings as comments a level inside it, at
 * its entry (data: the entry's block) or, given the entry's block, their
 * differences at its exit. */
static void put_note(struct replay *r, uint32_t tid, uint32_t depth, const char *text)
{
	line(r, "", tid, depth);
	put(r, "/* ");
	put(r, text);
	put(r, " */");
	end_line(r);
}

/* The -W cpu note of a data block of the thread of the event being
 * shown (r->at_thread) into text, 1 when it has one that says another
 * CPU than the thread's last one shown (the flight recorder notes the
 * CPU again in each chunk); with take, that one is the last shown now.
 * A block without a note says pending (a CPU plus one, or 0), the CPU
 * the thread was last noted on when the line's event happened: another
 * than the last shown when it moved in a call the view hides (-N, -H,
 * -D...), and this line is the first shown to run there.  In the order
 * lines are written, which is each thread's event order in the tree view
 * too. */
static int watch_note_take(struct replay *r, const uint8_t *data, size_t n, char *text, size_t len, int take,
			   uint32_t pending)
{
	uint64_t on;
	uint32_t cpu = view_watch_cpu(data, n, &on) ? (uint32_t)on + 1 : pending; /* 0: none */
	int have = r->watch_last && r->at_thread < r->t->thread_cnt;

	if (!cpu || (have && r->watch_last[r->at_thread] == cpu))
		return 0;
	snprintf(text, len, "watch:cpu (cpu=%u)", cpu - 1);
	if (have && take)
		r->watch_last[r->at_thread] = cpu;
	return 1;
}

/* The CPU the thread of the event being shown was last noted on, plus
 * one (0: none yet). */
static uint32_t watch_now(const struct replay *r)
{
	return r->watch_seen && r->at_thread < r->t->thread_cnt ? r->watch_seen[r->at_thread] : 0;
}

static int watch_note(struct replay *r, const uint8_t *data, size_t n, char *text, size_t len)
{
	return watch_note_take(r, data, n, text, len, 1, watch_now(r));
}

/* The readings and -W note of a block (the note's pending CPU as
 * watch_note_take takes it). */
static void put_reads(struct replay *r, uint32_t tid, uint32_t depth, const uint8_t *data, size_t n,
		      const uint8_t *entry, size_t entry_n, uint32_t pending)
{
	char text[256];

	for (int k = 0; k < 3; k++) {
		/* k 2: -W cpu's note, of this event alone (never a difference). */
		if (k == 2 ? !watch_note_take(r, data, n, text, sizeof(text), 1, pending)
			   : !view_format_reads(text, sizeof(text), data, n, entry, entry_n, k))
			continue;
		put_note(r, tid, depth, text);
	}
}

static void tree_open_callers(struct replay *r, struct tree_thread *th, uint32_t depth, uint32_t tid)
{
	uint64_t at_ns = r->at_ns;
	uint32_t at_site = r->at_site, d = depth;
	while (d > 0) {
		struct tree_frame *f = &th->f[d - 1];
		if ((f->flags & FR_SHOWN) && (f->flags & FR_PRINTED))
			break;
		d--;
	}
	for (; d < depth; d++) {
		struct tree_frame *f = &th->f[d];
		if (!(f->flags & FR_SHOWN) || (f->flags & FR_PRINTED))
			continue;
		r->at_ns = f->ns;
		r->at_site = f->site;
		line(r, "", tid, f->sdepth);
		put(r, shown_name(r, f->site));
		put_values(r, f->site, f->data, f->data_len);
		put(r, " {");
		put_srcline(r, f->site);
		end_line(r);
		put_reads(r, tid, f->sdepth + 1, f->data, f->data_len, NULL, 0, f->watch_cpu);
		f->flags |= FR_PRINTED;
	}
	r->at_ns = at_ns;
	r->at_site = at_site;
}

/* The stack of context id in thread's stacks, made the running one. */
static struct tree_thread *tree_switch(struct replay *r, struct tree_stacks *ts, uint32_t id)
{
	for (size_t i = 0; i < ts->cnt; i++)
		if (ts->v[i].ctx_id == id) {
			ts->cur = i;
			return &ts->v[i];
		}
	/* The trace names a context when the thread switches to it; the
	 * stack it left first (its own) is named by the first switch back to
	 * a context not seen yet. */
	for (size_t i = 0; id != CTX_UNNAMED && i < ts->cnt; i++)
		if (ts->v[i].ctx_id == CTX_UNNAMED && i != ts->cur) {
			ts->v[i].ctx_id = id;
			ts->cur = i;
			return &ts->v[i];
		}
	struct tree_thread *v = realloc(ts->v, (ts->cnt + 1) * sizeof(*v));
	if (!v) {
		r->line.oom = 1;
		return NULL;
	}
	ts->v = v;
	v[ts->cnt] = (struct tree_thread){ .ctx_id = id, .off = r->disabled || r->range_start,
					   .was_off = r->disabled || r->range_start, .threshold = r->threshold,
					   .before_range = !r->disabled && r->range_start };
	ts->cur = ts->cnt++;
	return &v[ts->cur];
}

/* "backtrace" lines for a call at depth: its callers, outermost first,
 * as far as their entries were seen. */
static void tree_backtrace(struct replay *r, struct tree_thread *th, uint32_t depth, uint32_t tid)
{
	char idx[32];

	for (uint32_t d = 0; d < depth && d < th->cap; d++) {
		if (!(th->f[d].flags & FR_ENTERED))
			continue;
		line(r, "backtrace", tid, 0);
		snprintf(idx, sizeof(idx), "/* [%2u] ", d);
		put(r, idx);
		put(r, shown_name(r, th->f[d].site));
		put(r, " */");
		end_line(r);
	}
}

/* A call's line with no calls shown inside it: "name(values) = ret;", or
 * its opening and closing lines with --no-merge. */
/* An event the reader shows as a call (TRACE_SITE_EVENT: linux:schedule)
 * is one line, as uftrace writes it: its duration, then its name as a
 * comment. */
static int event_site(const struct replay *r, uint32_t site)
{
	return site < r->t->site_cap && (r->t->sites[site].flags & TRACE_SITE_EVENT);
}

static void put_event_call(struct replay *r, const struct trace_event *ev, const char *name, uint32_t depth,
			   uint64_t ns)
{
	char dur[32];
	cli_format_duration(dur, sizeof(dur), ns);
	line(r, dur, ev->tid, depth);
	put(r, "/* ");
	put(r, name);
	put(r, " */");
}

static void tree_leaf(struct replay *r, const struct trace_event *ev, const struct tree_frame *f, const char *name,
		      uint64_t ns)
{
	char dur[32];

	if (event_site(r, f->site)) {
		put_event_call(r, ev, name, f->sdepth, ns);
		end_line(r);
		return;
	}
	r->at_ns = f->ns;
	if (r->no_merge) {
		line(r, "", ev->tid, f->sdepth);
		put(r, name);
		put_values(r, f->site, f->data, f->data_len);
		put(r, " {");
		put_srcline(r, f->site);
		end_line(r);
		put_reads(r, ev->tid, f->sdepth + 1, f->data, f->data_len, NULL, 0, f->watch_cpu);
		r->at_ns = ev->ns;
		put_reads(r, ev->tid, f->sdepth + 1, ev->data, ev->data_len, f->data, f->data_len, watch_now(r));
		put_closed(r, ev, name, f->sdepth, ns);
		end_line(r);
		return;
	}
	cli_format_duration(dur, sizeof(dur), ns);
	line(r, dur, ev->tid, f->sdepth);
	put(r, name);
	put_values(r, f->site, f->data, f->data_len);
	put_ret(r, ev);
	put(r, ";");
	put_srcline(r, f->site);
	end_line(r);
}

/* A finish trigger: the call's line is written, showing ends for every
 * thread, and the calls open now are listed, innermost first, as
 * uftrace lists the functions left when its recording stopped. */
static void tree_finish(struct replay *r, struct tree_thread *cur, const struct trace_event *ev)
{
	char idx[32];

	tree_open_callers(r, cur, ev->depth + 1, ev->tid);
	r->finished = 1;
	fputs(cli_uftrace_style ? uftrace_remaining_title
				: "\nneedle stopped showing at a finish trigger, with these calls open\n"
				  "===================================================================\n",
	      stdout);
	for (size_t i = 0; i < r->t->thread_cnt; i++) {
		struct tree_stacks *ts = &r->tt[i];
		for (size_t k = 0; k < ts->cnt; k++) {
			struct tree_thread *th = &ts->v[k];
			uint32_t open = 0;
			while (open < th->cap && (th->f[open].flags & FR_ENTERED))
				open++;
			if (!open)
				continue;
			printf("task: %u\n", r->t->threads[i].tid);
			for (uint32_t d = open; d-- > 0;) {
				snprintf(idx, sizeof(idx), "[%u] ", d);
				fputs(idx, stdout);
				fputs(shown_name(r, th->f[d].site), stdout);
				fputc('\n', stdout);
			}
		}
	}
}

/* A rename --no-event hides (view.h): in the graph it still opens the
 * calls it is in, as uftrace's hidden event does (a call with one inside
 * is no leaf), with no line of its own. */
static int rename_hidden(const struct replay *r, const struct trace_event *ev)
{
	return ev->kind == TEV_KERNEL && ev->kev.kind == KEV_COMM && view_sched_hides_comm(&r->sched);
}

static int tree_event(const struct trace_event *ev, struct replay *r)
{
	struct tree_stacks *ts = &r->tt[ev->thread];
	struct tree_thread *th = ts->cnt ? &ts->v[ts->cur] : tree_switch(r, ts, CTX_UNNAMED);
	char dur[32];

	if (!th)
		return 0;
	struct trace_event past;
	if (ev->ns > r->range_end) {
		/* Past -r's end: the calls the range leaves running stay open,
		 * as at the trace's end (no closing line; listed after the
		 * graph, as uftrace lists its remaining functions), and
		 * nothing else shows. */
		if (ev->kind != TEV_EXIT || th->before_range || th->off || ev->depth >= th->cap ||
		    !(th->f[ev->depth].flags & FR_ENTERED))
			return 0;
		past = *ev;
		past.flags |= TEV_OPEN;
		ev = &past;
	}
	if (th->before_range) {
		if (ev->ns < r->range_start)
			return 0;
		/* The range begins: shown from here, at the depth the calls
		 * have (those open close without a duration, as after a
		 * trace_on). */
		th->before_range = th->off = 0;
		th->bias = 0;
		th->sdepth = ev->depth;
	}

	switch (ev->kind) {
	case TEV_ENTRY: {
		unsigned c = site_class(r, ev->site);
		if (th->off) {
			if (!(c & TRIGGER_TRACE_ON))
				return 0;
			th->off = 0;
			th->sdepth = ev->depth > th->bias ? ev->depth - th->bias : 0;
		} else if ((c & TRIGGER_TRACE_OFF) && !th->out) {
			/* (Inside a -N call it is not shown, so it does not
			 * fire: uftrace's order of the checks.) */
			/* The calls it is in were entered while showing: their
			 * lines are written now, their ends may never be. */
			if (!th->threshold && !r->have_callers && !th->out && (!r->have_sel || th->in))
				tree_open_callers(r, th, ev->depth, ev->tid);
			th->off = th->was_off = 1;
			th->bias = ev->depth > th->sdepth ? ev->depth - th->sdepth : 0;
			return 0;
		}
		if (ev->flags & TEV_FLAT) {
			/* The function tracer's entries: no exits, no subtrees. */
			uint32_t limit = th->limit ? th->limit : r->max_depth;
			if (th->out || (c & (TRIGGER_NOTRACE | TRIGGER_HIDE)) ||
			    (r->have_sel && !(c & TRIGGER_FILTER) && !th->in) || r->have_callers || th->threshold ||
			    (limit && th->sdepth >= limit))
				return 0;
			snprintf(dur, sizeof(dur), "@%.6f", ev->ns / 1e9);
			tree_open_callers(r, th, ev->depth, ev->tid);
			line(r, dur, ev->tid, th->sdepth);
			put(r, shown_name(r, ev->site));
			put_args(r, ev);
			put(r, ";");
			end_line(r);
			return 0;
		}
		struct tree_frame *f = tree_frame(r, th, ev->depth);
		if (!f)
			return 0;
		f->site = ev->site;
		f->ns = ev->ns;
		f->flags = FR_ENTERED;
		f->watch_cpu = watch_now(r);
		f->saved_limit = th->limit;
		f->sdepth = th->sdepth;
		if (th->out)
			return 0;
		if ((c & TRIGGER_TIME) && ev->site < r->t->site_cap) {
			f->flags |= FR_TIME;
			f->saved_threshold = th->threshold;
			th->threshold = r->site_time[ev->site];
		}
		if (c & TRIGGER_NOTRACE) {
			f->flags |= FR_OUT;
			th->out++;
			return 0;
		}
		uint32_t d = ev->site < r->t->site_cap ? r->site_depth[ev->site] : 0;
		if (c & TRIGGER_FILTER) {
			f->flags |= FR_IN | FR_LIMIT;
			th->in++;
			if (!d)
				d = r->max_depth;
			th->limit = d ? th->sdepth + d : 0;
		} else if ((c & TRIGGER_DEPTH) && d) {
			uint32_t lim = th->sdepth + d;
			f->flags |= FR_LIMIT;
			if (!th->limit || lim < th->limit)
				th->limit = lim;
		}
		uint32_t limit = th->limit ? th->limit : r->max_depth;
		if ((r->have_sel && !th->in) || (limit && th->sdepth >= limit))
			return 0;
		if (c & TRIGGER_HIDE) {
			f->flags |= FR_HIDDEN;
			return 0;
		}
		f->flags |= FR_SHOWN | (c & TRIGGER_TRACE ? FR_FORCE : 0);
		if (c & CL_CALLER) {
			/* Shown with its callers, without its own calls. */
			f->flags |= FR_CALLER | FR_OUT;
			th->out++;
		}
		if (ev->data_len && copy_values(&f->data, &f->cap, ev)) {
			r->line.oom = 1;
			return 0;
		}
		f->data_len = ev->data_len;
		/* A call a forked child's thread began inside: its line is its
		 * parent's, not the child's (its exit closes it). */
		if (ev->flags & TEV_INHERITED) {
			f->flags |= FR_PRINTED;
			th->sdepth++;
			return 0;
		}
		/* Without a time or caller filter every shown call is written:
		 * its callers now, itself when a call inside it is, or at its
		 * exit. */
		if (!th->threshold && !r->have_callers)
			tree_open_callers(r, th, ev->depth, ev->tid);
		if (c & TRIGGER_BACKTRACE)
			tree_backtrace(r, th, ev->depth, ev->tid);
		th->sdepth++;
		if (c & TRIGGER_FINISH)
			tree_finish(r, th, ev);
		return 0;
	}
	case TEV_EXIT: {
		if (th->off) {
			/* A call whose line is written and whose end comes
			 * while showing is stopped by record's trace_off: its
			 * end is never shown, so it is listed after the graph
			 * with the calls the recording ended in, as uftrace
			 * lists the calls it stopped recording in. */
			struct tree_frame *f = ev->depth < th->cap ? &th->f[ev->depth] : NULL;
			if (r->recorded_trace_off && f && f->site == ev->site && (f->flags & FR_PRINTED) &&
			    (f->flags & FR_ENTERED) && !(ev->flags & TEV_ORPHAN)) {
				add_open_call(r, ev->thread, f->sdepth, ev->site);
				f->flags = 0; /* listed once: a call entered while off reuses the depth */
			}
			return 0;
		}
		if (ev->flags & TEV_ORPHAN) {
			if (r->have_sel || r->have_callers || th->threshold || th->out)
				return 0;
			put_return_before(r, ev, shown_name(r, ev->site), th->sdepth);
			end_line(r);
			return 0;
		}
		if (ev->depth >= th->cap || !(th->f[ev->depth].flags & FR_ENTERED)) {
			/* Entered while showing was stopped (trace_off): closed
			 * as uftrace closes it, with no duration. */
			if (!th->was_off || th->out || (r->have_sel && !th->in) || th->threshold || r->have_callers)
				return 0;
			uint32_t sd = ev->depth > th->bias ? ev->depth - th->bias : 0;
			tree_open_callers(r, th, ev->depth < th->cap ? ev->depth : (uint32_t)th->cap, ev->tid);
			line(r, "", ev->tid, sd);
			put(r, "}");
			if (!r->no_comment) {
				put(r, " /* ");
				put(r, shown_name(r, ev->site));
				put(r, " */");
			}
			end_line(r);
			th->sdepth = sd;
			return 0;
		}
		struct tree_frame *f = &th->f[ev->depth];
		uint16_t fl = f->flags;
		/* The threshold of the call: its own time= or its caller's. */
		uint64_t threshold = th->threshold;
		if (fl & FR_TIME)
			th->threshold = f->saved_threshold;
		if ((fl & FR_OUT) && th->out)
			th->out--;
		if ((fl & FR_IN) && th->in)
			th->in--;
		if (fl & FR_LIMIT)
			th->limit = f->saved_limit;
		f->flags = 0;
		if (!(fl & FR_SHOWN))
			return 0;
		th->sdepth = f->sdepth;
		const char *name = shown_name(r, ev->site);
		int done = !(ev->flags & (TEV_OPEN | TEV_EXIT_LOST));
		uint64_t ns = ev->ns - ev->entry_ns;
		if (!(fl & FR_PRINTED)) {
			/* Nothing inside it was written: one line, if it is
			 * shown at all. */
			/* A call still running (or whose exit was lost) may
			 * have taken TIME or more: shown, as uftrace shows it;
			 * one -r's end left open took what its exit says. */
			if (threshold && !(fl & FR_FORCE) && (done || ev == &past) && ns < threshold)
				return 0;
			if (r->have_callers && !(fl & FR_CALLER))
				return 0;
			tree_open_callers(r, th, ev->depth, ev->tid);
			/* A call with readings (-T read=), or a -W note not
			 * shown before, has them inside. */
			uint64_t rv[VIEW_READINGS];
			char note[64];
			int reads = view_readings(f->data, f->data_len, rv) || view_readings(ev->data, ev->data_len, rv) ||
				    watch_note_take(r, f->data, f->data_len, note, sizeof(note), 0, f->watch_cpu) ||
				    watch_note_take(r, ev->data, ev->data_len, note, sizeof(note), 0, watch_now(r));
			if (done && !(ev->flags & (marked_unwound(r) | TEV_UNMATCHED)) && !reads) {
				tree_leaf(r, ev, f, name, ns);
				return 0;
			}
			r->at_ns = f->ns;
			line(r, "", ev->tid, f->sdepth);
			put(r, name);
			put_values(r, f->site, f->data, f->data_len);
			put(r, " {");
			put_srcline(r, f->site);
			end_line(r);
			put_reads(r, ev->tid, f->sdepth + 1, f->data, f->data_len, NULL, 0, f->watch_cpu);
		}
		r->at_ns = ev->ns;
		r->at_site = ev->site;
		int unfinished = put_unfinished(r, ev, name, f->sdepth);
		if (!unfinished && (ev->flags & TEV_BEFORE)) {
			put_return_before(r, ev, name, f->sdepth);
		} else if (!unfinished) {
			put_reads(r, ev->tid, f->sdepth + 1, ev->data, ev->data_len, f->data, f->data_len, watch_now(r));
			put_closed(r, ev, name, f->sdepth, ns);
		}
		if (unfinished != 2)
			end_line(r);
		return 0;
	}
	case TEV_SWITCH:
	case TEV_LOST:
	case TEV_KERNEL:
		/* Under -t, a kernel event shows when it took TIME or more
		 * (a system call, time off the CPU), and a rename or a USDT
		 * probe always: either opens the calls it is in. */
		if (th->off || th->out || (r->have_sel && !th->in) || r->have_callers ||
		    (ev->kind == TEV_KERNEL && r->no_kernel) ||
		    (th->threshold && (ev->kind != TEV_KERNEL ||
				       (ev->kev.kind != KEV_COMM && ev->kev.kind != KEV_PROBE &&
					ev->kev_ns < th->threshold))))
			return 0;
		tree_open_callers(r, th, ev->depth, ev->tid);
		if (rename_hidden(r, ev))
			return 0;
		line(r, "", ev->tid, th->sdepth);
		if (ev->kind == TEV_KERNEL) {
			char k[256];
			view_format_kernel(k, sizeof(k), ev);
			put(r, k);
		} else if (ev->kind == TEV_SWITCH) {
			snprintf(dur, sizeof(dur), "%u", ev->site);
			put(r, "/* switch to coroutine context ");
			put(r, dur);
			put(r, " */");
		} else {
			snprintf(dur, sizeof(dur), "%llu", (unsigned long long)ev->lost);
			put(r, "/* LOST ");
			put(r, dur);
			put(r, " events */");
		}
		end_line(r);
		return 0;
	default:
		return 0;
	}
}

/* After the event: a switch makes its context's stack the running one. */
static void tree_after(const struct trace_event *ev, struct replay *r)
{
	if (ev->kind == TEV_SWITCH)
		tree_switch(r, &r->tt[ev->thread], ev->site);
}

static int print_event(const struct trace_event *ev, struct replay *r, struct trace_iter *it)
{
	char dur[32];
	/* A kernel event names no function. */
	const char *name = ev->kind == TEV_KERNEL ? "" : shown_name(r, ev->site);

	r->at_ns = ev->ns;
	r->at_site = ev->site;
	r->at_thread = ev->thread;
	uint64_t cpu;
	if (ev->data_len && ev->thread < r->t->thread_cnt && view_watch_cpu(ev->data, ev->data_len, &cpu))
		r->watch_seen[ev->thread] = (uint32_t)cpu + 1;
	/* An exec's name has no line: uftrace, starting in the new program,
	 * never sees it (-f task shows it). */
	if (ev->kind == TEV_KERNEL && ev->kev.kind == KEV_COMM && (ev->kev.flags & KEV_COMM_EXEC))
		return 0;
	if (!r->tree && rename_hidden(r, ev))
		return 0;
	if (r->ret_filter)
		return print_at_exit(r, ev);
	if (r->finished)
		return 0;
	if (r->tree) {
		tree_event(ev, r);
		tree_after(ev, r);
		return 0;
	}
	if (ev->kind == TEV_EXIT && r->skip[ev->thread]) {
		r->skip[ev->thread] = 0;
		return 0;
	}
	if (r->threshold)
		return print_at_exit(r, ev);
	if (r->max_depth && ev->depth >= r->max_depth && ev->kind != TEV_LOST)
		return 0;
	if ((ev->kind == TEV_ENTRY || ev->kind == TEV_EXIT) && event_site(r, ev->site)) {
		/* One line at its end (an exit closed by the trace's end is
		 * said as any other). */
		if (ev->kind == TEV_EXIT && !(ev->flags & (TEV_OPEN | TEV_ORPHAN | TEV_BEFORE))) {
			put_event_call(r, ev, name, ev->depth, ev->ns - ev->entry_ns);
			end_line(r);
		}
		return 0;
	}
	switch (ev->kind) {
	case TEV_KERNEL: {
		if (r->no_kernel)
			return 0;
		char k[256];
		view_format_kernel(k, sizeof(k), ev);
		line(r, "", ev->tid, ev->depth);
		put(r, k);
		break;
	}
	case TEV_SWITCH:
		line(r, "", ev->tid, ev->depth);
		snprintf(dur, sizeof(dur), "%u", ev->site);
		put(r, "/* switch to coroutine context ");
		put(r, dur);
		put(r, " */");
		break;
	case TEV_LOST:
		line(r, "", ev->tid, ev->depth);
		snprintf(dur, sizeof(dur), "%llu", (unsigned long long)ev->lost);
		put(r, "/* LOST ");
		put(r, dur);
		put(r, " events */");
		break;
	case TEV_ENTRY:
		if (ev->flags & TEV_FLAT) {
			/* The function tracer: when, not how long. */
			snprintf(dur, sizeof(dur), "@%.6f", ev->ns / 1e9);
			line(r, dur, ev->tid, ev->depth);
			put(r, name);
			put_args(r, ev);
			put(r, ";");
			char note[64];
			if (watch_note(r, ev->data, ev->data_len, note, sizeof(note))) {
				end_line(r);
				put_note(r, ev->tid, ev->depth + 1, note);
				return 0;
			}
			break;
		}
		struct trace_event next;
		char watch[64];
		if (ev->flags & TEV_INHERITED)
			return 0; /* its line is its parent's: the exit closes it */
		/* -W cpu: a note at the entry is a line inside the call. */
		int watched = watch_note(r, ev->data, ev->data_len, watch, sizeof(watch));
		/* A leaf when its exit is the next line: another thread's
		 * event between them splits it into an opening and an end, as
		 * uftrace shows a call that other threads ran during. */
		if (!watched && trace_iter_peek_same_thread(it, &next) > 0 && next.kind == TEV_EXIT &&
		    next.site == ev->site && next.depth == ev->depth &&
		    !(next.flags & (TEV_OPEN | TEV_ORPHAN | marked_unwound(r) | TEV_EXIT_LOST)) &&
		    !watch_note_take(r, next.data, next.data_len, watch, sizeof(watch), 0, watch_now(r)) &&
		    trace_iter_next_is_same_thread(it)) {
			cli_format_duration(dur, sizeof(dur), next.ns - next.entry_ns);
			line(r, dur, ev->tid, ev->depth);
			put(r, name);
			put_args(r, ev);
			put_ret(r, &next);
			put(r, ";");
			put_srcline(r, ev->site);
			r->skip[ev->thread] = 1;
		} else {
			line(r, "", ev->tid, ev->depth);
			put(r, name);
			put_args(r, ev);
			put(r, " {");
			put_srcline(r, ev->site);
			if (watched) {
				end_line(r);
				put_note(r, ev->tid, ev->depth + 1, watch);
				return 0;
			}
		}
		break;
	case TEV_EXIT: {
		char watch[64];
		int unfinished = put_unfinished(r, ev, name, ev->depth);
		if (unfinished == 2)
			return 0; /* listed after the graph */
		if (!unfinished && watch_note(r, ev->data, ev->data_len, watch, sizeof(watch)))
			put_note(r, ev->tid, ev->depth + 1, watch);
		if (unfinished) {
			/* said */
		} else if (ev->flags & (TEV_ORPHAN | TEV_BEFORE)) {
			put_return_before(r, ev, name, ev->depth);
		} else {
			put_closed(r, ev, name, ev->depth, ev->ns - ev->entry_ns);
		}
		break;
	}
	default:
		return 0;
	}
	end_line(r);
	return 0;
}

/* replay's options into *r, *input and *tid: 0, or the exit status of a
 * refusal (or of --help, -1 for 0). */
/* -f FIELD,...: uftrace's output fields; "+FIELD,..." adds to the
 * default duration,tid; "none", the function alone. */
static int parse_fields(struct replay *r, const char *arg)
{
	char list[256];
	int add = arg[0] == '+';

	r->custom_fields = 1;
	r->field_cnt = 0;
	if (add) {
		r->fields[r->field_cnt++] = F_DURATION;
		r->fields[r->field_cnt++] = F_TID;
		arg++;
	}
	if (!strcmp(arg, "none"))
		return 0;
	snprintf(list, sizeof(list), "%s", arg);
	for (char *save = NULL, *f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		size_t k;
		for (k = 0; k < sizeof(fields_info) / sizeof(fields_info[0]); k++)
			if (!strcmp(f, fields_info[k].name))
				break;
		if (k == sizeof(fields_info) / sizeof(fields_info[0]) || r->field_cnt == FIELDS_MAX) {
			cli_error("-f '%s': '%s' is not a field (duration, tid, time, delta, elapsed, addr, task, "
				  "module, or none; +FIELD adds to duration,tid)", arg, f);
			return -1;
		}
		r->fields[r->field_cnt++] = (enum field)k;
	}
	return 0;
}

/* -f module: the callers' sites by thread. */
static int want_line_sites(struct replay *r)
{
	for (int i = 0; i < r->field_cnt; i++)
		if (r->fields[i] == F_MODULE)
			return !(r->line_sites = calloc(r->t->thread_cnt ? r->t->thread_cnt : 1, sizeof(*r->line_sites)));
	return 0;
}

/* The header line of -f's columns (none with -f none). */
static void fields_header(const struct replay *r)
{
	if (!r->field_cnt)
		return;
	fputc('#', stdout);
	for (int i = 0; i < r->field_cnt; i++)
		printf("%s%s", i ? " " : "", fields_info[r->fields[i]].title);
	fputs(r->srcline ? "   FUNCTION [SOURCE]\n" : "   FUNCTION\n", stdout);
}

static int replay_parse(int argc, char **argv, struct replay *r, const char **input, uint32_t *tid)
{
	enum { OPT_TID = 256, OPT_NO_KERNEL, OPT_NO_COMMENT, OPT_NO_MERGE, OPT_DISABLE, OPT_RET_EQ, OPT_RET_NE, OPT_ARG_NAMES,
	       OPT_DEMANGLE, OPT_NO_ARGS, OPT_NO_LIBCALL, OPT_COLUMN_VIEW, OPT_COLUMN_OFFSET, OPT_SRCLINE, OPT_WITH_SYMS, OPT_LIBNAME,
	       OPT_MARK_UNWOUND };
	r->range_end = UINT64_MAX;
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },   { "tid", required_argument, NULL, OPT_TID },
		{ "depth", required_argument, NULL, 'D' },   { "time", required_argument, NULL, 't' },
		{ "time-filter", required_argument, NULL, 't' },
		{ "ret-eq", required_argument, NULL, OPT_RET_EQ }, { "ret-ne", required_argument, NULL, OPT_RET_NE },
		{ "filter", required_argument, NULL, 'F' },  { "notrace", required_argument, NULL, 'N' },
		{ "caller-filter", required_argument, NULL, 'C' }, { "no-comment", no_argument, NULL, OPT_NO_COMMENT },
		{ "mark-unwound", no_argument, NULL, OPT_MARK_UNWOUND },
		{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
		{ "trigger", required_argument, NULL, 'T' }, { "hide", required_argument, NULL, 'H' },
		{ "no-merge", no_argument, NULL, OPT_NO_MERGE }, { "disable", no_argument, NULL, OPT_DISABLE },
		{ "arg-names", no_argument, NULL, OPT_ARG_NAMES },
		{ "demangle", required_argument, NULL, OPT_DEMANGLE }, { "no-args", no_argument, NULL, OPT_NO_ARGS },
		{ "data", required_argument, NULL, 'd' },    { "output-fields", required_argument, NULL, 'f' },
		{ "no-libcall", no_argument, NULL, OPT_NO_LIBCALL }, { "time-range", required_argument, NULL, 'r' },
		{ "column-view", no_argument, NULL, OPT_COLUMN_VIEW },
		{ "column-offset", required_argument, NULL, OPT_COLUMN_OFFSET },
		{ "srcline", no_argument, NULL, OPT_SRCLINE }, { "with-syms", required_argument, NULL, OPT_WITH_SYMS }, { "loc-filter", required_argument, NULL, 'L' },
		{ "libname", no_argument, NULL, OPT_LIBNAME },
		{ "size-filter", required_argument, NULL, 'Z' },
		{ "help", no_argument, NULL, 'h' },          VIEW_SCHED_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:d:D:t:F:N:C:T:H:L:f:r:Z:hE:", longopts, NULL)) != -1) {
		switch (c) {
		VIEW_SCHED_CASES:
			if (view_sched_option(&r->sched, c, optarg))
				return 2;
			break;
		case 'Z': {
			unsigned long long n = strtoull(optarg, &end, 10);
			if (*end || end == optarg || !n || optarg[0] == '-') {
				cli_error("-Z needs a positive number of bytes, not '%s'", optarg);
				return 2;
			}
			r->min_size = n;
			r->tree = 1;
			break;
		}
		case 'f':
			if (parse_fields(r, optarg))
				return 2;
			break;
		case OPT_NO_LIBCALL:
			r->no_libcall = 1;
			r->tree = 1;
			break;
		case OPT_COLUMN_VIEW:
			r->column_view = 1;
			break;
		case OPT_SRCLINE:
			r->srcline = 1;
			break;
		case OPT_WITH_SYMS:
			r->with_syms = optarg;
			break;
		case OPT_LIBNAME:
			r->libname = 1;
			break;
		case 'L':
			if (loc_add(&r->locs, optarg))
				return 2;
			if (!r->locs->hide)
				r->locs_show = 1;
			r->tree = 1;
			break;
		case 'r':
			if (view_parse_range(optarg, &r->range_start, &r->range_end))
				return 2;
			r->tree = 1;
			break;
		case OPT_COLUMN_OFFSET: {
			unsigned long n = strtoul(optarg, &end, 10);
			if (*end || end == optarg || n > 100) {
				cli_error("--column-offset needs a number of levels from 0 to 100, not '%s'", optarg);
				return 2;
			}
			r->column_offset = (uint32_t)n;
			break;
		}
		case 'i':
		case 'd': /* uftrace's -d DIR: here the trace file */
			*input = optarg;
			break;
		case OPT_TID:
			if (view_parse_tid(optarg, tid))
				return 2;
			break;
		case 'D': {
			/* strtoul takes "-1" for its largest value, silently */
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || !v || v > UINT32_MAX || errno) {
				cli_error("--depth needs a positive number, not '%s'", optarg);
				return 2;
			}
			r->max_depth = (uint32_t)v;
			break;
		}
		case 't':
			if (cli_parse_duration(optarg, &r->threshold)) {
				cli_error("--time needs a duration such as 10us or 2ms, not '%s'", optarg);
				return 2;
			}
			break;
		case 'F':
		case 'N':
		case 'C':
		case 'H':
		case 'T':
			if (pat_add(&r->pats, optarg,
				    c == 'F'   ? TRIGGER_FILTER
				    : c == 'N' ? TRIGGER_NOTRACE
				    : c == 'H' ? TRIGGER_HIDE
				    : c == 'C' ? CL_CALLER
					       : 0))
				return 2;
			if (r->pats->actions & TRIGGER_FILTER)
				r->have_sel = 1;
			if (c == 'C')
				r->have_callers = 1;
			r->tree = 1;
			break;
		case OPT_NO_COMMENT:
			r->no_comment = 1;
			break;
		case OPT_MARK_UNWOUND:
			r->mark_unwound = 1;
			break;
		case OPT_NO_KERNEL:
			r->no_kernel = 1;
			break;
		case OPT_ARG_NAMES:
			r->values_style = VIEW_VALUES_EXACT;
			break;
		case OPT_NO_ARGS:
			r->no_args = 1;
			break;
		case OPT_DEMANGLE:
			if (!strcmp(optarg, "simple"))
				r->demangle = TRACE_DEMANGLE_SIMPLE + 1;
			else if (!strcmp(optarg, "full"))
				r->demangle = TRACE_DEMANGLE_FULL + 1;
			else if (!strcmp(optarg, "no"))
				r->demangle = TRACE_DEMANGLE_NO + 1;
			else {
				cli_error("--demangle needs simple, full or no, not '%s'", optarg);
				return 2;
			}
			break;
		case OPT_NO_MERGE:
			r->no_merge = 1;
			r->tree = 1;
			break;
		case OPT_DISABLE:
			r->disabled = 1;
			r->tree = 1;
			break;
		case OPT_RET_EQ:
		case OPT_RET_NE:
			if (r->ret_filter) {
				cli_error("--ret-eq and --ret-ne compare with one value: give one of them, once");
				return 1;
			}
			if (view_parse_int(optarg, &r->ret_value)) {
				cli_error("--ret-%s needs an integer (decimal or 0x hex, may be negative), not '%s'",
					  c == OPT_RET_EQ ? "eq" : "ne", optarg);
				return 1;
			}
			r->ret_filter = c == OPT_RET_EQ ? RET_EQ : RET_NE;
			break;
		case 'h':
			fputs(replay_usage, stdout);
			return -1;
		default:
			cli_option_error(argv[0], argc, argv, "i:d:D:t:F:N:C:T:H:L:f:r:Z:hE:", longopts);
			return 2;
		}
	}
	/* -D and -t take the tree view too: a call whose calls are all
	 * hidden is one line, and the callers of a slow call are kept. */
	if (r->max_depth || r->threshold)
		r->tree = 1;
	return 0;
}

/* The options the trace keeps for the views (record's -t, -T, ...,
 * uftrace's default.opts) before the command line's, in a new argv:
 * the command line's come later, so they add to them or override them. */
static char **with_view_defaults(const struct trace *t, int argc, char **argv, int *argc_out)
{
	size_t words = 0;
	for (size_t i = 0; i < t->view_opts_len; i++)
		words += !t->view_opts[i];
	char **v = calloc((size_t)argc + words + 1, sizeof(*v));
	if (!v)
		return NULL;
	int n = 0;
	v[n++] = argv[0];
	for (size_t i = 0; i < t->view_opts_len; i += strlen(t->view_opts + i) + 1)
		v[n++] = t->view_opts + i;
	for (int i = 1; i < argc; i++)
		v[n++] = argv[i];
	*argc_out = n;
	return v;
}

int cmd_replay(int argc, char **argv)
{
	const char *input = NULL;
	struct replay r = { .column_offset = 8 };
	uint32_t tid = 0;
	char **all_argv = NULL;

	int st = replay_parse(argc, argv, &r, &input, &tid);
	if (st)
		return st < 0 ? 0 : st;
	/* uftrace replay takes the program's name after the options, and
	 * ignores it: one that names the recorded program is accepted. */
	const char *prog_arg = NULL;
	if (optind == argc - 1)
		prog_arg = argv[--argc];
	int status;
	if (!(r.t = view_start("replay", argc, argv, optind, input, tid, &r.sched, &status)))
		return status;
	if (r.t->view_opts_len) {
		struct trace *t = r.t;
		int all_argc;
		pat_free(r.pats);
		loc_free(r.locs);
		r = (struct replay){ .column_offset = 8 };
		tid = 0;
		if (!(all_argv = with_view_defaults(t, argc + (prog_arg != NULL), argv, &all_argc))) {
			cli_error("out of memory");
			view_close(t);
			return 1;
		}
		if (prog_arg)
			all_argc--;
		st = replay_parse(all_argc, all_argv, &r, &input, &tid);
		r.t = t;
		/* record's -T (words "-T" SPEC, or "-TSPEC"): a trace_off
		 * among their actions, however spelled */
		const char *prev = "";
		for (size_t i = 0; i < t->view_opts_len; i += strlen(t->view_opts + i) + 1) {
			const char *w = t->view_opts + i, *spec = !strcmp(prev, "-T") ? w
								  : !strncmp(w, "-T", 2) && w[2] ? w + 2
								  : !strncmp(w, "--trigger=", 10) ? w + 10 : NULL;
			struct trigger_spec ts;
			char why[256];
			if (spec && !trigger_spec_parse(spec, &ts, why, sizeof(why)) && (ts.actions & TRIGGER_TRACE_OFF))
				r.recorded_trace_off = 1;
			prev = w;
		}
		if (st) {
			view_close(t);
			free(all_argv);
			pat_free(r.pats);
			loc_free(r.locs);
			return st < 0 ? 0 : st;
		}
		if ((tid && !trace_thread_find(t, tid)) || view_sched_apply(t, &r.sched)) {
			if (tid && !trace_thread_find(t, tid))
				cli_error("thread %u is not in %s (needle info lists the threads)", tid, t->path);
			view_close(t);
			free(all_argv);
			pat_free(r.pats);
			loc_free(r.locs);
			return 1;
		}
	}
	if (prog_arg && view_check_program_arg(r.t, "replay", prog_arg)) {
		view_close(r.t);
		return 2;
	}
	/* Before any name is matched or shown. */
	if (r.with_syms && view_use_syms(r.t, r.with_syms)) {
		view_close(r.t);
		free(all_argv);
		pat_free(r.pats);
		loc_free(r.locs);
		return 1;
	}
	if (r.demangle)
		trace_set_demangle(r.t, (enum trace_demangle)(r.demangle - 1));
	if (r.ret_filter && r.t->tracer == TRACER_FUNCTION) {
		cli_error("--ret-%s needs return values: %s was recorded with the function tracer (entries only)",
			  r.ret_filter == RET_EQ ? "eq" : "ne", r.t->path);
		view_close(r.t);
		return 1;
	}
	view_buffer_output(stdout);
	if (!(r.skip = calloc(r.t->thread_cnt ? r.t->thread_cnt : 1, 1)) ||
	    !(r.watch_last = calloc(r.t->thread_cnt ? r.t->thread_cnt : 1, sizeof(*r.watch_last))) ||
	    !(r.watch_seen = calloc(r.t->thread_cnt ? r.t->thread_cnt : 1, sizeof(*r.watch_seen))) ||
	    !(r.tt = calloc(r.t->thread_cnt ? r.t->thread_cnt : 1, sizeof(*r.tt))) ||
	    !(r.site_class = calloc(r.t->site_cap ? r.t->site_cap : 1, sizeof(*r.site_class))) ||
	    !(r.site_depth = calloc(r.t->site_cap ? r.t->site_cap : 1, sizeof(*r.site_depth))) ||
	    !(r.site_time = calloc(r.t->site_cap ? r.t->site_cap : 1, sizeof(*r.site_time)))) {
		cli_error("out of memory");
		trace_close(r.t);
		return 1;
	}

	if ((r.column_view && !(r.column = calloc(r.t->thread_cnt ? r.t->thread_cnt : 1, sizeof(*r.column)))) ||
	    want_line_sites(&r)) {
		cli_error("out of memory");
		trace_close(r.t);
		return 1;
	}
	struct trace_iter it;
	struct trace_event ev;
	int ret = 0, n;
	if (trace_iter_init_mark(&it, r.t, tid, NULL, r.ret_filter ? keep_args : NULL, &r)) {
		cli_error("%s: %s", r.t->path, it.err);
		ret = 1;
	} else {
		if (r.t->end.lost_events) {
			char why[256];
			view_lost_reason(r.t, why, sizeof(why));
			printf("# %llu events were lost (%s); calls around the losses may be missing\n",
			       (unsigned long long)r.t->end.lost_events, why);
		}
		if (r.custom_fields)
			fields_header(&r);
		else
			printf("# %8s %8s   FUNCTION%s\n", r.t->tracer == TRACER_FUNCTION ? "TIME(s)" : "DURATION", "TID",
			       r.srcline ? " [SOURCE]" : "");
		while ((n = trace_iter_next(&it, &ev)) > 0) {
			r.t->work++;
			print_event(&ev, &r, &it);
			if (view_output_failed(stdout))
				break;
		}
		if (n < 0) {
			fflush(stdout);
			cli_error("%s: %s", r.t->path, it.err);
			ret = 1;
		} else if (!r.finished) {
			put_open_calls(&r);
		}
		if (n >= 0 && r.ret_filter && !r.seen_ret && !view_output_failed(stdout)) {
			fflush(stdout);
			cli_error("warning: no call in %s has a return value (recorded with -R 'GLOB@retval')", r.t->path);
		}
	}
	trace_iter_free(&it);
	size_t threads = r.t->thread_cnt;
	view_close(r.t);
	free(r.skip);
	free(r.watch_last);
	free(r.watch_seen);
	for (size_t i = 0; r.tt && i < threads; i++) {
		for (size_t c = 0; c < r.tt[i].cnt; c++) {
			for (size_t d = 0; d < r.tt[i].v[c].cap; d++)
				free(r.tt[i].v[c].f[d].data);
			free(r.tt[i].v[c].f);
		}
		free(r.tt[i].v);
	}
	free(r.tt);
	free(r.site_class);
	free(r.site_depth);
	free(r.site_time);
	free(r.module_compiled);
	free(r.column);
	pat_free(r.pats);
	loc_free(r.locs);
	free(all_argv);
	free(r.line.p);
	for (size_t i = 0; i < r.slot_cnt; i++)
		free(r.slots[i].p);
	free(r.slots);
	free(r.free_slots);
	free(r.open_calls);
	if (r.line.oom) {
		cli_error("out of memory");
		ret = 1;
	}
	return view_close_output(stdout, "standard output") | ret;
}
