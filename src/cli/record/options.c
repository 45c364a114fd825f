/* options.c - needle record's command line: every option read,
 * checked alone and against the others, into struct record_opts, before
 * anything starts (an option refused is exit 2, nothing created).
 *
 * Invariants: parsing has no side effect but the options it fills and
 * its messages (--help prints and exits 0); the limits of -A/-R/-F value
 * specs are args/'s, those of the buffer and chunks are here. */
#include <getopt.h>
#include <regex.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/record/record.h"
#include "cli/util/cli_util.h"
#include "cli/record/kernel.h"
#include "cli/util/trigger_spec.h"
#include "common/pattern.h"
#include "common/value_spec.h"
#include "reader/sym_source.h"

/* A word of the views' default options (SEC_VIEW_OPTS), kept in the
 * order given: 0, or -1 out of memory. */
static int view_opt_add(struct record_opts *o, const char *word)
{
	size_t n = strlen(word) + 1;
	char *p = realloc(o->view_opts, o->view_opts_len + n);

	if (!p) {
		cli_error("out of memory");
		return -1;
	}
	memcpy(p + o->view_opts_len, word, n);
	o->view_opts = p;
	o->view_opts_len += n;
	return 0;
}

static int view_opt_add2(struct record_opts *o, const char *opt, const char *arg)
{
	return view_opt_add(o, opt) || view_opt_add(o, arg);
}

/* -F GLOB@...: a value filter (GLOB@ARG OP VALUE) when the part after
 * the '@' compares, else uftrace's FUNC@depth=N or FUNC@MODULE. */
struct syms_text {
	char *buf;
	size_t len, cap;
};

static int syms_line(void *arg, const char *object, const uint8_t *id, size_t id_len, uint64_t addr, uint64_t size,
		     const char *name)
{
	struct syms_text *t = arg;
	size_t need = strlen(object) + strlen(name) + 48 + 2 * id_len;
	if (t->len + need > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 65536;
		while (cap < t->len + need)
			cap *= 2;
		char *b = realloc(t->buf, cap);
		if (!b)
			return -1;
		t->buf = b;
		t->cap = cap;
	}
	/* elf_image.h's line: OBJECT BUILDID ADDR SIZE NAME */
	t->len += (size_t)snprintf(t->buf + t->len, t->cap - t->len, "%s\t", object);
	for (size_t i = 0; i < id_len; i++)
		t->len += (size_t)snprintf(t->buf + t->len, t->cap - t->len, "%02x", id[i]);
	t->len += (size_t)snprintf(t->buf + t->len, t->cap - t->len, "%s\t%llx\t%llx\t%s\n", id_len ? "" : "-",
				   (unsigned long long)addr, (unsigned long long)size, name);
	return 0;
}

/* --with-syms PATH as the agent takes it (record_config's syms): every
 * function PATH names, a line each.  NULL after saying why. */
static char *with_syms_lines(const char *path)
{
	char err[512];
	struct sym_source *s = sym_source_open(path, err, sizeof(err));
	if (!s) {
		cli_error("record: --with-syms: %s", err);
		return NULL;
	}
	struct syms_text t = { 0 };
	int rc = sym_source_each(s, syms_line, &t);
	sym_source_close(s);
	if (rc || !t.buf) {
		free(t.buf);
		cli_error("record: --with-syms: out of memory");
		return NULL;
	}
	if (t.len > RECORD_CONFIG_ARGS_MAX) {
		free(t.buf);
		cli_error("record: --with-syms: %s names more functions than a recording takes (%u MiB of names)", path,
			  RECORD_CONFIG_ARGS_MAX >> 20);
		return NULL;
	}
	return t.buf;
}

static int is_value_filter(const char *arg)
{
	const char *at = strchr(arg, '@');
	return at && strpbrk(at, "<>!=") && strncmp(at + 1, "depth=", 6);
}

/* --sites: RECORD_SITES_*; 0 for anything else. */
static int sites_kind(const char *s)
{
	return !strcmp(s, "compiled")	 ? RECORD_SITES_COMPILED
	       : !strcmp(s, "relocated") ? RECORD_SITES_RELOCATED
	       : !strcmp(s, "all")	 ? RECORD_SITES_ALL
					 : 0;
}

static const char record_usage[] =
	"usage: needle record [options] [--] PROG [ARGS]\n"
	"       needle record -p PID [options]\n"
	"  -p, --pid PID            record the running process PID: libneedle is loaded into it\n"
	"                           (one thread borrowed for about a millisecond; needle info gives\n"
	"                           every hold), until Ctrl-C, --duration, or its exit; then every\n"
	"                           function is unpatched\n"
	"      --duration=SECONDS   with -p: stop recording SECONDS (decimals allowed) after every\n"
	"                           object's functions record\n"
	"      --sites=KIND         all (default: compiled entries where there are, relocated elsewhere),\n"
	"                           compiled (only entries that -fpatchable-function-entry or -pg\n"
	"                           prepared), or relocated (every function that can be, libraries\n"
	"                           included: its first instructions move to a detour); NEEDLE_SITES\n"
	"                           in the environment sets the default\n"
	"  -o, --output FILE        trace file (default needle.data); -d FILE, uftrace's spelling, too\n"
	"      --force              overwrite FILE even if it is not a needle trace\n"
	"      --host HOST          send the trace to 'needle recv' on HOST (uftrace's --host) while\n"
	"                           recording, under -o's file name, instead of writing it here; it\n"
	"                           is said to be stored only when the receiver has all of it\n"
	"      --port N             the receiver's TCP port (default 8090, uftrace's)\n"
	"  -f, --output-fields LIST the views' columns (uftrace's -f: see needle replay --help)\n"
	"      --tracer NAME        function_graph (default) or function (-t NAME too)\n"
	"  -e, --estimate-return    function_graph without hooking any return (uftrace's): a call\n"
	"                           ends at the thread's next traced entry at or above its stack\n"
	"                           pointer, so its duration runs to that entry; no -R values\n"
	"      --time               when the program ends, its elapsed, system and user time\n"
	"                           (uftrace's)\n"
	"  -t, --time-filter TIME   the views show only calls of TIME or more (e.g. 1ms) and the calls\n"
	"                           they are in (uftrace's -t; the trace keeps every call)\n"
	"  -T FUNC@ACTION,...       uftrace's triggers, for the views (see needle replay --help); the\n"
	"                           items argN, fpargN, retval (with /FORMAT) and auto-args record values\n"
	"                           as -A FUNC@argN, -R FUNC@retval and -A FUNC -R FUNC do; read=proc/statm\n"
	"                           and read=page-fault record the process's memory (KB) and page\n"
	"                           faults at FUNC's entry and exit (two system calls a call of FUNC),\n"
	"                           shown inside the call, then their differences; finish also\n"
	"                           ends the recording at FUNC's entry (nothing after is written)\n"
	"  -H, --hide GLOB          the views do not show matching functions, only what they call\n"
	"  -C, --caller-filter GLOB the views show the calls of matching functions and their callers\n"
	"      --demangle=simple|full|no  how the views show C++ names (see needle replay --help)\n"
	"  -W, --watch cpu          each recorded call notes the CPU its thread runs on when it\n"
	"                           changed since the thread's last (replay: /* watch:cpu (cpu=N) */)\n"
	"      --with-syms PATH     names for the functions of stripped objects, which have none of\n"
	"                           their own (-F and the other filters match them): from PATH, a\n"
	"                           trace recorded before they were stripped, or a directory of their\n"
	"                           unstripped files (or OBJECT.debug files)\n"
	"  -Z, --size-filter SIZE   functions whose code is smaller than SIZE bytes are not patched\n"
	"                           (their calls are not recorded, what they call is); a call into a\n"
	"                           library counts as its 16-byte PLT entry, as uftrace counts it\n"
	"      --disable            the views start with showing stopped, until a trace_on trigger\n"
	"                           (with --signal: recording starts paused, until a trace_on)\n"
	"      --otlp-endpoint http://HOST:PORT[/PATH]  send the calls as OpenTelemetry spans to\n"
	"                           that OTLP/HTTP collector while recording (path /v1/traces by\n"
	"                           default), batched by needle record, never waited for by the\n"
	"                           program: spans a slow or absent collector cannot take are\n"
	"                           dropped and counted (its last line says how many)\n"
	"      --otlp-spans GLOB    only the calls of matching functions become spans (repeatable),\n"
	"                           and with -t TIME only those that lasted TIME or more\n"
	"      --signal SIG@ACTION  when the program gets SIG (USR1, SIGUSR2, 12...), recording\n"
	"                           pauses (trace_off), resumes (trace_on) or ends (finish), in the\n"
	"                           agent; the program's own handler of SIG runs and is recorded\n"
	"                           (trace_on before it, the others after), and a SIG it ignores\n"
	"                           or leaves to its default is needle's; with it, -T trace_on and\n"
	"                           trace_off act in the agent too (repeatable)\n"
	"      --no-merge, --no-comment  kept for the views, as replay's options\n"
	"      --no-sched, --no-event, --no-sched-preempt, --event-full  the same (-E's events;\n"
	"                           --no-event yields to an -E given with it)\n"
	"      --no-pager           accepted for uftrace's command lines (needle never pages)\n"
	"  -F, --filter GLOB        record only the calls of matching functions and everything they call\n"
	"                           (uftrace's -F; repeatable); C++ functions by their demangled names\n"
	"                           too: 'kv::Store::get', 'ns::*', 'scale(double)'; GLOB@depth=N and\n"
	"                           GLOB@MODULE record GLOB's calls and cut them in the views\n"
	"  -F GLOB@ARG OP VALUE     ... only the calls whose argument ARG (argN, fpargN or a parameter's\n"
	"                           name, with /FORMAT) compares so: OP == != < <= > >=,\n"
	"                           e.g. -F 'kv_get@arg2>1000'\n"
	"  -N, --notrace GLOB       do not record the calls of matching functions, nor what they call\n"
	"                           (uftrace's -N; repeatable); of a function both -F and -N name,\n"
	"                           the one given last decides, as in uftrace\n"
	"  -P, --patch GLOB         patch only matching functions: each is recorded on its own, with\n"
	"                           no other of the program's (ftrace's set_ftrace_filter, uftrace's\n"
	"                           -P; repeatable); its calls into libraries are recorded as\n"
	"                           --libcall says (--no-libcall: none); GLOB@MODULE: that object's\n"
	"                           functions (uftrace's -P 'lib_*@libfoo.so', also -U)\n"
	"  -U, --unpatch GLOB       do not patch matching functions (ftrace's set_ftrace_notrace)\n"
	"                           (with -p, -F and -N select single functions, as -P and -U)\n"
	"  -D, --depth N            function_graph: record N levels of nesting (from each -F call)\n"
	"      --max-stack N        uftrace's name for -D N\n"
	"      --no-pltbind         run the program with LD_BIND_NOW=1 (every symbol bound at start)\n"
	"      --kernel[=LIST]      the kernel's side of each thread, on the same timeline (perf_event_open;\n"
	"                           repeatable; what privileges refuse is left out and named):\n"
	"                           switch  time off the CPU: preempted, or blocked (S/D with root); a\n"
	"                                   record per context switch, about 1 us each\n"
	"                           syscall every system call: number, time in the kernel, result\n"
	"                                   (root: raw_syscalls tracepoints; about 1 us per call)\n"
	"                           fault   page faults taken in user code: address, major or minor\n"
	"                           comm    each rename of a thread (prctl, pthread_setname_np) and the\n"
	"                                   program's name at each exec: -f task follows them\n"
	"                           all     the four (--kernel alone)\n"
	"  -E, --event linux:schedule  uftrace's event: --kernel=switch, and the views show each time\n"
	"                           a call is off the CPU as a call to linux:schedule inside it\n"
	"  -E, --event linux:task-name  uftrace's event: --kernel=comm, each rename a line\n"
	"  -E, --event PROVIDER:NAME  a USDT probe (sys/sdt.h) of the program or a library it loads\n"
	"                           (globs: 'python:*'), each hit a line /* PROVIDER:NAME */ in the\n"
	"                           call it is in; the kernel's uprobes (root), semaphores counted;\n"
	"                           PROVIDER:NAME@FILE: those of FILE, also if loaded later (dlopen)\n"
	"                           (-E read:*, diff:*: -T FUNC@read='s readings, recorded anyway)\n"
	"      --no-follow-exec     do not record the programs it exec's (by default a program that\n"
	"                           execve's or posix_spawn's is recorded into the same trace: its\n"
	"                           threads keep their ids, a thread of their own each; not a static,\n"
	"                           set-user-ID or non-x86-64 program, nor any with -p)\n"
	"      --column-view, --column-offset N, --libname  kept for the views (see needle replay --help)\n"
	"      --srcline            uftrace's: accepted; the views read source lines from the objects'\n"
	"                           DWARF when asked (replay --srcline, -L), and live shows them\n"
	"      --libcall=program|nest|all|none  which calls of library functions no compiler\n"
	"                           prepared are recorded: those the program makes (the default, as\n"
	"                           uftrace's), those any object makes to another (--nest-libcall,\n"
	"                           -l), every call, a library's of its own functions too (all), or\n"
	"                           none (--no-libcall)\n"
	"      --match=glob|regex   how -F, -N, -P, -U, -H, -C, -T, -A and -R patterns match: a pattern\n"
	"                           that starts with ^, ends with $ or has ., (, |, + or \\ is a regular\n"
	"                           expression, found anywhere in a function's name, others globs; regex:\n"
	"                           with *, ? or [ too (a plain name stays a name); run as `uftrace`:\n"
	"                           uftrace's reading, a regular expression with any of .?*+-^$|()[]{}\n"
	"  -A, --argument GLOB@SPEC record arguments of matching functions: SPEC is a comma list of\n"
	"                           argN (integer register N, 1-6; 7-255: the (N-6)-th stack word above\n"
	"                           the return address) and fpargN (xmm N-1, 1-8), each\n"
	"                           with /FORMAT: d u x c p f and bits (d32, x16, f32; uftrace's\n"
	"                           i32, i and 32 are d32, d and, for an fparg, f32); e.g.\n"
	"                           -A 'kv_get@arg1/u,arg2/x'; first MODULE, the object the function\n"
	"                           is in (uftrace's -A 'usleep@plt,arg1', -A 'f@libfoo,arg1')\n"
	"                           /s: the string an argument points to (see --max-string);\n"
	"                           /S: the std::string it is the address of; /80 (f80): a long\n"
	"                           double, on the stack (fparg1/80%stack+1) or returned (retval/f80)\n"
	"  -A PATTERN               (no @) what --auto-args would record of the arguments of the\n"
	"                           functions PATTERN names, those only; -R PATTERN: their return values\n"
	"  -R, --retval GLOB@SPEC   record return values: SPEC is retval[/FORMAT], e.g. -R 'kv_*@retval/d'\n"
	"                           with debug info, a value may be named by its parameter: 'kv_get@key/s'\n"
	"  -a, --auto-args          record every argument and return value the debug info (DWARF, or a\n"
	"                           debug file under /usr/lib/debug) of the program and of the libraries\n"
	"                           it loads describes, by name and type (libc's with libc6-dbg);\n"
	"                           -A / -R for a function replace its side\n"
	"      --max-string=N       bytes of a /s string kept (default 98, at most 256)\n"
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

/* A -T's trace_on, trace_off and finish, for the agent: "GLOB" or
 * "GLOB<tab>m=MODULE" lines, as -P's. */
static int append_switch(struct record_opts *o, const struct trigger_spec *ts)
{
	static const struct {
		unsigned action;
		size_t list;
	} kinds[] = {
		{ TRIGGER_TRACE_ON, offsetof(struct record_config, trace_on) },
		{ TRIGGER_TRACE_OFF, offsetof(struct record_config, trace_off) },
		{ TRIGGER_FINISH, offsetof(struct record_config, finish) },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!(ts->actions & kinds[i].action))
			continue;
		char **list = (char **)((char *)&o->agent + kinds[i].list), *line;
		if ((ts->module[0] ? asprintf(&line, "%s\tm=%s", ts->pattern, ts->module)
				   : asprintf(&line, "%s", ts->pattern)) < 0)
			return -1;
		int err = append_glob(list, line);
		free(line);
		if (err)
			return -1;
	}
	return 0;
}

/* --signal SIG@ACTION: SIG by name (SIGUSR1, USR1) or number; ACTION
 * trace_on, trace_off or finish, spelled as -T's. */
static int append_signal(struct record_opts *o, const char *arg)
{
	const char *at = strrchr(arg, '@');
	char name[32], spec[96], err[256], line[32];
	struct trigger_spec ts;
	int sig = 0;

	if (!at || at == arg || (size_t)(at - arg) >= sizeof(name) || strlen(at + 1) > 64) {
		cli_error("--signal '%s': give SIG@ACTION, e.g. SIGUSR1@finish", arg);
		return -1;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(at - arg), arg);
	const char *n = strncmp(name, "SIG", 3) ? name : name + 3;
	char *end;
	long num = strtol(name, &end, 10);
	if (!*end && num > 0 && num < NSIG)
		sig = (int)num;
	for (int s = 1; !sig && s < NSIG; s++) {
		const char *abbrev = sigabbrev_np(s);
		if (abbrev && !strcmp(abbrev, n))
			sig = s;
	}
	if (!sig) {
		cli_error("--signal '%s': '%s' is no signal (a name as kill -l lists it, or a number)", arg, name);
		return -1;
	}
	/* Signals the kernel or needle itself needs: never a control. */
	if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS || sig == SIGTRAP ||
	    sig == SIGILL || sig == SIGFPE || sig == SIGABRT || sig > 64 || sig == SIGRTMAX - 2) {
		cli_error("--signal '%s': needle cannot take %s (the kernel or needle itself uses it); "
			  "SIGUSR1, SIGUSR2 or SIGPROF serve", arg, name);
		return -1;
	}
	snprintf(spec, sizeof(spec), "f@%s", at + 1);
	unsigned act = 0;
	if (!trigger_spec_parse(spec, &ts, err, sizeof(err)))
		act = ts.actions;
	if (act != TRIGGER_TRACE_ON && act != TRIGGER_TRACE_OFF && act != TRIGGER_FINISH) {
		cli_error("--signal '%s': the action is trace_on, trace_off or finish", arg);
		return -1;
	}
	snprintf(line, sizeof(line), "%d\t%s", sig,
		 act == TRIGGER_TRACE_ON ? "on" : act == TRIGGER_TRACE_OFF ? "off" : "finish");
	return append_glob(&o->agent.signals, line);
}

/* -P / -U GLOB, or uftrace's GLOB@MODULE: the functions of that object
 * only, as a line "GLOB<tab>m=MODULE" (the agent's). */
static int append_patch_glob(char **list, int opt, const char *arg)
{
	const char *at = strrchr(arg, '@');
	char *line;

	if (!at)
		return append_glob(list, arg);
	if (at == arg || !at[1] || strpbrk(at + 1, "/\t\n")) {
		cli_error("-%c '%s': give GLOB or GLOB@MODULE (an object's file name: libfoo.so, libfoo)", opt, arg);
		return -1;
	}
	if (asprintf(&line, "%.*s\tm=%s", (int)(at - arg), arg, at + 1) < 0)
		return -1;
	int err = append_glob(list, line);
	free(line);
	return err;
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

	if (!name_len || name_len > VALUE_GLOB_MAX || strpbrk(spec, "\t\n")) {
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
	return append_glob(&o->agent.triggers, line);
}

int record_parse_opts(int argc, char **argv, struct record_opts *o)
{
	enum { OPT_WAIT = 256, OPT_POLL, OPT_PERCENT, OPT_BUFSIZE, OPT_CHUNK, OPT_CTL, OPT_DURATION, OPT_SITES,
	       OPT_SNAPSHOT, OPT_TRIGGER, OPT_TRIGGER_AFTER, OPT_MAX_SNAPSHOTS, OPT_SNAPSHOT_GAP, OPT_MAX_STRING, OPT_AUTO_ARGS,
	       OPT_NEST_LIBCALL, OPT_NO_LIBCALL, OPT_LIBCALL, OPT_MATCH, OPT_TRACER, OPT_DISABLE, OPT_NO_MERGE, OPT_NO_COMMENT,
	       OPT_NO_SCHED, OPT_NO_EVENT, OPT_NO_SCHED_PREEMPT, OPT_EVENT_FULL,
	       OPT_DEMANGLE, OPT_FORCE, OPT_NO_PLTBIND, OPT_MAX_STACK, OPT_COLUMN_VIEW, OPT_COLUMN_OFFSET,
	       OPT_SRCLINE, OPT_NO_FOLLOW_EXEC, OPT_LIBNAME, OPT_KERNEL, OPT_SIGNAL, OPT_WITH_SYMS, OPT_OTLP_ENDPOINT, OPT_OTLP_SPANS,
	       OPT_ESTIMATE_RETURN, OPT_HOST, OPT_PORT, OPT_NO_PAGER, OPT_TIME };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' }, { "data", required_argument, NULL, 'd' },  { "tracer", required_argument, NULL, OPT_TRACER },
		{ "time-filter", required_argument, NULL, 't' }, { "trigger-view", required_argument, NULL, 'T' },
		{ "disable", no_argument, NULL, OPT_DISABLE }, { "hide", required_argument, NULL, 'H' },
		{ "signal", required_argument, NULL, OPT_SIGNAL },
		{ "otlp-endpoint", required_argument, NULL, OPT_OTLP_ENDPOINT },
		{ "otlp-spans", required_argument, NULL, OPT_OTLP_SPANS },
		{ "caller-filter", required_argument, NULL, 'C' },
		{ "demangle", required_argument, NULL, OPT_DEMANGLE },
		{ "size-filter", required_argument, NULL, 'Z' }, { "with-syms", required_argument, NULL, OPT_WITH_SYMS },
		{ "watch", required_argument, NULL, 'W' },
		{ "no-merge", no_argument, NULL, OPT_NO_MERGE }, { "no-comment", no_argument, NULL, OPT_NO_COMMENT },
		{ "no-sched", no_argument, NULL, OPT_NO_SCHED }, { "no-event", no_argument, NULL, OPT_NO_EVENT },
		{ "no-sched-preempt", no_argument, NULL, OPT_NO_SCHED_PREEMPT }, { "no-pager", no_argument, NULL, OPT_NO_PAGER },
		{ "event-full", no_argument, NULL, OPT_EVENT_FULL },
		{ "filter", required_argument, NULL, 'F' },  { "notrace", required_argument, NULL, 'N' },
		{ "depth", required_argument, NULL, 'D' },   { "wait", no_argument, NULL, OPT_WAIT },
		{ "poll", required_argument, NULL, OPT_POLL }, { "buffer-percent", required_argument, NULL, OPT_PERCENT },
		{ "buffer-size", required_argument, NULL, OPT_BUFSIZE },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK }, { "help", no_argument, NULL, 'h' },
		{ "ctl", no_argument, NULL, OPT_CTL }, { "force", no_argument, NULL, OPT_FORCE },
		{ "output-fields", required_argument, NULL, 'f' },
		{ "no-pltbind", no_argument, NULL, OPT_NO_PLTBIND }, { "kernel", optional_argument, NULL, OPT_KERNEL },
		{ "event", required_argument, NULL, 'E' }, { "no-follow-exec", no_argument, NULL, OPT_NO_FOLLOW_EXEC },
		{ "estimate-return", no_argument, NULL, OPT_ESTIMATE_RETURN }, { "time", no_argument, NULL, OPT_TIME }, { "max-stack", required_argument, NULL, OPT_MAX_STACK },
		{ "column-view", no_argument, NULL, OPT_COLUMN_VIEW }, { "libname", no_argument, NULL, OPT_LIBNAME }, { "srcline", no_argument, NULL, OPT_SRCLINE },
		{ "column-offset", required_argument, NULL, OPT_COLUMN_OFFSET },
		{ "pid", required_argument, NULL, 'p' }, { "duration", required_argument, NULL, OPT_DURATION },
		{ "sites", required_argument, NULL, OPT_SITES },
		{ "argument", required_argument, NULL, 'A' }, { "retval", required_argument, NULL, 'R' },
		{ "max-string", required_argument, NULL, OPT_MAX_STRING },
		{ "auto-args", no_argument, NULL, OPT_AUTO_ARGS },
		{ "patch", required_argument, NULL, 'P' }, { "unpatch", required_argument, NULL, 'U' },
		{ "match", required_argument, NULL, OPT_MATCH },
		{ "nest-libcall", no_argument, NULL, OPT_NEST_LIBCALL }, { "no-libcall", no_argument, NULL, OPT_NO_LIBCALL },
		{ "libcall", required_argument, NULL, OPT_LIBCALL },
		{ "snapshot", optional_argument, NULL, OPT_SNAPSHOT }, { "trigger", required_argument, NULL, OPT_TRIGGER },
		{ "trigger-after", required_argument, NULL, OPT_TRIGGER_AFTER },
		{ "max-snapshots", required_argument, NULL, OPT_MAX_SNAPSHOTS },
		{ "snapshot-interval", required_argument, NULL, OPT_SNAPSHOT_GAP },
		{ "host", required_argument, NULL, OPT_HOST }, { "port", required_argument, NULL, OPT_PORT },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	o->output = "needle.data";
	RECORD_CONFIG_SET(&o->agent, graph, 1);
	o->buffer_bytes = 16ull << 20;
	o->chunk_bytes = 16u << 10;
	o->wake_mode = WAKE_WAIT;
	o->max_snapshots = 10;
	o->agent.trigger_gap_ns = 1000000000ull;
	int snapshot_opts_given = 0, wake_given = 0, libcall_given = 0, output_given = 0;
	/* -F and -N in the order given ("-F" or "-N", then the glob): of a
	 * function both name, the one given last decides (uftrace's rule),
	 * in the agent and in the views, which get them all when both are
	 * given or some -F is cut there (GLOB@depth=N), for their list to
	 * be whole. */
	int filter_cnt = 0, view_filters = 0, have_F = 0, have_N = 0;
	/* --no-event is the views' unless -E names an event too: uftrace's
	 * test suite gives --no-event to every command, and an -E beside it
	 * still shows its events. */
	int no_event = 0, events_asked = 0;
	const char **filters = calloc(2 * (size_t)argc + 2, sizeof(*filters));
	if (!filters)
		return -1;
	/* NEEDLE_SITES in needle record's environment sets the default. */
	const char *env_sites = getenv("NEEDLE_SITES");
	o->agent.sites = RECORD_SITES_ALL;
	if (env_sites && *env_sites && !(o->agent.sites = sites_kind(env_sites))) {
		cli_error("NEEDLE_SITES needs compiled, relocated or all, not '%s'", env_sites);
		return -1;
	}
	/* --match, wherever it is given among the options, decides how
	 * every pattern reads: a first pass for it alone, the options read
	 * as the real pass reads them (their values, abbreviations, the
	 * program's own arguments after its name), errors left to that
	 * pass; then each pattern is spelled as it says when read. */
	optind = 0; /* 0, not 1: glibc's getopt starts over entirely */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:d:f:t:T:H:C:F:N:P:U:D:Z:p:A:R:E:W:aelh", longopts, NULL)) != -1)
		if (c == OPT_MATCH)
			cli_pattern_match = !strcmp(optarg, "regex") ? 1 : !strcmp(optarg, "glob") ? 2 : 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+o:d:f:t:T:H:C:F:N:P:U:D:Z:p:A:R:E:W:aelh", longopts, NULL)) != -1) {
		/* A function pattern, with what follows its '@'. */
		if (optarg && c > 0 && c < 128 && strchr("FNPUTARHC", c))
			optarg = (char *)cli_pattern_spelled(optarg);
		switch (c) {
		case 'A':
		case 'R':
			if (arg_plan_add_spec(&o->values, optarg, c == 'R'))
				return -1;
			break;
		case 'o':
		case 'd': /* uftrace's -d DIR: here the trace file */
			o->output = optarg;
			output_given = 1;
			break;
		case OPT_FORCE:
			o->force = 1;
			break;
		case OPT_HOST:
			o->host = optarg;
			break;
		case OPT_PORT: {
			unsigned long port = strtoul(optarg, &end, 10);
			if (!*optarg || *end || !port || port > 65535) {
				cli_error("--port needs a TCP port number (1-65535), not '%s'", optarg);
				return -1;
			}
			o->port = optarg;
			break;
		}
		case OPT_NO_PLTBIND:
			o->bind_now = 1;
			break;
		case OPT_KERNEL: {
			char why[160];
			/* --kernel alone: all of it, as uftrace's -k takes no list. */
			if (kernel_parse(optarg ? optarg : "all", &o->kernel, why, sizeof(why))) {
				cli_error("%s", why);
				return -1;
			}
			break;
		}
		case 'E': {
			/* uftrace's events: linux:schedule is the kernel's
			 * switches (--kernel=switch), shown as calls; the
			 * readings of -T read= are recorded with or without it. */
			unsigned ev = trigger_event_match(optarg);
			const char *colon = strchr(optarg, ':');
			events_asked = 1;
			if (!ev && colon && colon > optarg && colon[1] && strncmp(optarg, "linux:", 6) &&
			    strncmp(optarg, "read:", 5) && strncmp(optarg, "diff:", 5)) {
				/* PROVIDER:NAME (globs): USDT probes, as the
				 * kernel's uprobes. */
				if (append_glob(&o->probe_globs, optarg))
					return -1;
				o->kernel |= KERNEL_PROBE;
				break;
			}
			if (!ev && colon && (colon == optarg || !colon[1])) {
				cli_error("-E '%s': a USDT probe is PROVIDER:NAME, with both given (globs: 'myapp:*')", optarg);
				return -1;
			}
			if (!ev) {
				cli_error("-E '%s': needle records the events linux:schedule (each time off the CPU, read "
					  "as a call), linux:task-name (each rename of a thread), PROVIDER:NAME (a USDT probe) and read:*, diff:* (-T "
					  "FUNC@read='s readings); for system calls and page faults use --kernel",
					  optarg);
				return -1;
			}
			if (ev & TRIGGER_EVENT_SCHEDULE) {
				o->kernel |= KERNEL_SWITCH;
				o->kernel_events |= RECORD_EVENT_SCHEDULE;
			}
			if (ev & TRIGGER_EVENT_TASK_NAME)
				o->kernel |= KERNEL_COMM;
			break;
		}
		case 'e': /* uftrace's short form */
		case OPT_ESTIMATE_RETURN:
			o->agent.estimate_return = 1;
			break;
		case OPT_TIME:
			o->print_time = 1;
			break;
		case OPT_NO_FOLLOW_EXEC:
			o->agent.no_follow_exec = 1;
			break;
		case OPT_SRCLINE:
			o->srcline = 1;
			break;
		case OPT_COLUMN_VIEW:
			if (view_opt_add(o, "--column-view"))
				return -1;
			break;
		case OPT_LIBNAME:
			if (view_opt_add(o, "--libname"))
				return -1;
			break;
		case OPT_COLUMN_OFFSET:
			if (view_opt_add2(o, "--column-offset", optarg))
				return -1;
			break;
		case 'f':
			if (view_opt_add2(o, "-f", optarg))
				return -1;
			break;
		case OPT_TRACER:
		case 't':
			/* -t is uftrace's time filter; a tracer's name there is
			 * still the tracer (-t function), as needle took it. */
			if (!strcmp(optarg, "function_graph")) {
				o->agent.graph = 1;
			} else if (!strcmp(optarg, "function")) {
				o->agent.graph = 0;
			} else if (c == 't') {
				uint64_t ns;
				if (parse_duration("-t", optarg, &ns) || view_opt_add2(o, "-t", optarg))
					return -1;
				o->time_filter_ns = ns;
			} else {
				cli_error("unknown tracer '%s' (function_graph or function)", optarg);
				return -1;
			}
			break;
		case 'T': {
			struct trigger_spec ts;
			char err[512];
			if (trigger_spec_parse(optarg, &ts, err, sizeof(err))) {
				cli_error("%s", err);
				return -1;
			}
			/* Its values are -A and -R (a spec each, or the bare
			 * FUNC of auto-args); its actions are the views'. */
			char spec[VALUE_SPEC_MAX + 1];
			if (ts.args[0] && (snprintf(spec, sizeof(spec), "%s@%s", ts.pattern, ts.args),
					   arg_plan_add_spec(&o->values, spec, 0)))
				return -1;
			if (ts.rets[0] && (snprintf(spec, sizeof(spec), "%s@%s", ts.pattern, ts.rets),
					   arg_plan_add_spec(&o->values, spec, 1)))
				return -1;
			if (ts.auto_args && (arg_plan_add_spec(&o->values, ts.pattern, 0) ||
					     arg_plan_add_spec(&o->values, ts.pattern, 1)))
				return -1;
			if (ts.reads && arg_plan_add_reads(&o->values, ts.pattern, ts.reads))
				return -1;
			/* read= readings are shown by the views' tree, which a
			 * kept -T turns on. */
			if ((ts.actions || ts.reads) && view_opt_add2(o, "-T", optarg))
				return -1;
			/* trace_on, trace_off and finish act in the agent too:
			 * what they leave out is not recorded (the views, which
			 * keep the -T, then show the same). */
			if (append_switch(o, &ts))
				return -1;
			break;
		}
		case OPT_WITH_SYMS:
			o->with_syms = optarg;
			break;
		case 'W': {
			/* uftrace's points, comma-separated: cpu is the one it has. */
			char words[256];
			snprintf(words, sizeof(words), "%s", optarg);
			for (char *w = strtok(words, ","); w; w = strtok(NULL, ",")) {
				if (strcmp(w, "cpu")) {
					cli_error("-W: needle watches cpu (the CPU a thread runs on), not '%s'", w);
					return -1;
				}
				RECORD_CONFIG_SET(&o->agent, watch, o->agent.watch | RECORD_WATCH_CPU);
			}
			if (!o->agent.watch) {
				cli_error("-W needs a point to watch: cpu");
				return -1;
			}
			break;
		}
		case OPT_SIGNAL:
			if (append_signal(o, optarg))
				return -1;
			break;
		case OPT_OTLP_ENDPOINT: {
			struct http_url u;
			const char *why = cli_parse_http_url(optarg, &u);
			if (why) {
				cli_error("--otlp-endpoint '%s': %s", optarg, why);
				return -1;
			}
			o->otlp_endpoint = optarg;
			break;
		}
		case OPT_OTLP_SPANS: {
			regex_t rx;
			if (pattern_is_regex(optarg)) {
				if (regcomp(&rx, optarg, REG_EXTENDED | REG_NOSUB)) {
					cli_error("--otlp-spans '%s': not a regular expression", optarg);
					return -1;
				}
				regfree(&rx);
			}
			if (append_glob(&o->otlp_spans, optarg))
				return -1;
			break;
		}
		case OPT_DEMANGLE: {
			char opt[32];
			if (strcmp(optarg, "simple") && strcmp(optarg, "full") && strcmp(optarg, "no")) {
				cli_error("--demangle needs simple, full or no, not '%s'", optarg);
				return -1;
			}
			snprintf(opt, sizeof(opt), "--demangle=%s", optarg);
			if (view_opt_add(o, opt))
				return -1;
			break;
		}
		case 'H':
		case 'C':
			if (view_opt_add2(o, c == 'H' ? "-H" : "-C", optarg))
				return -1;
			break;
		case OPT_DISABLE:
			/* The views', or the agent's with --signal (below). */
			o->agent.start_paused = 1;
			break;
		case OPT_NO_MERGE:
		case OPT_NO_COMMENT:
			if (view_opt_add(o, c == OPT_NO_MERGE ? "--no-merge" : "--no-comment"))
				return -1;
			break;
		case OPT_NO_PAGER:
			break; /* needle's output is never paged */
		case OPT_NO_EVENT:
			no_event = 1;
			break;
		case OPT_NO_SCHED:
		case OPT_NO_SCHED_PREEMPT:
		case OPT_EVENT_FULL:
			/* The views' (replay and live read them from the trace):
			 * needle records no event unless -E asks. */
			if (view_opt_add(o, c == OPT_NO_SCHED	      ? "--no-sched"
					    : c == OPT_NO_SCHED_PREEMPT ? "--no-sched-preempt"
									  : "--event-full"))
				return -1;
			break;
		case 'F':
			if (is_value_filter(optarg)) {
				if (arg_plan_add_filter(&o->values, optarg))
					return -1;
				break; /* the agent tests the values: not the views' */
			} else if (strchr(optarg, '@')) {
				/* FUNC@depth=N, FUNC@MODULE: its calls are recorded
				 * whole, and the views cut them as asked. */
				char glob[VALUE_GLOB_MAX + 1];
				size_t n = (size_t)(strchr(optarg, '@') - optarg);
				struct trigger_spec ts;
				char err[512];
				snprintf(err, sizeof(err), "%s,filter", optarg);
				if (!n || n > VALUE_GLOB_MAX || trigger_spec_parse(err, &ts, err, sizeof(err))) {
					cli_error("-F '%s': give GLOB, GLOB@depth=N, GLOB@MODULE or GLOB@ARG OP VALUE", optarg);
					return -1;
				}
				snprintf(glob, sizeof(glob), "%.*s", (int)n, optarg);
				/* FUNC@MODULE: that object's functions only, which
				 * the agent also waits for when the program has not
				 * loaded the object yet (a dlopen later); @plt (the
				 * program's library calls) is the views' to cut. */
				char *line = NULL;
				int object = ts.module[0] && strcmp(ts.module, "plt") && strcmp(ts.module, "kernel");
				if (object && asprintf(&line, "%s\tm=%s", glob, ts.module) < 0)
					return -1;
				int e = append_glob(&o->agent.subtree, line ? line : glob);
				free(line);
				if (e)
					return -1;
				view_filters = have_F = 1;
			} else if (append_glob(&o->agent.subtree, optarg)) {
				return -1;
			} else {
				have_F = 1;
			}
			filters[filter_cnt++] = "-F";
			filters[filter_cnt++] = optarg;
			break;
		case 'N':
			if (append_glob(&o->agent.drop, optarg))
				return -1;
			have_N = 1;
			filters[filter_cnt++] = "-N";
			filters[filter_cnt++] = optarg;
			break;
		case 'P':
		case 'U':
			if (append_patch_glob(c == 'P' ? &o->agent.filter : &o->agent.notrace, c, optarg))
				return -1;
			if (c == 'P')
				o->agent.patch_keeps_libcalls = 1;
			break;
		case OPT_MATCH:
			if (strcmp(optarg, "regex") && strcmp(optarg, "glob")) {
				cli_error("--match needs regex or glob, not '%s'", optarg);
				return -1;
			}
			o->match_regex = !strcmp(optarg, "regex") ? 1 : 2;
			break;
		case 'l': /* uftrace's short form */
			c = OPT_NEST_LIBCALL;
			/* fall through */
		case OPT_NEST_LIBCALL:
		case OPT_NO_LIBCALL:
		case OPT_LIBCALL: {
			static const char *const modes[] = { [RECORD_LIBCALL_PROGRAM] = "program",
							     [RECORD_LIBCALL_NEST] = "nest",
							     [RECORD_LIBCALL_NONE] = "none",
							     [RECORD_LIBCALL_ALL] = "all" };
			int mode = c == OPT_NEST_LIBCALL ? RECORD_LIBCALL_NEST : c == OPT_NO_LIBCALL ? RECORD_LIBCALL_NONE : -1;
			for (int m = 0; mode < 0 && m < (int)(sizeof(modes) / sizeof(modes[0])); m++)
				if (!strcmp(optarg, modes[m]))
					mode = m;
			if (mode < 0) {
				cli_error("--libcall needs program, nest, all or none, not '%s'", optarg);
				return -1;
			}
			if (libcall_given && o->agent.libcall != mode) {
				cli_error("record: --libcall=%s and --libcall=%s (--nest-libcall, --no-libcall) ask for "
					  "different things; give one", modes[o->agent.libcall], modes[mode]);
				return -1;
			}
			libcall_given = 1;
			o->agent.libcall = mode;
			break;
		}
		case OPT_MAX_STACK: /* uftrace's: calls deeper than N are not recorded, as -D N */
		case 'D':
			o->agent.depth = (int)strtol(optarg, &end, 10);
			if (*end || o->agent.depth < 1) {
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
		case OPT_SNAPSHOT_GAP: {
			uint64_t ns; /* at most 1e15: an int64_t */
			if (parse_duration(c == OPT_TRIGGER_AFTER ? "--trigger-after" : "--snapshot-interval", optarg, &ns))
				return -1;
			if (c == OPT_TRIGGER_AFTER)
				o->agent.trigger_after_ns = (int64_t)ns;
			else
				o->agent.trigger_gap_ns = (int64_t)ns;
			snapshot_opts_given = 1;
			break;
		}
		case OPT_AUTO_ARGS:
		case 'a':
			o->values.auto_args = 1;
			break;
		case 'Z': {
			long n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 1 || n > 1 << 30) {
				cli_error("-Z needs a size in bytes (1 or more), not '%s'", optarg);
				return -1;
			}
			o->agent.min_size = n;
			break;
		}
		case OPT_MAX_STRING: {
			long n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < VALUE_STRING_MIN || n > VALUE_STRING_MAX) {
				cli_error("--max-string needs a number of bytes from %d to %d, not '%s'", VALUE_STRING_MIN,
					  VALUE_STRING_MAX, optarg);
				return -1;
			}
			o->agent.max_string = (unsigned)n;
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
			o->agent.ctl = 1;
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
			if (!(o->agent.sites = sites_kind(optarg))) {
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
			cli_option_error(argv[0], argc, argv, "+o:d:f:t:T:H:C:F:N:P:U:D:Z:p:A:R:E:W:aelh", longopts);
			return -1;
		}
	}
	if (no_event && !events_asked && view_opt_add(o, "--no-event"))
		return -1;
	for (int i = 0; (view_filters || (have_F && have_N)) && i < filter_cnt; i += 2)
		if (view_opt_add2(o, filters[i], filters[i + 1]))
			return -1;
	/* The agent decides a function both name by the order: each line
	 * of the two lists says where it was given ("GLOB<tab>POS", which
	 * the expansion of C++ names keeps on the lines it adds). */
	if (have_F && have_N && !o->attach_pid) {
		free(o->agent.subtree);
		free(o->agent.drop);
		o->agent.subtree = o->agent.drop = NULL;
		for (int i = 0; i < filter_cnt; i += 2) {
			char *line;
			const char *g = filters[i + 1], *at = filters[i][1] == 'F' ? strchr(g, '@') : NULL;
			if (asprintf(&line, "%.*s\t%d", at ? (int)(at - g) : (int)strlen(g), g, i / 2 + 1) < 0)
				return -1;
			int err = append_glob(filters[i][1] == 'F' ? &o->agent.subtree : &o->agent.drop, line);
			free(line);
			if (err)
				return -1;
		}
	}
	free(filters);
	/* trace_on, trace_off and --disable: the views apply them to a trace
	 * that holds every call (uftrace's graph, where a call that returns
	 * after a trace_on closes what is open at its depth, needs the calls
	 * made while showing was off).  With --signal the program decides
	 * when, and the views cannot know: the agent pauses and resumes the
	 * recording itself, the -T's as well, and the views are not told. */
	if (!o->agent.signals) {
		free(o->agent.trace_on);
		free(o->agent.trace_off);
		o->agent.trace_on = o->agent.trace_off = NULL;
		if (o->agent.start_paused && view_opt_add(o, "--disable"))
			return -1;
		o->agent.start_paused = 0;
	}
	/* A value filter's function is a -F function too: only its calls
	 * (and what they call) are recorded, and of those the agent keeps
	 * the calls whose values pass. */
	if (o->values.value_globs && append_glob(&o->agent.subtree, o->values.value_globs))
		return -1;
	/* The session with a running process carries patch filters only:
	 * there -F and -N select single functions. */
	if (o->attach_pid && (o->agent.subtree || o->agent.drop)) {
		if ((o->agent.subtree && append_glob(&o->agent.filter, o->agent.subtree)) || (o->agent.drop && append_glob(&o->agent.notrace, o->agent.drop)))
			return -1;
		free(o->agent.subtree);
		free(o->agent.drop);
		o->agent.subtree = o->agent.drop = NULL;
	}
	/* uftrace filters by -F only once one names a function; one that
	 * names none leaves its recording whole (its own tests rely on it). */
	if (cli_uftrace_style && o->agent.subtree)
		o->agent.subtree_optional = 1;
	/* With -p every filter selects single functions, library calls too. */
	if (o->attach_pid)
		o->agent.patch_keeps_libcalls = 0;
	if (o->attach_pid && o->print_time) {
		cli_error("record: --time gives the times of a program needle record starts; with -p it has started");
		return -1;
	}
	if (o->attach_pid && o->bind_now) {
		cli_error("record: --no-pltbind binds a program's symbols as it starts; with -p it has started");
		return -1;
	}
	if (o->with_syms && o->attach_pid) {
		cli_error("record: --with-syms names functions as a started program's objects load; with -p, "
			  "give it to the views (needle replay --with-syms %s)", o->with_syms);
		return -1;
	}
	if (o->with_syms && !(o->agent.syms = with_syms_lines(o->with_syms)))
		return -1;
	if (o->attach_pid && optind < argc) {
		cli_error("record: -p records a running process; give either -p PID or a program, not both");
		return -1;
	}
	if (o->duration_ns && !o->attach_pid) {
		cli_error("record: --duration needs -p (a program started by needle record is recorded to its end)");
		return -1;
	}
	if (o->agent.estimate_return && !o->agent.graph) {
		cli_error("record: --estimate-return is function_graph's (the function tracer has no returns): "
			  "leave out -t function");
		return -1;
	}
	if (o->agent.estimate_return && o->values.specs &&
	    (o->values.specs[0] == 'R' || strstr(o->values.specs, "\nR"))) {
		cli_error("record: -R records return values, which --estimate-return never sees (no return is hooked)");
		return -1;
	}
	if (!o->agent.graph && o->values.specs &&
	    (o->values.specs[0] == 'R' || strstr(o->values.specs, "\nR"))) {
		cli_error("record: -R records return values, which the function tracer (-t function) never sees");
		return -1;
	}
	if (!o->snapshot && (o->agent.triggers || snapshot_opts_given)) {
		cli_error("record: --trigger, --trigger-after, --max-snapshots and --snapshot-interval need --snapshot");
		return -1;
	}
	if (o->otlp_spans && !o->otlp_endpoint) {
		cli_error("record: --otlp-spans chooses what --otlp-endpoint sends: give the endpoint too");
		return -1;
	}
	if (o->snapshot && o->otlp_endpoint) {
		cli_error("record: --otlp-endpoint sends spans while recording; --snapshot keeps events in the program "
			  "until asked (export a snapshot with needle export --format=otlp)");
		return -1;
	}
	if (o->otlp_endpoint && !o->agent.graph) {
		cli_error("record: --otlp-endpoint sends calls with their durations: not with the function tracer");
		return -1;
	}
	if (o->port && !o->host) {
		cli_error("record: --port is where --host sends the trace: give the host too");
		return -1;
	}
	if (o->host) {
		if (!o->port)
			o->port = REMOTE_DEFAULT_PORT;
		/* Run as uftrace, the trace goes under uftrace's name for it,
		 * as uftrace record --host sends it: the receiver stores
		 * DIR/uftrace.data, which uftrace replay -d DIR/uftrace.data
		 * reads. */
		if (cli_uftrace_style && !output_given)
			o->output = "uftrace.data";
		if (o->snapshot) {
			cli_error("record: --host streams the trace while recording; --snapshot writes files when asked: "
				  "record the snapshots here and copy them");
			return -1;
		}
		if (!remote_name_ok(remote_file_name(o->output))) {
			cli_error("record: --host sends the trace under the name of -o's file, and '%s' is not one the "
				  "receiver can store (no hidden or empty name)", o->output);
			return -1;
		}
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
		cli_error("record: no program given (needle record [options] [--] PROG [ARGS], or -p PID)");
		return -1;
	}
	if (o->buffer_bytes / o->chunk_bytes < 2) {
		cli_error("the buffer must hold at least two chunks");
		return -1;
	}
	return optind;
}

