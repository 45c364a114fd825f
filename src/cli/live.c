/* live.c - `needle live`: uftrace's live command, record and replay in
 * one: the program is recorded into a trace of its own (a temporary one,
 * removed after, unless -o names it), then the trace is replayed with the
 * options record keeps for the views (-t, -T, -H, --no-merge, ...).
 *
 * The recording runs in a child process, so that nothing needle record
 * leaves behind (signal dispositions, its children) reaches the replay;
 * the exit status is the program's, as needle record's is, unless the
 * replay fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/live.h"
#include "cli/record/record.h"
#include "cli/util/cli_util.h"
#include "cli/view/view.h"

static const char live_usage[] =
	"usage: needle live [record's options] [--] PROG [ARGS]\n"
	"Records PROG as needle record does, then prints its function graph as needle replay does,\n"
	"with the view options given (-t TIME, -T, -H, --no-merge, --no-comment, -F GLOB@depth=N).\n"
	"The trace is removed after, unless -o FILE names it.  See needle record --help.\n";

/* The trace file -o named in argv (a pointer into one of its words), or
 * NULL when there is none: read by needle record's own parser, so that
 * an "-o" among the program's arguments is the program's. */
static const char *output_given(int argc, char **argv, int *status, int *srcline)
{
	struct record_opts o = { 0 };

	*status = 0;
	if (record_parse_opts(argc, argv, &o) < 0) {
		*status = 2;
		return NULL;
	}
	*srcline = o.srcline;
	if (o.host) {
		cli_error("live: the trace is shown here; to send it to 'needle recv', use needle record --host");
		*status = 2;
		return NULL;
	}
	for (int i = 1; i < argc; i++)
		if (o.output >= argv[i] && o.output < argv[i] + strlen(argv[i]) + 1)
			return o.output;
	return NULL;
}

int cmd_live(int argc, char **argv)
{
	char dir[] = "/tmp/needle-live-XXXXXX", path[sizeof(dir) + 16];
	int status, srcline = 0;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(live_usage, stdout);
		return 0;
	}
	const char *trace = output_given(argc, argv, &status, &srcline);
	int own = !trace;
	if (status)
		return status;
	if (own) {
		if (!mkdtemp(dir)) {
			cli_error("live: cannot make a directory in /tmp for the trace: %s", strerror(errno));
			return 1;
		}
		snprintf(path, sizeof(path), "%s/needle.data", dir);
	}
	char **rec = calloc((size_t)argc + 3, sizeof(*rec));
	if (!rec) {
		cli_error("out of memory");
		return 1;
	}
	int n = 0;
	rec[n++] = "record";
	if (own) {
		rec[n++] = "-o";
		rec[n++] = path;
	}
	for (int i = 1; i < argc; i++)
		rec[n++] = argv[i];

	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("live: fork: %s", strerror(errno));
		free(rec);
		return 1;
	}
	if (!pid)
		_exit(cmd_record(n, rec));
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	free(rec);

	if (own)
		trace = path;
	if (!trace || access(trace, R_OK)) {
		/* needle record said why. */
		if (own)
			rmdir(dir);
		return status ? status : 1;
	}
	/* --srcline, uftrace's live: the replay shows the lines. */
	char *rep[] = { "replay", "-i", (char *)trace, srcline ? "--srcline" : NULL, NULL };
	int rst = cmd_replay(srcline ? 4 : 3, rep);
	if (own) {
		unlink(path);
		rmdir(dir);
	}
	return rst ? rst : status;
}
