/* site_names.h - the names a function pattern matches a site by
 * (site_names.c). */
#ifndef NEEDLE_SITE_NAMES_H
#define NEEDLE_SITE_NAMES_H

#include "agent/sites/site_table.h"

/* 1 if pattern (a name or an fnmatch(3) glob) names s: its symbol, or for
 * a C++ function its demangled name without or with its parameter list;
 * a regular expression (pattern_is_regex) found in the symbol or the
 * demangled name without its parameters.  Under the control mutex. */
int site_name_match(struct site *s, const char *pattern);

/* Discovery found the C++ runtime's __cxa_demangle at addr (runtime
 * address): the first one found is used. */
void site_names_saw_demangler(uint64_t addr);
/* m was unloaded: if the demangler was its, it is forgotten. */
struct module;
void site_names_module_gone(const struct module *m);

#endif
