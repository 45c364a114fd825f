/* cxx_name.h - C++ function names as needle shows and matches them: the
 * Itanium C++ ABI's mangled symbol ("_ZN2ns3Cls3getEi"), demangled
 * ("ns::Cls::get(int) const"), and that without its parameter list
 * ("ns::Cls::get"), which is what the views show, as uftrace does.  The
 * views (reader) and the agent's patterns (sites) both use it; neither
 * demangles here: the caller brings the runtime's __cxa_demangle. */
#ifndef NEEDLE_CXX_NAME_H
#define NEEDLE_CXX_NAME_H

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

#endif
