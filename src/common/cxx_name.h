/* cxx_name.h - C++ function names as needle shows and matches them: the
 * Itanium C++ ABI's mangled symbol ("_ZN2ns3Cls3getEi"), demangled
 * ("ns::Cls::get(int) const"), and that without its parameter list
 * ("ns::Cls::get") nor, for a function template's instance, its return
 * type, which is what the views show, as uftrace does.  The
 * views (reader) and the agent's patterns (sites) both use it; neither
 * demangles here: the caller brings the runtime's __cxa_demangle. */
#ifndef NEEDLE_CXX_NAME_H
#define NEEDLE_CXX_NAME_H

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

/* An Itanium-mangled name: one __cxa_demangle may turn into C++. */
static inline int cxx_name_is_mangled(const char *name)
{
	return name && name[0] == '_' && name[1] == 'Z';
}

/* The length of a demangled name without its parameter list and what
 * follows it ("ns::Cls::get(int) const" -> 12): the parenthesis that
 * matches the last ')'; the whole length when there is none. */
static inline size_t cxx_name_base_len(const char *demangled)
{
	const char *close = strrchr(demangled, ')');
	int depth = 0;

	for (const char *p = close; p && p > demangled; p--) {
		depth += *p == ')';
		depth -= *p == '(';
		if (!depth)
			return (size_t)(p - demangled);
	}
	return strlen(demangled);
}

/* Where the name starts in the first len bytes of a demangled name (its
 * base: cxx_name_base_len): past the return type that a function
 * template's instance carries ("long app::twice<long>" -> 5), at the
 * last space outside <>, (), [] and {} and before any "operator" (whose
 * name may hold spaces, "operator new", and brackets, "operator<<"). */
static inline size_t cxx_name_start(const char *d, size_t len)
{
	size_t start = 0;
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		char c = d[i];
		if (!depth && !strncmp(d + i, "operator", 8) && (!i || d[i - 1] == ':' || d[i - 1] == ' '))
			break;
		if (c == '<' || c == '(' || c == '[' || c == '{')
			depth++;
		else if ((c == '>' || c == ')' || c == ']' || c == '}') && depth)
			depth--;
		else if (c == ' ' && !depth && i + 1 < len && d[i + 1] != '<')
			start = i + 1;
	}
	return start;
}

/* A demangled name as the views show it, in place: its return type (a
 * template instance's) dropped ("long ns::twice<long>(long)" becomes
 * "ns::twice<long>(long)"); returns the length of the part before the
 * parameter list ("ns::twice<long>"). */
static inline size_t cxx_name_shown(char *d)
{
	size_t base = cxx_name_base_len(d), start = cxx_name_start(d, base);

	memmove(d, d + start, strlen(d + start) + 1);
	return base - start;
}

/* Whether glob names a C++ function by the name cxx_name_shown left
 * (shown, its first base bytes without the parameter list): with or
 * without its parameters. */
static inline int cxx_name_fnmatch(const char *glob, const char *shown, size_t base)
{
	char name[1024];

	snprintf(name, sizeof(name), "%.*s", (int)base, shown);
	if (!fnmatch(glob, name, 0) || !fnmatch(glob, shown, 0))
		return 1;
	/* An ABI tag is no part of the name a user writes: "give" names
	 * give[abi:cxx11](int). */
	char *tag = strstr(name, "[abi:");
	if (!tag)
		return 0;
	for (char *end; tag; tag = strstr(tag, "[abi:")) {
		if (!(end = strchr(tag, ']')))
			return 0;
		memmove(tag, end + 1, strlen(end + 1) + 1);
	}
	return !fnmatch(glob, name, 0);
}

#endif
