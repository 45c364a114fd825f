/* cmd_record.c - `needle record`: run a program with libneedle preloaded,
 * drain its shared trace buffer into a trace file, and write the metadata
 * (clock, process, threads) when it ends.  record.h lists the parts.
 *
 * Invariants:
 *  - Everything that can be refused is refused before the program starts:
 *    options, a program that cannot be found, a trace file that cannot or
 *    must not be written (record_output.c).  Once started, the program
 *    runs to its end, and needle record exits with its status (128+N for
 *    signal N), traced or not, with two exceptions, each said in one line:
 *    the agent stopped the program before main (no patchable entry,
 *    filters that match nothing: exit 1), and a trace file that could not
 *    be written in full (exit 1, after keeping what fit).
 *  - The trace file is replaced only when the agent reports that it
 *    records; then the modules, the sites and a first clock go in before
 *    any chunk.  If the program dies (SIGKILL, SIGSEGV), every event it
 *    wrote is still in the buffer: chunks it never published are salvaged
 *    from their release-stored fill level.
 *  - needle record is a child subreaper: processes the program forked and
 *    left behind become its children, and while any of them still maps
 *    the buffer the recording goes on (they write into it), unless the
 *    user stops it.  Each of these is said in one line on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/record.h"
#include "cli/record_hold.h"
#include "common/tsc.h"

volatile sig_atomic_t record_sigchld;
volatile sig_atomic_t record_stop;
static volatile sig_atomic_t program_done;
static pid_t child_pid;

static void on_sigchld(int sig)
{
	(void)sig;
	record_sigchld++;
}

/* SIGTERM, SIGHUP, and SIGINT or SIGQUIT sent by a process (kill, not the
 * terminal, whose Ctrl-C reaches the program's process group anyway): the
 * program gets them while it runs; afterwards they stop the recording of
 * what it left. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if ((sig == SIGINT || sig == SIGQUIT) && si->si_code == SI_KERNEL && !program_done)
		return; /* from the terminal: the program had it too */
	if (!program_done && child_pid > 0)
		kill(child_pid, sig);
	else
		record_stop = 1;
}

/* --sites: 1 compiled, 2 relocated, 3 all; 0 for anything else. */
static int sites_kind(const char *s)
{
	return !strcmp(s, "compiled") ? 1 : !strcmp(s, "relocated") ? 2 : !strcmp(s, "all") ? 3 : 0;
}

static const char record_usage[] =
	"usage: needle record [options] [--] PROG [ARGS]\n"
	"       needle record -p PID [options]\n"
	"  -p, --pid PID            record the running process PID: libneedle is loaded into it\n"
	"                           (one thread borrowed for about a millisecond; needle info gives\n"
	"                           every hold), until Ctrl-C, --duration, or its exit; then every\n"
	"                           function is unpatched\n"
	"      --duration=SECONDS   with -p: stop recording after SECONDS (decimals allowed)\n"
	"      --sites=KIND         all (default: compiled entries where there are, relocated elsewhere),\n"
	"                           compiled (only entries that -fpatchable-function-entry or -pg\n"
	"                           prepared), or relocated (every function that can be, libraries\n"
	"                           included: its first instructions move to a detour); NEEDLE_SITES\n"
	"                           in the environment sets the default\n"
	"  -o, --output FILE        trace file (default needle.data)\n"
	"  -f, --force              overwrite FILE even if it is not a needle trace\n"
	"  -t, --tracer NAME        function_graph (default) or function\n"
	"  -F, --filter GLOB        record only the calls of matching functions and everything they call\n"
	"                           (uftrace's -F; repeatable); C++ functions by their demangled names\n"
	"                           too: 'kv::Store::get', 'ns::*', 'scale(double)'\n"
	"  -F GLOB@ARG OP VALUE     ... only the calls whose argument ARG (argN, fpargN or a parameter's\n"
	"                           name, with /FORMAT) compares so: OP == != < <= > >=,\n"
	"                           e.g. -F 'kv_get@arg2>1000'\n"
	"  -N, --notrace GLOB       do not record the calls of matching functions, nor what they call\n"
	"                           (uftrace's -N; repeatable)\n"
	"  -P, --patch GLOB         patch only matching functions: each is recorded on its own, with\n"
	"                           no other call (ftrace's set_ftrace_filter; repeatable)\n"
	"  -U, --unpatch GLOB       do not patch matching functions (ftrace's set_ftrace_notrace)\n"
	"                           (with -p, -F and -N select single functions, as -P and -U)\n"
	"  -D, --depth N            function_graph: record N levels of nesting (from each -F call)\n"
	"      --nest-libcall       also record the calls libraries make (to other objects and to their\n"
	"                           own functions: every call); by default\n"
	"                           a library function no compiler prepared is recorded when the\n"
	"                           program (or an object built with patchable entries) calls it\n"
	"      --no-libcall         record no library function no compiler prepared\n"
	"      --match=glob|regex   how -F, -N, -P, -U and --trigger patterns match: a pattern with ^, $,\n"
	"                           .*, .+, .?, (, | or + is a regular expression (as uftrace's), found\n"
	"                           anywhere in the program's function names, others globs; regex: all\n"
	"  -A, --argument GLOB@SPEC record arguments of matching functions: SPEC is a comma list of\n"
	"                           argN (integer register N, 1-6; 7-255: the (N-6)-th stack word above\n"
	"                           the return address) and fpargN (xmm N-1, 1-8), each\n"
	"                           with /FORMAT: d u x c p f and bits (d32, x16, f32); e.g.\n"
	"                           -A 'kv_get@arg1/u,arg2/x'\n"
	"                           /s: the string an argument points to (see --max-string)\n"
	"  -R, --retval GLOB@SPEC   record return values: SPEC is retval[/FORMAT], e.g. -R 'kv_*@retval/d'\n"
	"                           with debug info, a value may be named by its parameter: 'kv_get@key/s'\n"
	"      --auto-args          record every argument and return value the debug info (DWARF, or a\n"
	"                           debug file under /usr/lib/debug) of the program and of the libraries\n"
	"                           it loads describes, by name and type (libc's with libc6-dbg);\n"
	"                           -A / -R for a function replace its side\n"
	"      --max-string=N       bytes of a /s string kept (default 64, at most 256)\n"
	"      --wait               the program wakes the reader when half the buffer is queued;\n"
	"                           the reader also looks every 50 ms (default)\n"
	"      --poll=MS            the reader polls every MS ms; the program never wakes it\n"
	"      --buffer-percent=N   wake the reader only when N% of the buffer is full\n"
	"      --buffer-size=MB     shared buffer size (default 16)\n"
	"      --chunk-size=KB      chunk size (default 16)\n"
	"      --ctl                let 'needle ctl PID' change filters and tracer while it runs\n"
	"                           (adds a thread, needle-ctl, to a program it starts)\n"
	"      --snapshot[=MB]      flight recorder: keep the newest events in overwrite rings of MB\n"
	"                           (default 64) and write them out only when asked: SIGUSR2 to\n"
	"                           needle record, or 'needle ctl PID snapshot' with --ctl (FILE.1,\n"
	"                           FILE.2, ...), a trigger (likewise), the program's end or crash (FILE)\n"
	"      --trigger SPEC       with --snapshot: 'FUNC>DURATION' (a call of FUNC longer than\n"
	"                           DURATION, e.g. handle_request>5ms) or 'FUNC' (FUNC entered);\n"
	"                           repeatable.  With triggers, a normal end writes no snapshot\n"
	"      --trigger-after=DUR  keep recording DUR after a trigger before the snapshot\n"
	"      --max-snapshots=N    at most N snapshots while the program runs (default 10)\n"
	"      --snapshot-interval=DUR  at least DUR between two snapshots (default 1s)\n"
	"PROG's exit status is needle record's.  Processes PROG forks record into the same\n"
	"buffer; when PROG exits before them, recording goes on until they exit (Ctrl-C stops it).\n";

static int append_glob(char **list, const char *glob)
{
	size_t old = *list ? strlen(*list) : 0;
	char *n = realloc(*list, old + strlen(glob) + 2);
	if (!n)
		return -1;
	if (old)
		n[old++] = '\n';
	strcpy(n + old, glob);
	*list = n;
	return 0;
}

/* Half of the machine's memory: the most a trace buffer may take (it is
 * populated up front). */
static uint64_t memory_half(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size / 2 : UINT64_MAX;
}

/* "5ms", "1.5s", "200us", "100ns" (a number alone is seconds). */
static int parse_duration(const char *what, const char *text, uint64_t *ns)
{
	char *end;
	double v = strtod(text, &end);
	double unit = !strcmp(end, "ns") ? 1 : !strcmp(end, "us") ? 1e3 : !strcmp(end, "ms") ? 1e6
		    : (!strcmp(end, "s") || !*end) ? 1e9 : 0;

	if (end == text || !unit || !(v >= 0)) {
		cli_error("%s needs a duration such as 5ms, 200us or 1.5s, not '%s'", what, text);
		return -1;
	}
	if (v * unit > 1e15) {
		cli_error("%s: '%s' is too long (at most 1000000s)", what, text);
		return -1;
	}
	*ns = (uint64_t)(v * unit);
	return 0;
}

/* --trigger 'FUNC>DURATION' or 'FUNC': one "FUNC\tNS" line (NS 0: on
 * entry).  The duration follows the last '>' when a number does: a C++
 * name may hold '>' ("Box<int>::sum", "operator>>") and spaces
 * ("operator new"). */
static int add_trigger(struct record_opts *o, const char *spec)
{
	const char *gt = strrchr(spec, '>');
	if (gt && !((gt[1] >= '0' && gt[1] <= '9') || gt[1] == '.'))
		gt = NULL;
	size_t name_len = gt ? (size_t)(gt - spec) : strlen(spec);
	uint64_t ns = 0;
	char line[512];

	if (!name_len || name_len > 256 || strpbrk(spec, "\t\n")) {
		cli_error("--trigger needs FUNC or FUNC>DURATION (e.g. handle_request>5ms), not '%s'", spec);
		return -1;
	}
	if (gt && parse_duration("--trigger FUNC>DURATION", gt + 1, &ns))
		return -1;
	if (gt && !ns) {
		cli_error("--trigger '%s': the duration must be more than 0 (or give FUNC alone)", spec);
		return -1;
	}
	snprintf(line, sizeof(line), "%.*s\t%llu", (int)name_len, spec, (unsigned long long)ns);
	if (!o->trigger_text)
		o->trigger_text = strdup(spec);
	return append_glob(&o->triggers, line);
}

static int parse_opts(int argc, char **argv, struct record_opts *o)
{
	enum { OPT_WAIT = 256, OPT_POLL, OPT_PERCENT, OPT_BUFSIZE, OPT_CHUNK, OPT_CTL, OPT_DURATION, OPT_SITES,
	       OPT_SNAPSHOT, OPT_TRIGGER, OPT_TRIGGER_AFTER, OPT_MAX_SNAPSHOTS, OPT_SNAPSHOT_GAP, OPT_MAX_STRING, OPT_AUTO_ARGS,
	       OPT_NEST_LIBCALL, OPT_NO_LIBCALL, OPT_MATCH };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },  { "tracer", required_argument, NULL, 't' },
		{ "filter", required_argument, NULL, 'F' },  { "notrace", required_argument, NULL, 'N' },
		{ "depth", required_argument, NULL, 'D' },   { "wait", no_argument, NULL, OPT_WAIT },
		{ "poll", required_argument, NULL, OPT_POLL }, { "buffer-percent", required_argument, NULL, OPT_PERCENT },
		{ "buffer-size", required_argument, NULL, OPT_BUFSIZE },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK }, { "help", no_argument, NULL, 'h' },
		{ "ctl", no_argument, NULL, OPT_CTL }, { "force", no_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' }, { "duration", required_argument, NULL, OPT_DURATION },
		{ "sites", required_argument, NULL, OPT_SITES },
		{ "argument", required_argument, NULL, 'A' }, { "retval", required_argument, NULL, 'R' },
		{ "max-string", required_argument, NULL, OPT_MAX_STRING },
		{ "auto-args", no_argument, NULL, OPT_AUTO_ARGS },
		{ "patch", required_argument, NULL, 'P' }, { "unpatch", required_argument, NULL, 'U' },
		{ "match", required_argument, NULL, OPT_MATCH },
		{ "nest-libcall", no_argument, NULL, OPT_NEST_LIBCALL }, { "no-libcall", no_argument, NULL, OPT_NO_LIBCALL },
		{ "snapshot", optional_argument, NULL, OPT_SNAPSHOT }, { "trigger", required_argument, NULL, OPT_TRIGGER },
		{ "trigger-after", required_argument, NULL, OPT_TRIGGER_AFTER },
		{ "max-snapshots", required_argument, NULL, OPT_MAX_SNAPSHOTS },
		{ "snapshot-interval", required_argument, NULL, OPT_SNAPSHOT_GAP },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	o->output = "needle.data";
	o->tracer = TRACER_FUNCTION_GRAPH;
	o->buffer_bytes = 16ull << 20;
	o->chunk_bytes = 16u << 10;
	o->wake_mode = WAKE_WAIT;
	o->max_snapshots = 10;
	o->snapshot_gap_ns = 1000000000ull;
	int snapshot_opts_given = 0, wake_given = 0;
	/* NEEDLE_SITES in needle record's environment sets the default. */
	const char *env_sites = getenv("NEEDLE_SITES");
	o->sites = 3;
	if (env_sites && *env_sites && !(o->sites = sites_kind(env_sites))) {
		cli_error("NEEDLE_SITES needs compiled, relocated or all, not '%s'", env_sites);
		return -1;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:ft:F:N:P:U:D:p:A:R:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'A':
		case 'R':
			if (record_args_add(o, optarg, c == 'R'))
				return -1;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 't':
			if (!strcmp(optarg, "function_graph")) {
				o->tracer = TRACER_FUNCTION_GRAPH;
			} else if (!strcmp(optarg, "function")) {
				o->tracer = TRACER_FUNCTION;
			} else {
				cli_error("unknown tracer '%s' (function_graph or function)", optarg);
				return -1;
			}
			break;
		case 'F':
			if (strchr(optarg, '@') ? record_filter_add(o, optarg) : append_glob(&o->subtree, optarg))
				return -1;
			break;
		case 'N':
			if (append_glob(&o->drop, optarg))
				return -1;
			break;
		case 'P':
			if (append_glob(&o->filter, optarg))
				return -1;
			break;
		case 'U':
			if (append_glob(&o->notrace, optarg))
				return -1;
			break;
		case OPT_MATCH:
			if (strcmp(optarg, "regex") && strcmp(optarg, "glob")) {
				cli_error("--match needs regex or glob, not '%s'", optarg);
				return -1;
			}
			o->match_regex = !strcmp(optarg, "regex") ? 1 : 2;
			break;
		case OPT_NEST_LIBCALL:
		case OPT_NO_LIBCALL:
			if (o->libcall && o->libcall != (c == OPT_NEST_LIBCALL ? 1 : 2)) {
				cli_error("record: --nest-libcall and --no-libcall ask for opposite things; give one");
				return -1;
			}
			o->libcall = c == OPT_NEST_LIBCALL ? 1 : 2;
			break;
		case 'D':
			o->depth = (int)strtol(optarg, &end, 10);
			if (*end || o->depth < 1) {
				cli_error("--depth needs a positive number, not '%s'", optarg);
				return -1;
			}
			break;
		case OPT_WAIT:
			o->wake_mode = WAKE_WAIT;
			wake_given = 1;
			break;
		case OPT_POLL:
			o->wake_mode = WAKE_POLL;
			wake_given = 1;
			o->wake_arg = (int)strtol(optarg, &end, 10);
			if (*end || o->wake_arg < 1 || o->wake_arg > 60000) {
				cli_error("--poll needs milliseconds between 1 and 60000, not '%s'", optarg);
				return -1;
			}
			break;
		case OPT_PERCENT:
			o->wake_mode = WAKE_PERCENT;
			wake_given = 1;
			o->wake_arg = (int)strtol(optarg, &end, 10);
			if (*end || o->wake_arg < 1 || o->wake_arg > 100) {
				cli_error("--buffer-percent needs a number from 1 to 100, not '%s'", optarg);
				return -1;
			}
			break;
		case OPT_BUFSIZE: {
			long mb = strtol(optarg, &end, 10);
			if (*end || mb < 1 || mb > 65536) {
				cli_error("--buffer-size needs megabytes from 1 to 65536, not '%s'", optarg);
				return -1;
			}
			o->buffer_bytes = (uint64_t)mb << 20;
			break;
		}
		case OPT_SNAPSHOT: {
			long mb = 64;
			if (optarg) {
				mb = strtol(optarg, &end, 10);
				if (*end || end == optarg || mb < 1 || mb > 65536) {
					cli_error("--snapshot needs megabytes from 1 to 65536, not '%s'", optarg);
					return -1;
				}
			}
			o->snapshot = 1;
			o->buffer_bytes = (uint64_t)mb << 20;
			break;
		}
		case OPT_TRIGGER:
			if (add_trigger(o, optarg))
				return -1;
			break;
		case OPT_TRIGGER_AFTER:
			if (parse_duration("--trigger-after", optarg, &o->trigger_after_ns))
				return -1;
			snapshot_opts_given = 1;
			break;
		case OPT_SNAPSHOT_GAP:
			if (parse_duration("--snapshot-interval", optarg, &o->snapshot_gap_ns))
				return -1;
			snapshot_opts_given = 1;
			break;
		case OPT_AUTO_ARGS:
			o->auto_args = 1;
			break;
		case OPT_MAX_STRING: {
			long n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 8 || n > 256) {
				cli_error("--max-string needs a number of bytes from 8 to 256, not '%s'", optarg);
				return -1;
			}
			o->max_string = (unsigned)n;
			break;
		}
		case OPT_MAX_SNAPSHOTS: {
			long n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 1 || n > 1000000) {
				cli_error("--max-snapshots needs a number from 1 to 1000000, not '%s'", optarg);
				return -1;
			}
			o->max_snapshots = (unsigned)n;
			snapshot_opts_given = 1;
			break;
		}
		case OPT_CHUNK: {
			long kb = strtol(optarg, &end, 10);
			if (*end || kb < 1 || kb > 4096) {
				cli_error("--chunk-size needs kilobytes from 1 to 4096, not '%s'", optarg);
				return -1;
			}
			o->chunk_bytes = (uint32_t)kb << 10;
			break;
		}
		case OPT_CTL:
			o->ctl = 1;
			break;
		case 'p': {
			long pid = strtol(optarg, &end, 10);
			if (*end || end == optarg || pid < 1 || pid > 4194304) {
				cli_error("-p needs a process ID, not '%s'", optarg);
				return -1;
			}
			o->attach_pid = (pid_t)pid;
			break;
		}
		case OPT_SITES:
			if (!(o->sites = sites_kind(optarg))) {
				cli_error("--sites needs compiled, relocated or all, not '%s'", optarg);
				return -1;
			}
			break;
		case OPT_DURATION: {
			double secs = strtod(optarg, &end);
			if (*end || end == optarg || !(secs > 0) || secs > 1e7) {
				cli_error("--duration needs a number of seconds greater than 0, not '%s'", optarg);
				return -1;
			}
			o->duration_ns = (uint64_t)(secs * 1e9);
			break;
		}
		case 'h':
			fputs(record_usage, stdout);
			exit(0);
		default:
			fputs(record_usage, stderr);
			return -1;
		}
	}
	/* The session with a running process carries patch filters only:
	 * there -F and -N select single functions. */
	if (o->attach_pid && (o->subtree || o->drop)) {
		if ((o->subtree && append_glob(&o->filter, o->subtree)) || (o->drop && append_glob(&o->notrace, o->drop)))
			return -1;
		free(o->subtree);
		free(o->drop);
		o->subtree = o->drop = NULL;
	}
	if (o->attach_pid && optind < argc) {
		cli_error("record: -p records a running process; give either -p PID or a program, not both");
		return -1;
	}
	if (o->duration_ns && !o->attach_pid) {
		cli_error("record: --duration needs -p (a program started by needle record is recorded to its end)");
		return -1;
	}
	if (o->tracer == TRACER_FUNCTION && o->arg_specs &&
	    (o->arg_specs[0] == 'R' || strstr(o->arg_specs, "\nR"))) {
		cli_error("record: -R records return values, which the function tracer (-t function) never sees");
		return -1;
	}
	if (!o->snapshot && (o->triggers || snapshot_opts_given)) {
		cli_error("record: --trigger, --trigger-after, --max-snapshots and --snapshot-interval need --snapshot");
		return -1;
	}
	if (o->snapshot && wake_given) {
		cli_error("record: --wait, --poll and --buffer-percent choose how a streaming reader wakes; "
			  "--snapshot has no reader while the program runs");
		return -1;
	}
	if (o->buffer_bytes > memory_half()) {
		cli_error("record: a %llu MiB buffer is more than half of this machine's memory (%llu MiB); "
			  "give a smaller size", (unsigned long long)(o->buffer_bytes >> 20),
			  (unsigned long long)(memory_half() >> 19));
		return -1;
	}
	if (o->snapshot) {
		/* Every thread needs a chunk of its own, and the rings need
		 * room to turn: at least 64 chunks. */
		if (o->buffer_bytes / o->chunk_bytes < 64) {
			cli_error("--snapshot=%llu: too small for one %u KiB chunk per thread and room to overwrite "
				  "(at least 64 chunks: %llu MiB); give a larger size or a smaller --chunk-size",
				  (unsigned long long)(o->buffer_bytes >> 20), o->chunk_bytes >> 10,
				  (unsigned long long)((64ull * o->chunk_bytes + (1 << 20) - 1) >> 20));
			return -1;
		}
	}
	if (o->attach_pid)
		return optind;
	if (optind >= argc) {
		cli_error("record: no program given");
		fputs(record_usage, stderr);
		return -1;
	}
	if (o->buffer_bytes / o->chunk_bytes < 2) {
		cli_error("the buffer must hold at least two chunks");
		return -1;
	}
	return optind;
}

static void write_clock(struct recording *r, uint64_t raw1, uint64_t ns1)
{
	struct sec_clock clock = { .source = TRACE_CLOCK_TSC, .raw0 = r->raw0, .ns0 = r->ns0, .raw1 = raw1, .ns1 = ns1 };

	if (r->shm->clock_source == CLOCK_SOURCE_MONOTONIC)
		clock = (struct sec_clock){ .source = TRACE_CLOCK_MONOTONIC, .raw0 = 0, .ns0 = 0, .raw1 = 1, .ns1 = 1 };
	if (clock.raw1 <= clock.raw0)
		clock.raw1 = clock.raw0 + 1;
	trace_writer_section(&r->w, SEC_CLOCK, &clock, sizeof(clock));
}

/* The agent records: the old file goes; the header, the symbols and a
 * first clock (from the start to now) come in, so that a file cut short
 * later still names its functions and times its events. */
void record_begin_file(struct recording *r)
{
	if (!record_out_begin(r)) {
		record_write_symbols(r);
		if (r->o->arg_labels)
			trace_writer_section(&r->w, SEC_ARGS, r->o->arg_labels, strlen(r->o->arg_labels));
		write_clock(r, tsc_read(), monotonic_ns());
	}
	record_out_commit(r);
}

void record_begin(struct recording *r)
{
	record_begin_file(r);
	if (r->o->ctl)
		fprintf(stderr, "needle: recording PID %d; control it with: needle ctl %d COMMAND\n", (int)r->pid,
			(int)r->pid);
}

/* The closing sections, for what the file holds up to mark m.  Events
 * drained but not in the file (after a write error) are counted lost. */
int record_write_tail(struct recording *r, const struct out_mark *m, int minimal)
{
	/* The objects dlopen'ed after the start: the agent appended them. */
	if (r->meta_off > 0)
		record_write_symbols(r);
	write_clock(r, r->raw1, r->ns1);
	record_write_process(r, r->status, r->argv);
	if (r->attached)
		trace_writer_section(&r->w, SEC_ATTACH, &r->attach, sizeof(r->attach));
	if (r->snapshot)
		trace_writer_section(&r->w, SEC_SNAPSHOT, r->snapshot, sizeof(*r->snapshot));
	if (!minimal)
		record_write_threads(r);
	struct sec_end end = {
		.events = m->events,
		/* A snapshot counts what its own window lost, not the
		 * recording's total (which includes what a freeze dropped
		 * after it). */
		.lost_events = (r->snapshot ? r->snapshot_lost : atomic_load(&r->shm->lost_events)) +
			       (r->drained - m->events),
		.chunks = m->chunks,
		.producer_wakeups = atomic_load(&r->shm->producer_wakeups),
		.salvaged_chunks = m->salvaged,
		.sites_traced = r->sites_traced,
		.threads_refused = atomic_load(&r->shm->threads_refused),
		.threads_shared_tls = atomic_load(&r->shm->threads_shared_tls),
		.funcs_entry_only = atomic_load(&r->shm->funcs_entry_only),
	};
	return trace_writer_section(&r->w, SEC_END, &end, sizeof(end));
}

int record_finish(struct recording *r)
{
	const char *output = r->o->output;

	record_drain(r, 1);
	record_salvage(r);
	r->raw1 = tsc_read();
	r->ns1 = monotonic_ns();
	char agent_err[512];
	record_read_result(r, &r->sites_traced, agent_err, sizeof(agent_err));

	struct out_mark kept = { 0 };
	int fin = record_out_finish(r, record_write_tail, &kept);
	int werr = r->out.err;
	trace_writer_finish(&r->w); /* frees; the file is already flushed */
	if (fin < 0 && !r->out.have_base) {
		/* Not even the header and the symbols fit: nothing to read. */
		unlink(output);
		cli_error("cannot write %s: %s; no trace was kept", output, strerror(werr));
	} else if (fin < 0) {
		cli_error("cannot write %s: %s; kept the first %llu events (%llu more not written), without an END "
			  "section: views read it up to its last chunk", output, strerror(werr),
			  (unsigned long long)kept.events, (unsigned long long)(r->drained - kept.events));
	} else if (werr) {
		cli_error("cannot write %s: %s; kept the first %llu events (%llu more not written), the trace ends "
			  "there", output, strerror(werr), (unsigned long long)kept.events,
			  (unsigned long long)(r->drained - kept.events));
	} else {
		uint64_t lost = atomic_load(&r->shm->lost_events);
		fprintf(stderr, "needle: recorded %llu events from %zu threads into %s", (unsigned long long)kept.events,
			r->thread_cnt, output);
		if (lost)
			fprintf(stderr, "; %llu events LOST (buffer full: try --buffer-size)", (unsigned long long)lost);
		fputc('\n', stderr);
	}
	record_out_close(&r->out);
	return werr ? 1 : 0;
}

/* Reap what has ended: the program (its status kept) and the orphans
 * adopted as subreaper.  1 once the program has ended. */
static int reap(struct recording *r)
{
	int st;
	pid_t w;

	while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
		if (w == r->pid) {
			r->status = st;
			program_done = 1;
		}
	}
	return program_done;
}

static int exit_status(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* "(PID 12)" or "(PIDs 12, 13 and 4 more)" */
static void format_pids(char *buf, size_t len, const pid_t *pids, size_t n, size_t shown)
{
	int off = snprintf(buf, len, "(PID%s ", n > 1 ? "s" : "");
	for (size_t i = 0; i < shown && off > 0 && (size_t)off < len; i++)
		off += snprintf(buf + off, len - (size_t)off, "%s%d", i ? ", " : "", (int)pids[i]);
	if (off > 0 && (size_t)off < len && n > shown)
		off += snprintf(buf + off, len - (size_t)off, " and %zu more", n - shown);
	if (off > 0 && (size_t)off < len)
		snprintf(buf + off, len - (size_t)off, ")");
}

/* The program has exited, but processes it forked may still write into
 * the buffer: drain until none maps it, or the user stops the recording. */
static void follow_descendants(struct recording *r)
{
	struct stat st;
	struct sigaction sa;
	siginfo_t si;
	pid_t pids[8];
	char list[160];
	size_t n;

	/* Every live descendant has a live parent among them, or is ours by
	 * now: with no child at all, there is nothing to look for. */
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) && errno == ECHILD)
		return;
	if (fstat(r->buf_fd, &st) || !(n = record_descendants(st.st_ino, pids, 8)))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGINT, &sa, NULL);
	format_pids(list, sizeof(list), pids, n, n < 8 ? n : 8);
	cli_error("%s exited; recording the processes it left running %s until they exit (Ctrl-C stops)",
		  r->argv[0], list);
	sig_atomic_t checked = record_sigchld;
	uint64_t last = monotonic_ns();
	for (;;) {
		sig_atomic_t seen = record_sigchld;
		reap(r);
		if (record_buffer_ready(r))
			record_drain(r, 0);
		if (record_stop)
			break;
		/* On every SIGCHLD, else five times a second: a grandchild's
		 * end is not signalled here. */
		uint64_t now = monotonic_ns();
		if (seen != checked || now - last >= 200000000ull) {
			checked = seen;
			last = now;
			if (!record_descendants(st.st_ino, pids, 8))
				return;
		}
		record_wait(r, seen, -1);
	}
	if ((n = record_descendants(st.st_ino, pids, 8))) {
		format_pids(list, sizeof(list), pids, n, n < 8 ? n : 8);
		list[strlen(list) - 1] = 0;
		cli_error("stopped; %s %s unrecorded", list + 1, n > 1 ? "go on" : "goes on");
	}
}

/* The agent never recorded.  Either it never started (a static program,
 * or one that drops LD_PRELOAD) or could not do its part (out of memory):
 * the program ran untraced and its status is needle record's, with a
 * warning.  Or the request cannot be met (no patchable entry, filters
 * that match nothing): then it ended the program before main, so that
 * nothing runs untraced by mistake, and that is an error. */
static int not_traced(struct recording *r, uint32_t state)
{
	char agent_err[512];
	uint64_t sites;
	const char *prog = r->argv[0];

	record_read_result(r, &sites, agent_err, sizeof(agent_err));
	record_out_abandon(&r->out);
	if (state == AGENT_FAILED) {
		cli_error("%s%s; %s was stopped before main, and no trace was written",
			  agent_err[0] ? agent_err : "recording failed in the program",
			  r->shm->agent_error == -ENOENT && !strstr(agent_err, "--trigger") ? " (check -F and -N)" : "",
			  prog);
		return 1;
	}
	if (state == AGENT_UNTRACED) {
		cli_error("warning: %s was not traced: %s; it ran untraced, and no trace was written", prog,
			  agent_err[0] ? agent_err : "libneedle failed in it");
		return exit_status(r->status);
	}
	cli_error("warning: %s was not traced: libneedle did not start in it (is it statically linked, or does it "
		  "drop LD_PRELOAD?); it ran untraced, and no trace was written", prog);
	return exit_status(r->status);
}

/* --snapshot: the program runs with overwrite rings; snapshots are taken
 * as record_snapshot.c's service decides, and a last one when the
 * program ends (always after a crash; after a normal end only without
 * triggers). */
static int snapshot_run(struct recording *r)
{
	struct shm_header *h = r->shm;
	struct snapshot_service ss = { 0 };

	for (;;) {
		sig_atomic_t seen = record_sigchld;
		uint32_t word = atomic_load(&h->wake_word);
		if (!ss.started && atomic_load(&h->agent_state) == AGENT_RECORDING)
			snapshot_service_start(&ss, r);
		uint64_t wait_ns = ss.started ? snapshot_service_poll(&ss, r) : 10000000ull;
		if (reap(r))
			break;
		if (record_sigchld == seen)
			snapshot_service_wait(&ss, r, word, wait_ns);
	}
	uint32_t state = atomic_load(&h->agent_state);
	if (!ss.started && state != AGENT_RECORDING)
		return not_traced(r, state);
	int crashed = WIFSIGNALED(r->status);
	int werr = snapshot_service_end(&ss, r, crashed ? TRACE_SNAPSHOT_CRASH : TRACE_SNAPSHOT_END);
	if (crashed)
		cli_error("%s was killed by signal %d (%s)", r->argv[0], WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
	return werr ? 1 : exit_status(r->status);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct recording r = { 0 };
	char agent[PATH_MAX], prog[PATH_MAX];
	int first = parse_opts(argc, argv, &o);
	int exec_errno, ret = 1;

	if (first < 0)
		return 2;
	/* Before anything that takes time: a SIGUSR2 now must not kill us. */
	if (o.snapshot)
		snapshot_catch_sigusr2();
	r.o = &o;
	r.argv = argv + first;
	r.buf_fd = r.meta_fd = -1;
	if (record_find_agent(agent, sizeof(agent))) {
		cli_error("cannot find libneedle.so next to the needle binary; set NEEDLE_LIB to its path");
		return 1;
	}
	if (o.attach_pid)
		return record_attach(&r, agent);
	int perr = record_find_program(r.argv[0], prog, sizeof(prog));
	if (perr) {
		cli_error("cannot run %s: %s", r.argv[0], perr == -ENOENT ? "command not found" : strerror(-perr));
		return 127;
	}
	/* Found in the current directory (not in PATH): execvp would not. */
	if (!strchr(r.argv[0], '/') && !strncmp(prog, "./", 2))
		r.argv[0] = prog;
	struct program_libs libs = { 0 };
	if (o.auto_args || o.arg_specs || o.value_filters)
		program_libs_of_file(prog, &libs);
	int args_err = record_args_resolve(&o, prog, &libs) || record_expand_cxx_patterns(&o, prog);
	program_libs_free(&libs);
	if (args_err)
		return 1;
	/* A file size limit (ulimit -f) is a write error (EFBIG), for the
	 * trace file and the buffer alike, not a reason to die. */
	record_note_inherited_signals();
	signal(SIGXFSZ, SIG_IGN);
	if (record_out_open(&r.out, o.output, o.force) || (o.snapshot && record_snapshot_check(&r)))
		return 1;
	if (!(r.shm = record_buffer_create(&o, &r.buf_fd))) {
		cli_error("cannot create a %llu MiB trace buffer: %s%s", (unsigned long long)(o.buffer_bytes >> 20),
			  strerror(errno), errno == EFBIG ? " (the file size limit, ulimit -f, applies to it too: "
			  "try a smaller --buffer-size)" : "");
		goto abandon;
	}
	r.meta_fd = record_meta_create();
	if (r.meta_fd < 0) {
		cli_error("cannot create the metadata file: %s", strerror(errno));
		goto abandon;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sigaction(SIGCHLD, &sa, NULL); /* no SA_RESTART: it interrupts the futex wait */
	/* A signal the caller ignored (nohup, a background job) stays
	 * ignored, here and in the program. */
	sa.sa_handler = NULL;
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	static const int forwarded[] = { SIGTERM, SIGHUP, SIGINT, SIGQUIT };
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		if (!record_signal_was_ignored(forwarded[i]))
			sigaction(forwarded[i], &sa, NULL);
	/* Orphans of the program become ours: they may still record. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	r.raw0 = tsc_read();
	r.ns0 = monotonic_ns();
	r.pid = child_pid = record_spawn(r.argv, agent, r.buf_fd, r.meta_fd, &o, &exec_errno);
	if (r.pid < 0) {
		cli_error("cannot start %s: %s", r.argv[0], strerror(errno));
		goto abandon;
	}
	if (exec_errno) {
		waitpid(r.pid, NULL, 0);
		cli_error("cannot run %s: %s", r.argv[0], strerror(exec_errno));
		ret = 127;
		goto abandon;
	}

	/* Threads that block every signal are held with ptrace for the
	 * agent's patch batches (record_hold.c). */
	static struct record_hold hold;
	record_hold_start(&hold, r.shm, r.pid);
	if (o.snapshot)
		return snapshot_run(&r);
	for (;;) {
		sig_atomic_t seen = record_sigchld;
		if (!r.out.begun && atomic_load(&r.shm->agent_state) == AGENT_RECORDING)
			record_begin(&r);
		if (r.out.begun && record_buffer_ready(&r))
			record_drain(&r, 0);
		if (reap(&r))
			break;
		/* Until the agent records, look often: the --ctl line is
		 * printed then, and nothing wakes this loop for it. */
		record_wait(&r, seen, r.out.begun ? -1 : 10);
	}
	uint32_t state = atomic_load(&r.shm->agent_state);
	if (!r.out.begun && state == AGENT_RECORDING)
		record_begin(&r);
	if (!r.out.begun)
		return not_traced(&r, state);
	follow_descendants(&r);
	int werr = record_finish(&r);
	if (WIFSIGNALED(r.status))
		cli_error("%s was killed by signal %d (%s)", r.argv[0], WTERMSIG(r.status), strsignal(WTERMSIG(r.status)));
	return werr ? 1 : exit_status(r.status);

abandon:
	record_out_abandon(&r.out);
	return ret;
}
