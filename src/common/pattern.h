/* pattern.h - which function patterns are regular expressions.  needle's
 * patterns are globs (ftrace's set_ftrace_filter syntax); uftrace's are
 * POSIX extended regular expressions, searched for anywhere in a name.
 * A pattern that only a regular expression would write (^, $, a '.',
 * (, | or +, or a backslash) is taken as one, so that both kinds of
 * users are understood; "a*", "kv_[gs]et" and "ns::*" stay globs.  A
 * '.' is one in uftrace's "-P ." (every function) and matches itself in
 * a name such as "foo.cold". */
#ifndef NEEDLE_PATTERN_H
#define NEEDLE_PATTERN_H

#include <string.h>

static inline int pattern_is_regex(const char *p)
{
	size_t n = strlen(p);
	return p[0] == '^' || (n && p[n - 1] == '$') || strpbrk(p, ".(|+\\");
}

#endif
