/* view_filter.h - uftrace's -F, -N and -D applied by a view to the calls
 * it reads (report, dump, graph): -F FUNC keeps FUNC's calls and what
 * they call, -N FUNC drops them and what they call, -D N keeps N levels
 * (below the outermost -F call when there is one, else from the top of
 * the thread: for a forked child, from its first call of its own).
 * The last -F or -N given that names a function decides (uftrace's rule).
 * --no-libcall hides the calls the program makes into libraries, alone:
 * what a library calls back (a signal handler, a qsort comparator) stays.
 *
 * Invariants: per event O(1) (a function's verdict is looked up once,
 * then kept by site); per thread two depths, where its -F and -N
 * subtrees began: memory grows with the sites and threads, never with the
 * events. */
#ifndef NEEDLE_VIEW_FILTER_H
#define NEEDLE_VIEW_FILTER_H

#include <regex.h>
#include <stdint.h>

#include "reader/trace_reader.h"

struct view_filter_pat;

struct view_filter {
	struct view_filter_pat *pats; /* newest first */
	int have_filter;              /* some -F: outside every -F subtree nothing shows */
	uint32_t max_depth;           /* -D: 0 none */
	int no_libcall;               /* --no-libcall: library calls hidden (what they call back shown) */
	signed char *compiled;        /* view_module_compiled's cache */
	struct trace *t;
	uint8_t *verdict;             /* by site: 0 not looked at, 1 none, 2 -F, 3 -N */
	uint32_t *in_filter, *in_notrace; /* by thread: where its subtree began, UINT32_MAX none */
	uint32_t *base;               /* by thread: the level of its first event (a forked
				       * child's: the outermost call it inherits), where -D
				       * counts from without -F; UINT32_MAX before it */
};

/* Add -F (notrace 0) or -N (1) PATTERN: a glob, or a regular expression
 * (pattern.h).  0, or -1 after printing why (view names the command). */
int view_filter_add(struct view_filter *f, const char *view, const char *pattern, int notrace);
/* -D's argument: 0, or -1 after printing why. */
int view_filter_depth(struct view_filter *f, const char *view, const char *arg);
/* Is anything asked?  Nothing to do when not. */
static inline int view_filter_active(const struct view_filter *f)
{
	return f->pats || f->max_depth || f->no_libcall;
}
/* Before the events of t: 0, or -1 out of memory. */
int view_filter_start(struct view_filter *f, struct trace *t);
/* Whether an entry or exit is shown; call it for every entry and exit of
 * the thread, in order, shown or not (they open and close the
 * subtrees).  A thread's state starts afresh with view_filter_reset. */
int view_filter_shows(struct view_filter *f, const struct trace_event *ev);
void view_filter_reset(struct view_filter *f, uint32_t thread);
/* Whether a -F pattern (the last -F or -N that names it being -F) names
 * site's function, whatever the calls around it: a selection of
 * functions by name, for what is not a subtree (export's --spans). */
int view_filter_names(struct view_filter *f, uint32_t site);
/* Forget the trace (its per-site and per-thread state), keeping the
 * patterns, to start again on another. */
void view_filter_stop(struct view_filter *f);
void view_filter_free(struct view_filter *f);

#endif
