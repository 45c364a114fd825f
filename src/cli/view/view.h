/* view.h - the views of a trace (replay.c, report.c, info.c) and what
 * every view and export shares: opening the trace with the error message
 * every view prints the same way, running the iterator, and output that
 * fails as one message (view_open.c).  view_format.h has the formatting.
 *
 * This folder may include reader, format, cli/util and common; the
 * export folder, above it, uses view.h and view_format.h. */
#ifndef NEEDLE_VIEW_H
#define NEEDLE_VIEW_H

#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "reader/trace_reader.h"

int cmd_replay(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_tui(int argc, char **argv);

/* Open path (default needle.data); prints the error and returns NULL.  A
 * file whose recording did not finish opens, with one warning line. */
struct trace *view_open(const char *path);

/* uftrace's schedule options, which every view takes: -E linux:schedule
 * (each interval off the CPU inside a call shown as a call to
 * linux:schedule; a trace recorded with -E has it already), --event-full
 * (those outside any call too), --no-sched-preempt (not where the thread
 * was preempted), --no-sched and --no-event (none).  A view adds
 * VIEW_SCHED_LONGOPTS to its options and "E:" to its short ones, hands
 * their codes to view_sched_option, and applies them to the trace it
 * opened with view_sched_apply, before it iterates. */
enum { VIEW_OPT_NO_SCHED = 0x4000, VIEW_OPT_NO_SCHED_PREEMPT, VIEW_OPT_EVENT_FULL, VIEW_OPT_NO_EVENT, VIEW_OPT_NO_PAGER };
#define VIEW_SCHED_LONGOPTS                                                                                       \
	{ "event", required_argument, NULL, 'E' }, { "no-sched", no_argument, NULL, VIEW_OPT_NO_SCHED },          \
		{ "no-sched-preempt", no_argument, NULL, VIEW_OPT_NO_SCHED_PREEMPT },                             \
		{ "event-full", no_argument, NULL, VIEW_OPT_EVENT_FULL },                                         \
		{ "no-event", no_argument, NULL, VIEW_OPT_NO_EVENT },                                             \
		{ "no-pager", no_argument, NULL, VIEW_OPT_NO_PAGER }
#define VIEW_SCHED_CASES                                                                                          \
	case 'E':                                                                                                 \
	case VIEW_OPT_NO_SCHED:                                                                                   \
	case VIEW_OPT_NO_SCHED_PREEMPT:                                                                           \
	case VIEW_OPT_EVENT_FULL:                                                                                 \
	case VIEW_OPT_NO_EVENT:                                                                                   \
	case VIEW_OPT_NO_PAGER
/* --no-event hides the renames' lines (linux:task-name) too, and yields
 * to an -E that names an event in the same command, as in uftrace, whose
 * test suite gives --no-event to every command.  --no-pager is accepted
 * for uftrace's command lines: needle never pages. */
struct view_sched {
	unsigned set;   /* TRACE_SCHED_* asked for */
	int none;       /* --no-sched, --no-event */
	int no_event;   /* --no-event */
	int comm_asked; /* -E linux:task-name */
	/* -E PROVIDER:NAME globs: USDT probes the trace must have recorded
	 * (shown whatever else is asked; the pointers are argv's) */
#define VIEW_PROBES_MAX 16
	const char *probes[VIEW_PROBES_MAX];
	unsigned probe_cnt;
};
/* Are the renames' lines (linux:task-name) hidden? */
static inline int view_sched_hides_comm(const struct view_sched *s)
{
	return s->no_event && !s->comm_asked;
}
/* One of VIEW_SCHED_CASES: 0, or -1 after printing why (-E names an
 * event needle does not have).  arg stays referenced (argv's). */
int view_sched_option(struct view_sched *s, int opt, const char *arg);
/* The options on t: 0, or -1 after printing why (-E on a trace with no
 * intervals off the CPU recorded, or no USDT probe of that name). */
int view_sched_apply(struct trace *t, const struct view_sched *s);

/* --tid's argument: 0, or -1 after printing why it is not a thread id. */
int view_parse_tid(const char *arg, uint32_t *tid);
/* By site: the first site of the same name (overloads that demangle
 * alike, the main of each program exec'ed), for views that merge calls by
 * name.  NULL when out of memory; the caller frees it. */
uint32_t *view_name_keys(struct trace *t);
/* -r START~END, START~ or ~END (uftrace's --time-range): each end in
 * seconds as replay -f time prints them, or a duration with its unit,
 * since the trace's first event.  0, or -1 after printing why. */
int view_parse_range(const char *arg, uint64_t *start, uint64_t *end);

/* After a view's options: refuse leftover arguments, open the trace,
 * check that tid (if not 0) is in it and apply the schedule options
 * (sched, or NULL).  NULL after printing the error, with *status the exit
 * status to return. */
struct trace *view_start(const char *view, int argc, char **argv, int optind_now, const char *input, uint32_t tid,
			 const struct view_sched *sched, int *status);
/* uftrace's views take the program's name after the options and ignore
 * it: 0 if arg names the recorded program (its base name), else -1
 * after printing that it is an unexpected argument. */
int view_check_program_arg(const struct trace *t, const char *view, const char *arg);
/* Did discovery find compiled sites in module (its line "O COMPILED ...
 * PATH" of the trace's objects table)?  A library's functions without
 * are library calls (--no-libcall); libneedle's interposers stand for the
 * C library's functions.  *cache (NULL at first, freed by the caller)
 * keeps the answers by module. */
int view_module_compiled(struct trace *t, uint32_t module, signed char **cache);
/* A call the program makes into a library (uftrace's "library call"): a
 * function of an object other than the program's with no compiled
 * sites. */
int view_site_is_libcall(struct trace *t, uint32_t site, signed char **cache);
/* Why the trace's events were lost, for the line the views print: the
 * trace file could not be written to its end (the disk filled), or the
 * buffer was full. */
void view_lost_reason(const struct trace *t, char *buf, size_t len);
/* Does a regular expression aim at symbols ("_Z5scale.", "^_ZN2ns"), and
 * so is also searched for in a C++ function's mangled name?  Others are
 * not: ".*v$" would find most of them. */
static inline int view_regex_for_symbols(const char *pattern)
{
	return !strncmp(pattern, "_Z", 2) || !strncmp(pattern, "^_Z", 3);
}
/* Does a -F/-N/... pattern (its text; re its compiled regular expression
 * when it reads as one, else NULL) name the function shown as name,
 * whose symbol is sym?  Either reading of a pattern that looks like a
 * regular expression, the symbol, and the C++ names record's -F takes
 * (view_cxx_pattern_names), as needle record matches it. */
int view_pattern_names(const char *pattern, const regex_t *re, const char *name, const char *sym);
/* Does a pattern the views read as a glob (a regular expression's text
 * too: "catcher(int)" reads as both, as needle record reads it) name a
 * C++ function by the names needle record's patterns take besides the
 * one shown: its demangled name with its parameter list or template
 * arguments ("twice<long>", "catcher(int)"), without an ABI tag?  sym
 * the site's symbol; 0 for a C function. */
int view_cxx_pattern_names(const char *pattern, const char *sym);
/* --with-syms PATH: name the functions of stripped objects from PATH (a
 * trace recorded while they had symbols, or a directory of their
 * unstripped files or .debug files), before any name is matched or
 * demangled.  0, or -1 after printing why PATH gives none. */
int view_use_syms(struct trace *t, const char *path);
/* Where site's function is defined (--srcline, -L), or 0: never for a
 * library call, whose line in the C library's sources (where its debug
 * files are installed) is not the program's, as uftrace shows none. */
int view_site_srcline(struct trace *t, uint32_t site, signed char **cache, const char **file, unsigned *line);
/* The programs of the trace: the recorded one (0) and each it exec'ed.
 * Objects are numbered in the order they were loaded, a program's own
 * first: an object that defines main, after the first that does, begins
 * the next program, and the objects after it are its own.  By object,
 * the program it belongs to (malloc'ed; NULL out of memory), and their
 * number in *programs. */
uint32_t *view_module_programs(struct trace *t, uint32_t *programs);
/* An export writes a file or directory aside and renames it when whole:
 * after view_stop_on_signals, SIGINT, SIGTERM and SIGHUP stop the event
 * loops at the next event (view_interrupted holds the signal), so that
 * the export's error path removes what it wrote instead of the signal
 * killing it midway. */
extern volatile sig_atomic_t view_interrupted;
void view_stop_on_signals(void);
/* Close the trace at the end of a view.  With NEEDLE_VIEW_WORK set in the
 * environment, first print on stderr the inner-loop steps the reader and
 * the view took ("needle: view work: STEPS steps, EVENTS events"): a test
 * compares them across traces to check that work grows with the events,
 * not with the depth of the stacks. */
void view_close(struct trace *t);

/* Run the iterator to the end, calling fn per event; prints errors.
 * Returns 0, or 1 if the trace turned out damaged. */
int view_each_event(struct trace *t, uint32_t tid, int (*fn)(const struct trace_event *ev, void *arg), void *arg);
/* The same, with every call's node in tree (trace_event.node). */
int view_each_event_tree(struct trace *t, uint32_t tid, struct call_tree *tree,
			 int (*fn)(const struct trace_event *ev, void *arg), void *arg);
/* The same, with every call marked by mark_fn (trace_iter_init_mark). */
int view_each_event_mark(struct trace *t, uint32_t tid, trace_mark_fn mark_fn, void *mark_arg,
			 int (*fn)(const struct trace_event *ev, void *arg), void *arg);

/* Output.  A view stops as soon as a write fails (view_output_failed,
 * checked after each event, remembers why), and view_close_output flushes
 * and closes the stream, standard output included, so that an error at
 * the last flush or at close is seen too.  Either way the view prints one
 * message, "cannot write NAME: reason", and exits non-zero. */
int view_output_failed(FILE *out);
/* A large buffer for a stream that is not a terminal (views that write a
 * line per event): fewer copies and system calls.  Before any output. */
void view_buffer_output(FILE *out);

/* 0, or 1 after printing the message. */
int view_close_output(FILE *out, const char *name);

#endif
