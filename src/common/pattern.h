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
#include <strings.h>

static inline int pattern_is_regex(const char *p)
{
	size_t n = strlen(p);
	return p[0] == '^' || (n && p[n - 1] == '$') || strpbrk(p, ".(|+\\");
}

/* Does the object at path match a FUNC@MODULE's module: its base name,
 * or the base name's beginning up to a '.', '-' or '_' ("libc" for
 * /lib/x86_64-linux-gnu/libc.so.6, "t-abc" for ./t-abc)?  "PLT" or "plt"
 * names the calls into other objects, and matches none here. */
static inline int module_name_matches(const char *module, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(module);

	base = base ? base + 1 : path;
	if (!strcasecmp(module, "plt"))
		return 0;
	if (!strcmp(module, base))
		return 1;
	return !strncmp(module, base, n) && (base[n] == '.' || base[n] == '-' || base[n] == '_' || base[n] == 0);
}

#endif
