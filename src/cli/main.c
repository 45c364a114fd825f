/* main.c - the needle command: subcommand dispatch and shared helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
	"usage: needle <command> [options]\n"
	"\n"
	"  record [options] -- PROG [ARGS]   run PROG and record its function calls\n"
	"  replay [-i FILE] [options]        print the function graph\n"
	"  report [-i FILE] [-s KEY]         per-function calls and times\n"
	"  export [-i FILE] --format=F -o OUT  perfetto, chrome or folded\n"
	"  info   [-i FILE]                  header, threads and losses\n"
	"  ctl    PID COMMAND                change what a running recording traces\n"
	"\n"
	"Run 'needle <command> --help' for the options of a command.\n";

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
	*ns = (uint64_t)(v * mult + 0.5);
	return 0;
}

void cli_format_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000000)
		snprintf(buf, len, "%7.3f us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%7.3f ms", ns / 1e6);
	else
		snprintf(buf, len, "%7.3f  s", ns / 1e9);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{ "record", cmd_record }, { "replay", cmd_replay }, { "report", cmd_report },
		{ "export", cmd_export }, { "info", cmd_info },     { "ctl", cmd_ctl },
	};

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	cli_error("unknown command '%s'", argv[1]);
	fputs(usage, stderr);
	return 2;
}
