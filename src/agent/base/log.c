/* log.c - owns the print callback: where libneedle's warnings and errors
 * go.  Messages are for people; callers act on the negative errno. */
#include <stdio.h>
#include <stdlib.h>

#include "agent/base/log.h"

static int print_stderr(enum needle_print_level level, const char *fmt, va_list ap)
{
	/* NEEDLE_DEBUG=1 in the environment shows info and debug messages too. */
	static int verbosity = -1;
	if (verbosity < 0) {
		const char *env = getenv("NEEDLE_DEBUG");
		verbosity = env && *env ? atoi(env) + 1 : 0;
	}
	if ((int)level > verbosity)
		return 0;
	fputs("needle: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

static needle_print_fn print_fn = print_stderr;

NEEDLE_API needle_print_fn needle_set_print(needle_print_fn fn)
{
	needle_print_fn old = print_fn;
	print_fn = fn;
	return old;
}

void needle_log(enum needle_print_level level, const char *fmt, ...)
{
	needle_print_fn fn = print_fn;
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(level, fmt, ap);
	va_end(ap);
}
