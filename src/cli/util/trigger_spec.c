/* trigger_spec.c - parsing uftrace's -T FUNC@ACTION,... (trigger_spec.h).
 * Pure: no state, no allocation. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/util/cli_util.h"
#include "cli/util/trigger_spec.h"

/* "trace_on", "trace-on", "traceon", "trace_off"..., as uftrace spells
 * them: TRIGGER_TRACE_ON or _OFF, or 0. */
static unsigned trace_onoff(const char *item)
{
	if (strncasecmp(item, "trace", 5))
		return 0;
	item += 5;
	if (*item == '_' || *item == '-')
		item++;
	if (!strcasecmp(item, "on"))
		return TRIGGER_TRACE_ON;
	if (!strcasecmp(item, "off"))
		return TRIGGER_TRACE_OFF;
	return 0;
}

/* argN, fpargN or retval, with an optional /FMT after it (checked as
 * -A and -R check it, by needle record). */
static int value_item(const char *it)
{
	const char *p = !strncmp(it, "fparg", 5) ? it + 5 : !strncmp(it, "arg", 3) ? it + 3 : NULL;
	if (!strncmp(it, "retval", 6))
		return it[6] == 0 || it[6] == '/';
	if (!p || *p < '1' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == 0 || *p == '/';
}

int trigger_spec_parse(const char *arg, struct trigger_spec *out, char *err, size_t errlen)
{
	const char *at = strchr(arg, '@');
	char items[512];

	memset(out, 0, sizeof(*out));
	if (!at || at == arg || !at[1]) {
		snprintf(err, errlen, "-T needs FUNC@ACTION (e.g. 'foo@depth=2', 'bar@trace_off'), not '%s'", arg);
		return -1;
	}
	if ((size_t)(at - arg) >= sizeof(out->pattern) || strlen(at + 1) >= sizeof(items)) {
		snprintf(err, errlen, "-T '%.64s...': too long", arg);
		return -1;
	}
	memcpy(out->pattern, arg, (size_t)(at - arg));
	strcpy(items, at + 1);
	for (char *save = NULL, *it = strtok_r(items, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned onoff = trace_onoff(it);
		if (onoff) {
			out->actions |= onoff;
		} else if (!strcasecmp(it, "filter")) {
			out->actions |= TRIGGER_FILTER;
		} else if (!strcasecmp(it, "notrace")) {
			out->actions |= TRIGGER_NOTRACE;
		} else if (!strcasecmp(it, "backtrace")) {
			out->actions |= TRIGGER_BACKTRACE;
		} else if (!strcasecmp(it, "trace")) {
			out->actions |= TRIGGER_TRACE;
		} else if (!strcasecmp(it, "hide")) {
			out->actions |= TRIGGER_HIDE;
		} else if (!strncasecmp(it, "depth=", 6)) {
			unsigned long d = strtoul(it + 6, &end, 10);
			if (*end || end == it + 6 || !d || d > 1000000) {
				snprintf(err, errlen, "-T '%s': depth= needs a positive number", arg);
				return -1;
			}
			out->actions |= TRIGGER_DEPTH;
			out->depth = (uint32_t)d;
		} else if (!strncasecmp(it, "time=", 5)) {
			if (cli_parse_duration(it + 5, &out->time_ns)) {
				snprintf(err, errlen, "-T '%s': time= needs a duration (e.g. 10us, 1.5ms, 0)", arg);
				return -1;
			}
			out->actions |= TRIGGER_TIME;
		} else if (!strncasecmp(it, "read=", 5)) {
			if (!strcmp(it + 5, "proc/statm")) {
				out->reads |= TRIGGER_READ_STATM;
			} else if (!strcmp(it + 5, "page-fault")) {
				out->reads |= TRIGGER_READ_FAULTS;
			} else if (!strncmp(it + 5, "pmu-", 4)) {
				snprintf(err, errlen, "-T '%s': %s reads hardware counters, which needle does not (read= "
					 "takes proc/statm or page-fault)", arg, it + 5);
				return -1;
			} else {
				snprintf(err, errlen, "-T '%s': read= takes proc/statm or page-fault, not '%s'", arg, it + 5);
				return -1;
			}
		} else if (!strncasecmp(it, "size=", 5)) {
			unsigned long long z = strtoull(it + 5, &end, 10);
			if (*end || end == it + 5 || !z || it[5] == '-') {
				snprintf(err, errlen, "-T '%s': size= needs a positive number of bytes", arg);
				return -1;
			}
			out->actions |= TRIGGER_SIZE;
			out->size = z;
		} else if (!strcasecmp(it, "finish")) {
			out->actions |= TRIGGER_FINISH;
		} else if (value_item(it)) {
			char *list = strncmp(it, "retval", 6) ? out->args : out->rets;
			size_t len = strlen(list), cap = list == out->args ? sizeof(out->args) : sizeof(out->rets);
			if (len + 1 + strlen(it) + 1 > cap) {
				snprintf(err, errlen, "-T '%.64s...': too many values", arg);
				return -1;
			}
			snprintf(list + len, cap - len, "%s%s", len ? "," : "", it);
		} else if (!strcasecmp(it, "auto-args")) {
			out->auto_args = 1;
		} else if (strchr(it, '=') || !strcasecmp(it, "recover")) {
			snprintf(err, errlen,
				 "-T '%s': needle has no trigger action '%s' (it has filter, notrace, depth=N, hide, "
				 "backtrace, trace_on, trace_off, trace, time=TIME, size=BYTES, finish, read=proc/statm, "
				 "read=page-fault, and argN, fpargN, retval, auto-args)",
				 arg, it);
			return -1;
		} else if (it == items && !out->module[0] && strlen(it) < sizeof(out->module)) {
			strcpy(out->module, it);
		} else {
			snprintf(err, errlen, "-T '%s': '%s' is not a trigger action (filter, notrace, depth=N, hide, "
				 "backtrace, trace_on, trace_off, trace, time=TIME, size=BYTES, finish)", arg, it);
			return -1;
		}
	}
	if (!out->actions && !out->args[0] && !out->rets[0] && !out->auto_args && !out->reads) {
		snprintf(err, errlen, "-T '%s': no action given (e.g. '%s,depth=1')", arg, arg);
		return -1;
	}
	return 0;
}

unsigned trigger_event_match(const char *pattern)
{
	static const char *const readings[] = { "read:proc/statm", "read:page-fault", "diff:proc/statm",
						"diff:page-fault" };
	unsigned bits = 0;
	if (!fnmatch(pattern, "linux:schedule", 0))
		bits |= TRIGGER_EVENT_SCHEDULE;
	if (!fnmatch(pattern, "linux:task-name", 0))
		bits |= TRIGGER_EVENT_TASK_NAME;
	for (size_t i = 0; i < sizeof(readings) / sizeof(readings[0]); i++)
		if (!fnmatch(pattern, readings[i], 0))
			bits |= TRIGGER_EVENT_READINGS;
	return bits;
}
