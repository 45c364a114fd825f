/* export.c - `needle export --format=perfetto|chrome|folded|uftrace`.
 * The output is written to OUT.tmp.PID and renamed when complete (a
 * directory for uftrace). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/export/export.h"
#include "cli/view/view.h"
#include "cli/view/view_format.h"

static const char export_usage[] =
	"usage: needle export [-i FILE] --format=perfetto|chrome|folded|pprof|otlp|uftrace|ctf [-o OUT]\n"
	"  -i, --input FILE    trace file (default needle.data)\n"
	"  -f, --format F      perfetto (protobuf, for ui.perfetto.dev), chrome (JSON),\n"
	"                      folded (stacks for flamegraph.pl / speedscope), pprof (gzipped\n"
	"                      profile.proto for go tool pprof, Pyroscope, Parca: calls,\n"
	"                      wall-time and self-time per call stack), otlp (OpenTelemetry\n"
	"                      spans: an OTLP ExportTraceServiceRequest), uftrace (a uftrace\n"
	"                      data directory: uftrace replay, report, graph, dump, tui and\n"
	"                      script read it with -d OUT) or ctf (a CTF 1.8 trace directory\n"
	"                      for babeltrace2 and Trace Compass)\n"
	"      --with-syms PATH  names for stripped objects' functions (see needle replay --help)\n"
	"  -o, --output OUT    output file (default needle.perfetto-trace, needle.json,\n"
	"                      needle.folded, needle.pb.gz or needle.otlp.pb; '-' for standard\n"
	"                      output), or for\n"
	"                      uftrace and ctf a directory that does not exist yet (default\n"
	"                      uftrace.data, needle.ctf)\n"
	"  -E linux:schedule, --event-full, --no-sched-preempt, --no-sched: as replay's (the\n"
	"                      times off the CPU as calls to linux:schedule; not in uftrace)\n"
	"otlp: the calls of the functions --spans names that lasted -t or longer become spans:\n"
	"      --spans GLOB    the functions (repeatable; default every one)\n"
	"  -t, --time-filter TIME\n"
	"                      only calls that lasted TIME or longer (default 0)\n"
	"      --json          OTLP/JSON instead of protobuf (default needle.otlp.json)\n";

/* --format=otlp's options, for its writer below. */
static struct otlp_opts otlp;

static int export_otlp_with_opts(struct trace *t, FILE *out)
{
	return export_otlp(t, out, &otlp);
}

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' }, { "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
		{ "spans", required_argument, NULL, 'S' }, { "time-filter", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'J' },        { "with-syms", required_argument, NULL, 'W' },
		VIEW_SCHED_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	static const char *spans[64];
	int otlp_only = 0;
	const char *input = NULL, *output = NULL, *format = NULL, *with_syms = NULL;
	int (*fn)(struct trace *, FILE *) = NULL;
	const char *def = NULL;
	int c;
	struct view_sched sched = { 0 };

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:d:f:o:t:hE:", longopts, NULL)) != -1) {
		switch (c) {
		VIEW_SCHED_CASES:
			if (view_sched_option(&sched, c, optarg))
				return 2;
			break;
		case 'i':
		case 'd': /* uftrace's -d DIR: here the trace file */
			input = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'S':
			if (otlp.span_cnt == sizeof(spans) / sizeof(spans[0])) {
				cli_error("export: at most %zu --spans", sizeof(spans) / sizeof(spans[0]));
				return 2;
			}
			spans[otlp.span_cnt++] = optarg;
			otlp.spans = spans;
			otlp_only = 1;
			break;
		case 't':
			if (cli_parse_duration(optarg, &otlp.min_ns)) {
				cli_error("export: -t takes a duration (100us, 2ms, 1s), not '%s'", optarg);
				return 2;
			}
			otlp_only = 1;
			break;
		case 'J':
			otlp.json = 1;
			otlp_only = 1;
			break;
		case 'W':
			with_syms = optarg;
			break;
		case 'h':
			fputs(export_usage, stdout);
			return 0;
		default:
			cli_option_error(argv[0], argc, argv, "i:d:f:o:t:hE:", longopts);
			return 2;
		}
	}
	if (!format) {
		cli_error("export: --format is required (perfetto, chrome, folded, pprof, otlp, uftrace or ctf)");
		return 2;
	}
	if (!strcmp(format, "perfetto")) {
		fn = export_perfetto;
		def = "needle.perfetto-trace";
	} else if (!strcmp(format, "chrome")) {
		fn = export_chrome;
		def = "needle.json";
	} else if (!strcmp(format, "folded")) {
		fn = export_folded;
		def = "needle.folded";
	} else if (!strcmp(format, "otlp")) {
		fn = export_otlp_with_opts;
		def = otlp.json ? "needle.otlp.json" : "needle.otlp.pb";
	} else if (!strcmp(format, "pprof")) {
		fn = export_pprof;
		def = "needle.pb.gz";
	} else if (!strcmp(format, "uftrace")) {
		def = "uftrace.data";
	} else if (!strcmp(format, "ctf")) {
		def = "needle.ctf";
	} else {
		cli_error("unknown export format '%s' (perfetto, chrome, folded, pprof, otlp, uftrace or ctf)", format);
		return 2;
	}
	if (otlp_only && strcmp(format, "otlp")) {
		cli_error("export: --spans, -t and --json are --format=otlp's");
		return 2;
	}
	if (optind < argc) {
		cli_error("export: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (!output)
		output = def;
	if (!fn && !strcmp(output, "-")) {
		cli_error("export: %s's format is a directory: give one with -o, not '-'", format);
		return 2;
	}
	struct trace *t = view_open(input);
	if (!t)
		return 1;
	if (with_syms && view_use_syms(t, with_syms)) {
		view_close(t);
		return 1;
	}
	if (view_sched_apply(t, &sched)) {
		trace_close(t);
		return 1;
	}
	/* Never over the trace being read (a file exported onto itself is
	 * lost): the same file, whatever its name. */
	struct stat in_st, out_st;
	if (strcmp(output, "-") && !stat(t->path, &in_st) && !stat(output, &out_st) && in_st.st_dev == out_st.st_dev &&
	    in_st.st_ino == out_st.st_ino) {
		cli_error("export: %s is the trace being read: give another output with -o", output);
		view_close(t);
		return 1;
	}
	view_stop_on_signals();
	if (!fn) {
		int err = !strcmp(format, "ctf") ? export_ctf(t, output) : export_uftrace(t, output);
		view_close(t);
		return err;
	}

	int to_stdout = !strcmp(output, "-");
	/* A file is written aside and renamed when whole; what is not a
	 * regular file (/dev/null, a pipe, a terminal) is written in place:
	 * a rename would replace the device with a file. */
	struct stat st;
	int in_place = !to_stdout && !stat(output, &st) && !S_ISREG(st.st_mode);
	char tmp[4096];
	FILE *out = stdout;
	if (in_place) {
		if (S_ISDIR(st.st_mode)) {
			cli_error("cannot write %s: it is a directory", output);
			trace_close(t);
			return 1;
		}
		if (!(out = fopen(output, "wb"))) {
			cli_error("cannot write %s: %s", output, strerror(errno));
			trace_close(t);
			return 1;
		}
	} else if (!to_stdout) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", output, (int)getpid());
		if (!(out = fopen(tmp, "wb"))) {
			cli_error("cannot write %s: %s", output, strerror(errno));
			trace_close(t);
			return 1;
		}
	}
	view_buffer_output(out);
	int err = fn(t, out);
	/* One message for a write error, whether it happened while writing,
	 * at the last flush or at close. */
	if (view_close_output(out, to_stdout ? "standard output" : output))
		err = 1;
	if (!to_stdout && !in_place) {
		if (err)
			unlink(tmp);
		else if (rename(tmp, output)) {
			cli_error("cannot rename %s to %s: %s", tmp, output, strerror(errno));
			unlink(tmp);
			err = 1;
		}
	}
	view_close(t);
	return err;
}
