/* site_names.c - the names a function pattern (needle_attach's patterns,
 * and through needle_site_match, needle record's -F, -N, -A and
 * --trigger) matches a site by: its symbol, and for a C++ function (an
 * Itanium-mangled symbol) its demangled name too, without and with its
 * parameter list: "ns::Cls::get" (what the views show, as uftrace does)
 * and "ns::Cls::get(int) const" (one overload).  A user reads a name in
 * replay and filters by it; the mangled form still works.
 *
 * Invariants:
 *  - A site is demangled the first time a pattern does not match its
 *    symbol, and once: the result stays with the site (site->cxx_name,
 *    "" when the symbol is not C++ or does not demangle).  Discovery
 *    never demangles: a C program, or a pattern every symbol matches,
 *    pays nothing.
 *  - Callers hold the control mutex: the cache is written under it, and
 *    the calls the demangler makes (malloc, the C library's functions,
 *    possibly sites) run untraced (needle_agent_busy).
 *  - The demangler is the program's own C++ runtime's __cxa_demangle,
 *    found by discovery among an object's symbols (libstdc++'s, or the
 *    program's own when it links the runtime statically), so libneedle
 *    depends on none, and nothing here calls the dynamic loader (whose
 *    lock, and needle's dlopen hooks, must not be taken under the
 *    control mutex).  A program whose runtime is not loaded (C++ that
 *    uses nothing of it) gets its symbols matched as they are.
 *  - A pattern that only a regular expression would write (^, $, '.',
 *    (, | or +: common/pattern.h) is one, as the CLI reads it and as
 *    uftrace's patterns are: POSIX extended, found anywhere in the
 *    symbol or the demangled name the views show.  The last one is kept
 *    compiled (one pattern is matched against every site in a row).
 *  - Not on a hot path: patterns are resolved when links attach or
 *    sessions start. */
#include <fnmatch.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sites/module.h"
#include "agent/sites/site_names.h"
#include "common/cxx_name.h"
#include "common/pattern.h"

typedef char *(*demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

/* Set by discovery (site_names_saw_demangler), under the control mutex
 * as every reader. */
static demangle_fn demangler;

void site_names_saw_demangler(uint64_t addr)
{
	if (!demangler)
		demangler = (demangle_fn)(uintptr_t)addr;
}

void site_names_module_gone(const struct module *m)
{
	if (demangler && module_in_exec(m, (uint64_t)(uintptr_t)demangler, 1))
		demangler = NULL; /* a runtime discovered later may take over */
}

/* The cached demangled names of s, "BASE\0FULL\0PLAIN" (PLAIN: BASE
 * without ABI tags): "" when it has none. */
static const char *cxx_names(struct site *s)
{
	static char none[] = "";

	if (s->cxx_name)
		return s->cxx_name;
	if (!cxx_name_is_mangled(s->func.name))
		return s->cxx_name = none;
	if (!demangler)
		return none; /* not cached: a runtime loaded later may demangle it */
	int status = 0;
	char *full = demangler(s->func.name, NULL, NULL, &status);
	if (!full || status)
		return free(full), s->cxx_name = none;
	/* Both without a template instance's return type: "long
	 * ns::twice<long>(long)" is matched as "ns::twice<long>" and
	 * "ns::twice<long>(long)". */
	size_t base = cxx_name_shown(full), len = strlen(full);
	char *both = malloc(2 * (base + 1) + len + 1);
	if (both) {
		memcpy(both, full, base);
		both[base] = 0;
		memcpy(both + base + 1, full, len + 1);
		/* Third, the base without ABI tags, the name a user writes:
		 * "give" for give[abi:cxx11](int). */
		char *plain = both + base + 1 + len + 1, *out = plain;
		for (const char *p = both; *p;) {
			const char *end;
			if (!strncmp(p, "[abi:", 5) && (end = strchr(p, ']'))) {
				p = end + 1;
				continue;
			}
			*out++ = *p++;
		}
		*out = 0;
	}
	free(full);
	return both ? (s->cxx_name = both) : none;
}

/* pattern compiled, from a one-entry cache; NULL if it does not compile
 * (or no memory): it then names nothing. */
static const regex_t *regex_of(const char *pattern)
{
	static char *cached;
	static regex_t re;
	static int ok;

	if (cached && !strcmp(cached, pattern))
		return ok ? &re : NULL;
	if (cached) {
		if (ok)
			regfree(&re);
		free(cached);
	}
	if (!(cached = strdup(pattern)))
		return NULL;
	ok = !regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);
	return ok ? &re : NULL;
}

int site_name_match(struct site *s, const char *pattern)
{
	/* A pattern that reads as a regular expression may still be a name
	 * as the views show it, a C++ signature ("scale(double)"): either
	 * reading names the function. */
	if (pattern_is_regex(pattern)) {
		const regex_t *re = regex_of(pattern);
		if (re && !regexec(re, s->func.name, 0, NULL, 0))
			return 1;
		const char *base = cxx_names(s);
		if (re && *base && !regexec(re, base, 0, NULL, 0))
			return 1;
	}
	if (!fnmatch(pattern, s->func.name, 0))
		return 1;
	const char *base = cxx_names(s);
	if (!*base)
		return 0;
	const char *full = base + strlen(base) + 1;
	return !fnmatch(pattern, base, 0) || !fnmatch(pattern, full, 0) ||
	       !fnmatch(pattern, full + strlen(full) + 1, 0);
}
