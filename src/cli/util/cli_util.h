/* cli_util.h - what every part of the needle command shares: its one
 * error line and the durations its options take and its views print. */
#ifndef NEEDLE_CLI_UTIL_H
#define NEEDLE_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Print "needle: <message>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct option;
/* getopt_long returned '?' (opterr is 0 for every command: main.c): one
 * line that names the option, what is wrong with it and where the
 * options are listed, in place of getopt's own message and the usage. */
void cli_option_error(const char *cmd, int argc, char *const argv[], const char *optstring,
		      const struct option *longopts);

/* Parse a duration like "10us", "1.5ms", "2s", "100" (ns).  0 or -1. */
int cli_parse_duration(const char *s, uint64_t *ns);

/* An OTLP/HTTP endpoint, http://HOST[:PORT][/PATH] (port 4318 and path
 * /v1/traces by default, OTLP's): NULL, or why it is not one. */
struct http_url {
	char host[256], port[8], path[512];
};
const char *cli_parse_http_url(const char *url, struct http_url *u);
/* Format ns as uftrace does: "  1.234 us" (10 characters and a NUL:
 * len >= 11).  Below a millisecond without printf, since replay formats
 * one per line it prints. */
void cli_format_duration(char *buf, size_t len, uint64_t ns);
/* v in decimal at p (at least 20 bytes); returns the number of digits. */
int cli_format_u64(char *p, uint64_t v);

/* 1 when needle was run as `uftrace` (a link so named; main.c): uftrace's
 * defaults where they differ from needle's: a function pattern is read
 * as uftrace reads it (cli_pattern_is_regex), `uftrace PROG` is live,
 * and replay titles the calls open at the end as uftrace does. */
extern int cli_uftrace_style;
/* --match: 0 not given, 1 regex, 2 glob (record's options set it, for
 * the views of the same run too). */
extern int cli_pattern_match;
/* Is function pattern p a regular expression, as this run reads
 * patterns?  needle's own reading (common/pattern.h's pattern_is_regex,
 * the agent's): only with a leading ^, a final $, . ( | + or \, and *,
 * ? and [ make a glob; --match=glob the same; --match=regex: also with
 * * ? [ or { (a plain name stays a name, the one the debug info
 * describes); run as uftrace, uftrace's: with any of .?*+-^$|()[]{}. */
int cli_pattern_is_regex(const char *p);
/* arg, an option's FUNC or FUNC@REST, with FUNC spelled so that what
 * reads patterns by their look (the agent, a later needle replay:
 * pattern_is_regex) reads it as this run does: a regular expression
 * that would read as a glob is put in parentheses, which changes no
 * match.  Returns arg when nothing changes, else a copy kept for the
 * life of the process (the options keep pointers to their arguments). */
const char *cli_pattern_spelled(const char *arg);

#endif
