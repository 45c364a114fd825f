/* trigger_spec.h - uftrace's triggers, -T FUNC@ACTION[,ACTION...], as
 * the views apply them (needle record keeps them for the views: the trace
 * holds every call, and replay shows what the triggers select).
 *
 * ACTION is one of: filter, notrace (the function's calls are, or are
 * not, shown with what they call: -F, -N), depth=N (N levels from the
 * function), hide (the function is not shown, what it calls is, one
 * level up: -H), backtrace (its callers are printed before it), trace_on
 * and trace_off (also trace-on, traceon, ...: showing starts or stops at
 * its entry, until the other; --disable starts with it stopped), trace
 * (shown even when -t would hide it), time=TIME (the function and what
 * it calls are shown when they took TIME or more: -t for its subtree),
 * finish (showing ends for every thread at its entry, and the calls
 * open then are listed after the graph), size=BYTES (hidden when the
 * function is smaller: -Z for the functions it names).
 * Items argN, fpargN, retval (each with an optional /FMT) and auto-args
 * record values, as -A and -R do (struct trigger_spec's args), and
 * read=proc/statm and read=page-fault the process's memory and page
 * faults at its entry and exit.
 * An item that is not an action names the function's object, as in
 * FUNC@libfoo (the file name without directory and suffix, or its
 * beginning). */
#ifndef NEEDLE_TRIGGER_SPEC_H
#define NEEDLE_TRIGGER_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/pattern.h"

enum trigger_action {
	TRIGGER_FILTER = 1 << 0,
	TRIGGER_NOTRACE = 1 << 1,
	TRIGGER_DEPTH = 1 << 2,
	TRIGGER_BACKTRACE = 1 << 3,
	TRIGGER_TRACE_ON = 1 << 4,
	TRIGGER_TRACE_OFF = 1 << 5,
	TRIGGER_TRACE = 1 << 6,
	TRIGGER_HIDE = 1 << 7,
	TRIGGER_TIME = 1 << 8,
	TRIGGER_FINISH = 1 << 9,
	TRIGGER_SIZE = 1 << 10,
};

struct trigger_spec {
	char pattern[256]; /* FUNC */
	/* Values to record at its calls, as uftrace's -T FUNC@arg1,retval
	 * takes them: "argN[/FMT]" and "fpargN[/FMT]" items, comma-separated
	 * (for -A), "retval[/FMT]" (for -R), and auto-args: what debug info
	 * gives of both sides (-A FUNC -R FUNC).  needle record turns them
	 * into those options; they are not actions of the views. */
	char args[256], rets[64];
	int auto_args;
	char module[256];  /* the object it is in, or "" for any */
	unsigned actions;  /* enum trigger_action */
	uint32_t depth;    /* TRIGGER_DEPTH */
	uint64_t time_ns;  /* TRIGGER_TIME */
	uint64_t size;     /* TRIGGER_SIZE: a function of fewer bytes is hidden */
	unsigned reads;    /* read=: TRIGGER_READ_*, recorded at its entry and exit */
};

/* uftrace's read=WHAT: what the process reads at the function's entry
 * and exit, which the views show as comments (needle record turns them
 * into values of ARG_KIND_READ). */
enum trigger_read {
	TRIGGER_READ_STATM = 1 << 0,  /* read=proc/statm: memory size, resident, shared */
	TRIGGER_READ_FAULTS = 1 << 1, /* read=page-fault: major and minor faults */
};

/* Parse "FUNC@ACTION,..." into *out.  0, or -1 with err set to what is
 * wrong (one sentence, naming the spec). */
int trigger_spec_parse(const char *arg, struct trigger_spec *out, char *err, size_t errlen);

/* uftrace's -E EVENT (a glob) against the events needle has: linux:schedule
 * (the kernel's switches, read as calls), linux:task-name (a thread's
 * renames: --kernel=comm) and the readings of -T read=
 * (read:proc/statm, read:page-fault, diff:... at the exit), which needle
 * records whenever -T asks, -E or not.  The TRIGGER_EVENT_* bits it
 * matches; 0 for none. */
#define TRIGGER_EVENT_SCHEDULE 1u
#define TRIGGER_EVENT_READINGS 2u
#define TRIGGER_EVENT_TASK_NAME 4u
unsigned trigger_event_match(const char *pattern);

/* FUNC@MODULE's module is matched by module_name_matches (pattern.h). */

#endif
