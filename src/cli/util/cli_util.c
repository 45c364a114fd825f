/* cli_util.c - the error line and durations (cli_util.h). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/util/cli_util.h"
#include "common/pattern.h"

int cli_uftrace_style;
int cli_pattern_match;

int cli_pattern_is_regex(const char *p)
{
	if (cli_pattern_match == 2 || (!cli_pattern_match && !cli_uftrace_style))
		return pattern_is_regex(p);
	if (cli_pattern_match == 1) /* a name stays a name: the debug info's */
		return pattern_is_regex(p) || strpbrk(p, "*?[{") != NULL;
	return strpbrk(p, ".?*+-^$|()[]{}") != NULL; /* uftrace's REGEX_CHARS */
}

const char *cli_pattern_spelled(const char *arg)
{
	static char **kept;
	static size_t kept_cnt;
	const char *at = strchr(arg, '@');
	size_t n = at ? (size_t)(at - arg) : strlen(arg);
	char *func = strndup(arg, n), *out = NULL;

	if (func && cli_pattern_is_regex(func) && !pattern_is_regex(func)) {
		char **v = realloc(kept, (kept_cnt + 1) * sizeof(*v));
		if (v && asprintf(&out, "(%s)%s", func, at ? at : "") >= 0)
			(kept = v)[kept_cnt++] = out;
		else if (v)
			kept = v;
	}
	free(func);
	return out ? out : arg;
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("needle: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v = strtod(s, &end);
	double mult = 1;

	if (end == s || v < 0)
		return -1;
	if (!*end || !strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "us"))
		mult = 1e3;
	else if (!strcmp(end, "ms"))
		mult = 1e6;
	else if (!strcmp(end, "s"))
		mult = 1e9;
	else
		return -1;
	/* A double past what a uint64_t holds (inf, nan, 2^64 and up) has
	 * no conversion: refused, not cast. */
	double n = v * mult + 0.5;
	if (!(n < 18446744073709551616.0))
		return -1;
	*ns = (uint64_t)n;
	return 0;
}

int cli_format_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (int i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

void cli_format_duration(char *buf, size_t len, uint64_t ns)
{
	char num[24];
	int n;

	/* From 999.9995 ms on, "%7.3f ms" would round to "1000.000 ms". */
	if (ns >= 999999500) {
		snprintf(buf, len, "%7.3f  s", ns / 1e9);
		return;
	}
	if (ns >= 1000000) {
		snprintf(buf, len, "%7.3f ms", ns / 1e6);
		return;
	}
	if (len < 11) { /* every caller gives room; never a part of a number */
		if (len)
			buf[0] = 0;
		return;
	}
	/* Below a millisecond "%7.3f us" of ns / 1000 is exactly these
	 * digits (at most 3 before the point: n <= 7). */
	n = cli_format_u64(num, ns / 1000);
	num[n++] = '.';
	num[n++] = (char)('0' + ns / 100 % 10);
	num[n++] = (char)('0' + ns / 10 % 10);
	num[n++] = (char)('0' + ns % 10);
	memset(buf, ' ', 7 - (size_t)n);
	memcpy(buf + 7, " us", 4);
	memcpy(buf + 7 - n, num, (size_t)n);
}

const char *cli_parse_http_url(const char *url, struct http_url *u)
{
	const char *p = url, *host, *slash, *colon;

	if (!strncmp(p, "https://", 8))
		return "https is not spoken: give the collector's http:// endpoint (or a local collector's)";
	if (strncmp(p, "http://", 7))
		return "give http://HOST:PORT (OTLP/HTTP, e.g. http://localhost:4318)";
	host = p + 7;
	slash = strchr(host, '/');
	if (!slash)
		slash = host + strlen(host);
	colon = memchr(host, ':', (size_t)(slash - host));
	size_t hlen = (size_t)((colon ? colon : slash) - host);
	if (!hlen || hlen >= sizeof(u->host))
		return "no host (http://HOST:PORT)";
	memcpy(u->host, host, hlen);
	u->host[hlen] = 0;
	if (colon) {
		size_t plen = (size_t)(slash - colon - 1);
		char *end;
		long port = plen && plen < sizeof(u->port) ? strtol(colon + 1, &end, 10) : 0;
		if (!plen || plen >= sizeof(u->port) || end != slash || port <= 0 || port > 65535)
			return "the port is a number from 1 to 65535";
		memcpy(u->port, colon + 1, plen);
		u->port[plen] = 0;
	} else {
		strcpy(u->port, "4318");
	}
	if (strlen(slash) >= sizeof(u->path) || strpbrk(slash, " \r\n"))
		return "the path is too long or holds spaces";
	snprintf(u->path, sizeof(u->path), "%s", *slash ? slash : "/v1/traces");
	return NULL;
}

void cli_option_error(const char *cmd, int argc, char *const argv[], const char *optstring,
		      const struct option *longopts)
{
	const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";

	/* argv[optind - 1] is the element getopt failed in, unless a short
	 * option failed before the end of its cluster ("-xa": optind stays
	 * on it): a long option there is the failing one only if optopt is
	 * 0 (an unknown long option) or its own value (missing its value). */
	int long_failed = !strncmp(arg, "--", 2);
	if (long_failed && optopt) {
		size_t n = strcspn(arg + 2, "=");
		long_failed = 0;
		for (const struct option *o = longopts; o && o->name; o++)
			if (!strncmp(o->name, arg + 2, n) && o->val == optopt)
				long_failed = 1;
	}
	if (long_failed) {
		size_t n = strcspn(arg + 2, "=");
		const struct option *hit = NULL;
		int hits = 0;
		for (const struct option *o = longopts; o && o->name; o++) {
			if (strncmp(o->name, arg + 2, n))
				continue;
			if (strlen(o->name) == n) { /* exact: no prefix is ambiguous with it */
				hit = o;
				hits = 1;
				break;
			}
			if (!hit || strcmp(hit->name, o->name)) /* a name listed twice is one option */
				hits++;
			hit = o;
		}
		if (hits == 1)
			cli_error("%s: option '--%s' %s (needle %s --help lists the options)", cmd, hit->name,
				  hit->has_arg == no_argument ? "takes no value" : "needs a value", cmd);
		else
			cli_error("%s: %s option '%.*s' (needle %s --help lists the options)", cmd,
				  hits ? "ambiguous" : "unknown", (int)(n + 2), arg, cmd);
		return;
	}
	const char *in = optopt && optopt != ':' ? strchr(optstring, optopt) : NULL;
	if (in && in[1] == ':')
		cli_error("%s: option -%c needs a value (needle %s --help lists the options)", cmd, optopt, cmd);
	else
		cli_error("%s: unknown option -%c (needle %s --help lists the options)", cmd, optopt ? optopt : '?',
			  cmd);
}
