/* main.c - the needle command: subcommand dispatch.  Each command lives
 * in its folder (record/, view/, export/, ctl/; live.c runs record, then
 * replay); what they share is in
 * util/, args/ and inject/ below them (docs/design.md's layer table). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/ctl/ctl.h"
#include "cli/live.h"
#include "cli/otlp_stream.h"
#include "cli/export/export.h"
#include "cli/record/record.h"
#include "cli/recv.h"
#include "cli/script.h"
#include "cli/util/cli_util.h"
#include "cli/view/view.h"

static const char usage[] =
	"usage: needle <command> [options]\n"
	"\n"
	"  record [options] -- PROG [ARGS]   run PROG and record its function calls\n"
	"  replay [-i FILE] [options]        print the function graph\n"
	"  live   [options] -- PROG [ARGS]   record PROG, then print its function graph\n"
	"  report [-i FILE] [-s KEY]         per-function calls and times\n"
	"  export [-i FILE] --format=F -o OUT  perfetto, chrome, folded, pprof, otlp, uftrace or ctf\n"
	"  graph  [-i FILE] [FUNC]           the call graph of FUNC, calls merged by path\n"
	"  dump   [-i FILE]                  every event as a line, thread by thread\n"
	"  script -S FILE.py [-i FILE]       run a Python script over the events (import needle)\n"
	"  tui    [-i FILE]                  browse the trace in the terminal (graph, report, search)\n"
	"  info   [-i FILE]                  header, threads and losses\n"
	"  ctl    PID COMMAND                change what a running recording traces\n"
	"  recv   [-d DIR] [--port N]        store the traces needle record --host sends\n"
	"\n"
	"Run 'needle <command> --help' for the options of a command.\n";

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{ "record", cmd_record }, { "replay", cmd_replay }, { "report", cmd_report },
		{ "export", cmd_export }, { "info", cmd_info },     { "ctl", cmd_ctl },
		{ "live", cmd_live },     { "graph", cmd_graph },
		{ "dump", cmd_dump },     { "script", cmd_script }, { "tui", cmd_tui },
		{ "recv", cmd_recv },
	};

	/* Each command says what is wrong with an option in one line of its
	 * own (cli_option_error), not getopt's line and a page of usage. */
	opterr = 0;

	/* record's span stream lives a layer above it (otlp_stream.c). */
	record_stream_open = otlp_stream_open;
	/* Run as `uftrace` (a link so named): uftrace's defaults
	 * (cli_util.h), and a first argument that is no command is what
	 * uftrace makes of it, live's: options, then the program. */
	const char *self = argv[0] ? strrchr(argv[0], '/') : NULL;
	cli_uftrace_style = argv[0] && !strcmp(self ? self + 1 : argv[0], "uftrace");
	if (cli_uftrace_style && argc >= 2 && strcmp(argv[1], "-h") && strcmp(argv[1], "--help")) {
		size_t i = 0;
		while (i < sizeof(cmds) / sizeof(cmds[0]) && strcmp(argv[1], cmds[i].name))
			i++;
		if (i == sizeof(cmds) / sizeof(cmds[0])) {
			argv[0] = "live";
			return cmd_live(argc, argv);
		}
	}
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	cli_error("unknown command '%s' (needle --help lists the commands)", argv[1]);
	return 2;
}
