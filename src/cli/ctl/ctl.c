/* ctl.c - `needle ctl PID COMMAND [ARGS]`: change what a running
 * `needle record --ctl` session traces, through the control socket of the
 * traced process (see src/agent/record/control.c for the commands).
 *
 * Invariants:
 *  - One request, one reply line: filter, notrace, tracer and depth go as
 *    a record_config whose fields are the ones changed (the codec every
 *    start-up uses), any other command as its line; the reply's "ok" text goes to
 *    stdout, anything else is an error on stderr and exit 1.
 *  - PID may be the program's, or that of the `needle record` running it:
 *    then its child that serves a control socket is used, and stderr says
 *    which PID that was.
 *  - When no socket answers, the reason is found from what /proc shows of
 *    the process (it exists; it carries needle's start-up variable in
 *    /proc/PID/environ, which keeps the environment the process was
 *    started with: RECORD_CONFIG_ENV, with the PID needle record started
 *    when it serves a control socket), so
 *    that the message says what happened rather than what the socket call
 *    returned.
 *  - A process that accepts but never answers (it is stopped, say) does
 *    not hang ctl: the wait for the reply is bounded.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/ctl/ctl.h"
#include "cli/util/cli_util.h"
#include "cli/util/procfs.h"
#include "common/ctl_protocol.h"
#include "common/record_config.h"


static const char ctl_usage[] =
	"usage: needle ctl PID COMMAND [ARGS]\n"
	"  filter [GLOB...]    trace only these functions (none given: all)\n"
	"  notrace [GLOB...]   do not trace these (none given: none)\n"
	"  tracer function|function_graph\n"
	"  depth N             function_graph levels recorded (0: unlimited)\n"
	"  snapshot            needle record --snapshot: write the newest events out now\n"
	"  kernel on|off       needle record --kernel: record the kernel's events, or pause them\n"
	"  status              what is traced now\n"
	"PID is a program recorded with 'needle record --ctl' (which prints it), or the\n"
	"PID of that needle record.  Only the program's owner, or root, may control it.\n";

/* Connect to "needle-<pid>"; the socket, or -1 with errno set. */
static int ctl_connect(long pid)
{
	struct sockaddr_un addr;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, CTL_SOCKET_NAME, (int)pid);
	if (connect(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The value of variable name in /proc/PID/environ: 1 found, 0 not, -1
 * unreadable. */
static int proc_env(long pid, const char *name, char *val, size_t len)
{
	size_t n, nl = strlen(name);
	char *env = proc_read((pid_t)pid, "environ", &n);

	if (!env)
		return -1;
	for (char *p = env; p < env + n; p += strlen(p) + 1) {
		if (!strncmp(p, name, nl) && p[nl] == '=') {
			snprintf(val, len, "%s", p + nl + 1);
			free(env);
			return 1;
		}
	}
	free(env);
	return 0;
}

/* Is pid a `needle record`?  Its command line: ".../needle record ...". */
static int is_needle_record(long pid)
{
	size_t n;
	char *cmd = proc_read((pid_t)pid, "cmdline", &n);
	int yes = 0;

	if (cmd && n) {
		const char *base = strrchr(cmd, '/');
		base = base ? base + 1 : cmd;
		size_t first = strlen(cmd) + 1;
		yes = !strcmp(base, "needle") && first < n && !strcmp(cmd + first, "record");
	}
	free(cmd);
	return yes;
}

/* Children of pid, from every /proc/N/stat ("N (comm) S PPID ...").  Up
 * to max in out; returns how many. */
static size_t proc_children(long pid, long *out, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		long p = atol(e->d_name);
		char *st = proc_read(p, "stat", NULL);
		char *rp = st ? strrchr(st, ')') : NULL;
		long ppid;
		if (rp && sscanf(rp + 1, " %*c %ld", &ppid) == 1 && ppid == pid)
			out[n++] = p;
		free(st);
	}
	closedir(d);
	return n;
}

/* No control socket answers for pid: say why, in one line. */
static void explain(long pid, int err)
{
	char comm[64], val[32];

	if (kill((pid_t)pid, 0) && errno == ESRCH) {
		cli_error("no process with PID %ld", pid);
		return;
	}
	proc_comm((pid_t)pid, comm, sizeof(comm));
	if (err != ECONNREFUSED) {
		cli_error("cannot reach process %ld (%s): %s", pid, comm, strerror(err));
		return;
	}
	/* "FD", or "FD ctl=PID" (common/record_config.h). */
	int recorded = proc_env(pid, RECORD_CONFIG_ENV, val, sizeof(val));
	const char *ctl_at = recorded > 0 ? strstr(val, " ctl=") : NULL;
	int ctl = recorded < 0 ? -1 : ctl_at != NULL;
	long ctl_pid = ctl_at ? atol(ctl_at + 5) : 0;
	if (ctl < 0) {
		cli_error("process %ld (%s) has no needle control socket, and its environment cannot be read to tell "
			  "why: was it started with 'needle record --ctl'?", pid, comm);
	} else if (ctl > 0 && ctl_pid == pid) {
		cli_error("process %ld (%s) was recorded with --ctl, but its control socket is gone", pid, comm);
	} else if (ctl > 0) {
		cli_error("process %ld (%s) was forked from PID %ld, the process needle record started: only that one "
			  "has a control socket", pid, comm, ctl_pid);
	} else if (recorded > 0) {
		cli_error("process %ld (%s) is recorded without --ctl: record it with 'needle record --ctl' to "
			  "control it", pid, comm);
	} else {
		cli_error("process %ld (%s) is not recorded by needle: record it with 'needle record -p %ld --ctl', "
			  "or start it with 'needle record --ctl -- PROG', to control it", pid, comm, pid);
	}
}

/* pid is a `needle record`: its child that serves a socket, connected. */
static int connect_via_record(long rec, long *pid)
{
	long kids[64];
	size_t n = proc_children(rec, kids, 64);

	for (size_t i = 0; i < n; i++) {
		int fd = ctl_connect(kids[i]);
		if (fd >= 0) {
			*pid = kids[i];
			fprintf(stderr, "needle: PID %ld is needle record; controlling its program, PID %ld\n", rec,
				kids[i]);
			return fd;
		}
	}
	/* None serves: explain with the first child that is needle's. */
	for (size_t i = 0; i < n; i++) {
		char val[32];
		if (proc_env(kids[i], RECORD_CONFIG_ENV, val, sizeof(val)) > 0) {
			explain(kids[i], ECONNREFUSED);
			return -1;
		}
	}
	cli_error("PID %ld is needle record, and no program it records is running", rec);
	return -1;
}

/* filter, notrace, tracer and depth: a CTL_CONFIG_REQUEST whose fields
 * are the ones changed.  The request (line and bytes) into *req: 0, or
 * the command's exit status after saying why. */
static int config_request(const char *cmd, int argc, char **argv, char **req, size_t *req_len)
{
	struct record_config change;
	char *globs = NULL;

	memset(&change, 0, sizeof(change));
	if (!strcmp(cmd, "tracer")) {
		if (argc != 1 || (strcmp(argv[0], "function") && strcmp(argv[0], "function_graph"))) {
			cli_error("ctl: tracer must be function or function_graph");
			return 1;
		}
		RECORD_CONFIG_SET(&change, graph, !strcmp(argv[0], "function_graph"));
	} else if (!strcmp(cmd, "depth")) {
		char *end;
		long d = argc == 1 ? strtol(argv[0], &end, 10) : -1;
		if (argc != 1 || !*argv[0] || *end || d < 0 || d > 1000000) {
			cli_error("ctl: depth needs a number (0 for unlimited)");
			return 1;
		}
		RECORD_CONFIG_SET(&change, depth, d);
	} else {
		/* GLOB... as the agent's lists hold them, one per line; words
		 * within an argument are globs of their own, as they always
		 * were.  None: every function (filter), none (notrace). */
		size_t len = 0, cap = 1;
		for (int i = 0; i < argc; i++)
			cap += strlen(argv[i]) + 1;
		if (!(globs = malloc(cap))) {
			cli_error("ctl: out of memory");
			return 1;
		}
		for (int i = 0; i < argc; i++) {
			for (const char *w = argv[i]; *w;) {
				size_t n = strcspn(w, " \t");
				if (n) {
					if (len)
						globs[len++] = '\n';
					memcpy(globs + len, w, n);
					len += n;
				}
				w += n + strspn(w + n, " \t");
			}
		}
		globs[len] = 0;
		if (!strcmp(cmd, "filter"))
			change.filter = globs;
		else
			change.notrace = globs;
	}
	uint8_t *bytes;
	size_t n;
	int err = record_config_encode(&change, &bytes, &n);
	free(globs);
	if (err) {
		cli_error("ctl: %s", err == -E2BIG ? "too many globs" : "out of memory");
		return 1;
	}
	char head[64];
	int hl = snprintf(head, sizeof(head), CTL_CONFIG_REQUEST, n);
	if (!(*req = malloc((size_t)hl + n))) {
		free(bytes);
		cli_error("ctl: out of memory");
		return 1;
	}
	memcpy(*req, head, (size_t)hl);
	memcpy(*req + hl, bytes, n);
	*req_len = (size_t)hl + n;
	free(bytes);
	return 0;
}

/* Any other command: its words, as one line. */
static int line_request(int argc, char **argv, char **req, size_t *req_len)
{
	size_t len = 0;

	if (!(*req = malloc(CTL_LINE_MAX))) {
		cli_error("ctl: out of memory");
		return 1;
	}
	for (int i = 0; i < argc; i++) {
		int n = snprintf(*req + len, CTL_LINE_MAX - len, "%s%s", i ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= CTL_LINE_MAX - len - 1) {
			free(*req);
			cli_error("ctl: command too long");
			return 2;
		}
		len += (size_t)n;
	}
	(*req)[len++] = '\n';
	*req_len = len;
	return 0;
}

/* All of len bytes, or the errno of the send that failed. */
static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int cmd_ctl(int argc, char **argv)
{
	char reply[4096];
	char *end, *req;
	size_t req_len;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(ctl_usage, stdout);
		return 0;
	}
	if (argc < 3) {
		cli_error("ctl: give a process and a command: needle ctl PID COMMAND (needle ctl --help lists them)");
		return 2;
	}
	long pid = strtol(argv[1], &end, 10);
	if (*end || pid <= 0 || pid > 0x7fffffff) {
		cli_error("ctl: '%s' is not a process id", argv[1]);
		return 2;
	}
	const char *cmd = argv[2];
	int rc = !strcmp(cmd, "filter") || !strcmp(cmd, "notrace") || !strcmp(cmd, "tracer") || !strcmp(cmd, "depth")
			 ? config_request(cmd, argc - 3, argv + 3, &req, &req_len)
			 : line_request(argc - 2, argv + 2, &req, &req_len);
	if (rc)
		return rc;

	int fd = ctl_connect(pid);
	if (fd < 0) {
		int err = errno;
		if (err == ECONNREFUSED && is_needle_record(pid))
			fd = connect_via_record(pid, &pid);
		else
			explain(pid, err);
		if (fd < 0) {
			free(req);
			return 1;
		}
	}
	struct timeval tv = { CTL_REPLY_TIMEOUT_S, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* The process may answer (a refusal) and close before reading: no
	 * SIGPIPE, and its answer is read either way. */
	int send_errno = send_all(fd, req, req_len);
	free(req);
	size_t got = 0;
	ssize_t r = 0;
	while (got < sizeof(reply) - 1 && (r = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0)
		got += (size_t)r;
	int read_errno = r < 0 ? errno : 0;
	close(fd);
	reply[got] = 0;
	reply[strcspn(reply, "\n")] = 0;
	if (!strncmp(reply, CTL_REPLY_OK, 3)) {
		printf("%s\n", reply + 3);
		return 0;
	}
	if (!got && send_errno) {
		cli_error("cannot send to process %ld: %s", pid, strerror(send_errno));
		return 1;
	}
	if (!got && (read_errno == EAGAIN || read_errno == EWOULDBLOCK)) {
		cli_error("process %ld did not answer within %d s (is it stopped?)", pid, CTL_REPLY_TIMEOUT_S);
		return 1;
	}
	cli_error("process %ld: %s", pid, !strncmp(reply, "error ", 6) ? reply + 6 : got ? reply : "no reply");
	return 1;
}
