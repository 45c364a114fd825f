/* script.c - `needle script -S FILE.py`: uftrace's script command.  The
 * script's functions are called for the trace's events:
 *
 *   uftrace_begin(ctx)   once, ctx: record (bool), version, cmds (the
 *                        recorded command line)
 *   uftrace_entry(ctx)   each entry: tid, depth, timestamp (CLOCK_MONOTONIC
 *                        ns), address, name, and args (a list) if recorded
 *   uftrace_exit(ctx)    each exit: the same with duration, and retval
 *   uftrace_event(ctx)   each reading -T FUNC@read= took: after its
 *                        function's entry, name "read:proc/statm" or
 *                        "read:page-fault" and args "vmsize=6812KB
 *                        vmrss=780KB shared=716KB" or "major=0 minor=188";
 *                        before its exit, "diff:..." with the differences;
 *                        and with -E linux:schedule, "linux:sched-out" and
 *                        "linux:sched-in" where a thread left the CPU and
 *                        came back inside a call
 *   uftrace_end()        once, at the end
 *
 * and UFTRACE_FUNCS = ["a", "b"] in it keeps those functions' events
 * only.  With --record, the program after the options is recorded first
 * (with the options of the script's "# uftrace-option: ..." and
 * "# needle-option: ..." lines), then the script runs on its trace.
 *
 * The script runs in Debian's python3 with `import needle` (src/python)
 * found beside this binary (BUILD/python/needle.so), by a short driver
 * given to python3 -c: a script's errors are Python's, with Python's
 * traceback, and the exit status is python3's. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/record/record.h"
#include "cli/script.h"
#include "cli/util/cli_util.h"
#include "cli/view/view.h"

#define PYTHON3 "/usr/bin/python3"

static const char script_usage[] =
	"usage: needle script -S FILE.py [-i FILE] [--tid TID] [-- SCRIPT-ARGS]\n"
	"       needle script -S FILE.py --record [record's options] [--] PROG [ARGS]\n"
	"Runs a Python script over a trace, with uftrace's callbacks: uftrace_begin(ctx),\n"
	"uftrace_entry(ctx), uftrace_exit(ctx), uftrace_event(ctx), uftrace_end();\n"
	"UFTRACE_FUNCS = [names] keeps those functions' entries and exits.  A ctx has tid,\n"
	"depth, timestamp, address, name, args (a list, when recorded with -A), and at an\n"
	"exit duration and retval.  uftrace_event is called for each -T FUNC@read=\n"
	"reading: name read:proc/statm (or read:page-fault) after the entry, diff:... before\n"
	"the exit, args a string ('vmsize=6812KB vmrss=780KB shared=716KB'); and, in a\n"
	"trace recorded with -E linux:schedule, with linux:sched-out and linux:sched-in\n"
	"where a thread left the CPU inside a call and came back.  The script may also\n"
	"`import needle` (needle.open(path).events()).\n"
	"  -S, --script FILE   the script\n"
	"  -i, --input FILE    trace file (default needle.data)\n"
	"      --tid TID       only this thread's events\n"
	"      --record        record the program first (with the script's\n"
	"                      '# uftrace-option: OPTS' lines), into -i's file\n";

/* The driver python3 runs: the script's callbacks over the trace's events
 * through the module's loop (Trace._script, in C: a dict per callback and
 * no Event object), the -T read= readings paired here.  argv: trace,
 * script, tid, then the script's arguments. */
static const char driver[] =
	"import signal, sys, runpy\n"
	"signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n"
	"import needle\n"
	"trace_path, script, tid = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
	"sys.argv = [script] + sys.argv[4:]\n"
	"g = runpy.run_path(script, run_name='__needle_script__')\n"
	"begin, entry, exit_, event, end = (g.get(n) for n in\n"
	"    ('uftrace_begin', 'uftrace_entry', 'uftrace_exit', 'uftrace_event', 'uftrace_end'))\n"
	"funcs = g.get('UFTRACE_FUNCS')\n"
	"keep = set(funcs) if funcs else None\n"
	"t = needle.open(trace_path)\n"
	"READINGS = (('proc/statm', ('vmsize', 'vmrss', 'shared'), 'KB'), ('page-fault', ('major', 'minor'), ''))\n"
	"def readings(what, tid, depth, ts, address, now, before):\n"
	"    for group, keys, unit in READINGS:\n"
	"        if not all(k in now for k in keys) or (before is not None and not all(k in before for k in keys)):\n"
	"            continue\n"
	"        vals = [now[k] - before[k] if before is not None else now[k] for k in keys]\n"
	"        event({'tid': tid, 'depth': depth, 'timestamp': ts, 'address': address,\n"
	"               'name': what + ':' + group, 'args': ' '.join('%s=%d%s' % (k, v, unit) for k, v in zip(keys, vals))})\n"
	"opened = {}  # (tid, depth) -> the readings at that open call's entry (None: none)\n"
	"def reads(kind, tid, depth, ts, address, rd):\n"
	"    rd = dict(rd) if rd is not None else None\n"
	"    if kind == 'exit':\n"
	"        before = opened.pop((tid, depth), None)\n"
	"        if rd is not None and before is not None:\n"
	"            readings('diff', tid, depth, ts, address, rd, before)\n"
	"    else:\n"
	"        opened[(tid, depth)] = rd\n"
	"        if rd is not None:\n"
	"            readings('read', tid, depth, ts, address, rd, None)\n"
	"if begin:\n"
	"    begin({'record': False, 'version': 'needle', 'cmds': t.command})\n"
	"try:\n"
	"    t._script(entry, exit_, reads if event is not None else None, event, keep, tid, t.monotonic_base)\n"
	"except needle.Error as e:\n"
	"    if e.__traceback__.tb_next is not None:\n"
	"        raise  # the script's own: its traceback\n"
	"    sys.stderr.write('needle: %s\\n' % e)\n"
	"    sys.exit(1)\n"
	"if end:\n"
	"    end()\n";

/* BUILD/python beside BUILD/needle. */
static int module_dir(char *buf, size_t len)
{
	char exe[PATH_MAX - 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	if ((size_t)snprintf(buf, len, "%s/python", exe) >= len)
		return -1;
	char so[PATH_MAX + 32];
	snprintf(so, sizeof(so), "%s/needle.so", buf);
	return access(so, R_OK) ? -1 : 0;
}

/* The script's "# uftrace-option: ..." and "# needle-option: ..." words,
 * appended to words (space-separated, as uftrace reads them). */
static int script_options(const char *script, char ***words, int *n)
{
	FILE *f = fopen(script, "r");
	char line[1024];
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *p = NULL;
		if (!strncmp(line, "# uftrace-option:", 17))
			p = line + 17;
		else if (!strncmp(line, "# needle-option:", 16))
			p = line + 16;
		if (!p)
			continue;
		char *copy = strdup(p), *save = NULL;
		if (!copy)
			break;
		for (char *w = strtok_r(copy, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
			char **v = realloc(*words, (size_t)(*n + 2) * sizeof(*v));
			if (!v)
				break;
			*words = v;
			(*words)[(*n)++] = strdup(w);
		}
		free(copy);
	}
	fclose(f);
	return 0;
}

static int run(char *const argv[])
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("script: fork: %s", strerror(errno));
		return 1;
	}
	if (!pid) {
		execv(argv[0], argv);
		cli_error("script: cannot run %s: %s (scripts/setup.sh installs python3)", argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int cmd_script(int argc, char **argv)
{
	const char *script = NULL, *input = "needle.data";
	const char *tid = "0";
	int record = 0, i;

	/* Options up to the first word that is not one (the program, with
	 * --record; the script's arguments after "--" otherwise). */
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(script_usage, stdout);
			return 0;
		}
		if ((!strcmp(a, "-S") || !strcmp(a, "--script")) && i + 1 < argc)
			script = argv[++i];
		else if (!strncmp(a, "--script=", 9))
			script = a + 9;
		else if ((!strcmp(a, "-i") || !strcmp(a, "-d") || !strcmp(a, "--input")) && i + 1 < argc)
			input = argv[++i];
		else if (!strcmp(a, "--tid") && i + 1 < argc)
			tid = argv[++i];
		else if (!strcmp(a, "--record"))
			record = 1;
		else if (!strcmp(a, "--no-pager") || !strcmp(a, "--no-event"))
			continue; /* uftrace's: needle never pages, and gives a script
				   * no event --no-event would hide (only -T's readings) */
		else if (!strcmp(a, "--")) {
			i++;
			break;
		} else
			break;
	}
	if (!script) {
		cli_error("script: give the script with -S FILE.py (needle script --help lists the options)");
		return 2;
	}
	if (access(script, R_OK)) {
		cli_error("script: cannot read %s: %s", script, strerror(errno));
		return 1;
	}
	uint32_t t;
	char *end;
	unsigned long v = strtoul(tid, &end, 10);
	if (!*tid || *end || v > UINT32_MAX) {
		cli_error("script: --tid takes a thread id, not '%s'", tid);
		return 2;
	}
	t = (uint32_t)v;
	char dir[PATH_MAX];
	if (module_dir(dir, sizeof(dir))) {
		cli_error("script: needle's Python module (python/needle.so beside the needle binary) is missing: "
			  "run make");
		return 1;
	}
	if (record) {
		/* needle record [the script's options] [the rest] -o INPUT. */
		char **words = NULL;
		int n = 0;
		words = calloc(4, sizeof(*words));
		if (!words)
			return 1;
		words[n++] = "record";
		script_options(script, &words, &n);
		char **all = realloc(words, (size_t)(n + argc - i + 4) * sizeof(*all));
		if (!all) {
			free(words);
			return 1;
		}
		words = all;
		words[n++] = "-o";
		words[n++] = (char *)input;
		for (int k = i; k < argc; k++)
			words[n++] = argv[k];
		words[n] = NULL;
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (!pid)
			_exit(cmd_record(n, words));
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		free(words);
		if (access(input, R_OK))
			return WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : 1; /* needle record said why */
		i = argc;
	} else if (i < argc && strcmp(argv[i - 1], "--") && argv[i][0] == '-') {
		cli_error("script: unknown option '%s' (needle script --help lists the options)", argv[i]);
		return 2;
	}
	/* The trace's own errors in one line, before Python starts. */
	struct trace *tr = view_open(input);
	if (!tr)
		return 1;
	if (t && !trace_thread_find(tr, t)) {
		cli_error("thread %u is not in %s (needle info lists the threads)", t, tr->path);
		view_close(tr);
		return 1;
	}
	view_close(tr);
	/* PYTHONPATH: the module first, then the user's. */
	const char *old = getenv("PYTHONPATH");
	char *path = malloc(strlen(dir) + (old ? strlen(old) : 0) + 2);
	if (!path)
		return 1;
	sprintf(path, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
	setenv("PYTHONPATH", path, 1);
	free(path);
	char **py = calloc((size_t)(argc - i + 8), sizeof(*py));
	if (!py)
		return 1;
	int n = 0;
	py[n++] = PYTHON3;
	py[n++] = "-c";
	py[n++] = (char *)driver;
	py[n++] = (char *)input;
	py[n++] = (char *)script;
	char tidbuf[16];
	snprintf(tidbuf, sizeof(tidbuf), "%u", t);
	py[n++] = tidbuf;
	for (int k = i; k < argc; k++)
		py[n++] = argv[k];
	py[n] = NULL;
	int rc = run(py);
	free(py);
	return rc;
}
