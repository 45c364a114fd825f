/* args.h - what the program's values are recorded and filtered by: -A,
 * -R, --auto-args and -F value filters, as the options give them
 * (their grammar: arg_specs.c), then checked and typed against the
 * program's DWARF (dwarf_params.c) into what the agent reads; and the C++
 * names in -F, -N and --trigger patterns (cxx_patterns.c).
 *
 * This folder owns the grammars of the values' specs and the DWARF
 * placement rules.  It may include cli/util and common, never the
 * record folder: it fills its own struct arg_plan, which needle record
 * carries. */
#ifndef NEEDLE_ARGS_H
#define NEEDLE_ARGS_H

#include "cli/args/program_libs.h"

struct arg_plan {
	/* As the options give them */
	char *specs;         /* -A / -R, a line each ('A' or 'R' first), or NULL */
	char *value_filters; /* -F GLOB@..., a line each, or NULL */
	char *value_globs;   /* their globs, a line each: only those functions are traced */
	int auto_args;       /* --auto-args */
	/* -A PATTERN / -R PATTERN without '@' (uftrace's): what --auto-args
	 * would show of the functions PATTERN names, that side only; a line
	 * each, 'A' or 'R' first, or NULL */
	char *auto_patterns;
	char *reads;         /* -T GLOB@read=...: "GLOB\tMASK" lines (TRIGGER_READ_*), or NULL */
	/* What arg_plan_resolve makes of them */
	char *args;          /* as the agent reads them (agent/record/args.h), or NULL */
	char *arg_filters;   /* the -F value filters, as the agent reads them, or NULL */
	char *arg_labels;    /* the values' names for the views (SEC_ARGS), or NULL */
};

/* Whether the plan asks for anything that needs the program's DWARF. */
static inline int arg_plan_wanted(const struct arg_plan *p)
{
	return p->specs || p->value_filters || p->auto_args || p->auto_patterns || p->reads;
}
/* -A (ret 0) or -R (ret 1) SPEC, and -F GLOB@NAME OP VALUE: checked for
 * their syntax as the options are read.  0, or -1 with the error said. */
int arg_plan_add_spec(struct arg_plan *p, const char *spec, int ret);
int arg_plan_add_filter(struct arg_plan *p, const char *spec);
/* -T GLOB@read=...: what the process reads (TRIGGER_READ_* in mask) at
 * the entry and exit of the functions GLOB names. */
int arg_plan_add_reads(struct arg_plan *p, const char *glob, unsigned mask);
/* Against the DWARF of exe and of libs (may be NULL) before the program
 * starts: fills args, arg_filters and arg_labels.  0, or -1 with the
 * error said. */
int arg_plan_resolve(struct arg_plan *p, const char *exe, const struct program_libs *libs);
void arg_plan_free(struct arg_plan *p);

/* -F, -N and --trigger patterns: each list (newline-separated globs, or
 * NULL) followed by the mangled symbols of the C++ functions of exe it
 * names (the agent may have no demangler), exe's symbols and those
 * extra_syms names in its file (--with-syms lines, or NULL).  match_regex
 * as --match says.  0, or -1 with the error said. */
struct cxx_pattern_list {
	char **text;
	int triggers; /* lines are triggers (a pattern, then its condition) */
};
int cxx_patterns_expand(const char *exe, const char *extra_syms, int match_regex, const struct cxx_pattern_list *lists,
			size_t cnt);

#endif
