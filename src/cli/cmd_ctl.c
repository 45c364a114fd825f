/* cmd_ctl.c - `needle ctl PID COMMAND [ARGS]`: change what a running
 * `needle record --ctl` session traces, through the control socket of the
 * traced process (see src/agent/record/control.c for the commands). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"

static const char ctl_usage[] =
	"usage: needle ctl PID COMMAND [ARGS]\n"
	"  filter [GLOB...]    trace only these functions (none given: all)\n"
	"  notrace [GLOB...]   do not trace these (none given: none)\n"
	"  tracer function|function_graph\n"
	"  depth N             function_graph levels recorded (0: unlimited)\n"
	"  status              what is traced now\n"
	"PID must be a program recorded with 'needle record --ctl'.\n";

int cmd_ctl(int argc, char **argv)
{
	struct sockaddr_un addr;
	char line[4096], reply[4096];
	size_t len = 0;
	char *end;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(ctl_usage, stdout);
		return 0;
	}
	if (argc < 3) {
		fputs(ctl_usage, stderr);
		return 2;
	}
	long pid = strtol(argv[1], &end, 10);
	if (*end || pid <= 0) {
		cli_error("ctl: '%s' is not a process id", argv[1]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		int n = snprintf(line + len, sizeof(line) - len, "%s%s", i > 2 ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(line) - len - 1) {
			cli_error("ctl: command too long");
			return 2;
		}
		len += (size_t)n;
	}
	line[len++] = '\n';

	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "needle-%ld", pid);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) {
		cli_error("cannot reach process %ld: %s (is it recorded with 'needle record --ctl'?)", pid,
			  strerror(errno));
		return 1;
	}
	/* The process may answer (a refusal) and close before reading: no
	 * SIGPIPE, and its answer is read either way. */
	int send_errno = send(fd, line, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : errno;
	size_t got = 0;
	ssize_t r;
	while (got < sizeof(reply) - 1 && (r = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0)
		got += (size_t)r;
	close(fd);
	reply[got] = 0;
	reply[strcspn(reply, "\n")] = 0;
	if (!strncmp(reply, "ok ", 3)) {
		printf("%s\n", reply + 3);
		return 0;
	}
	if (!got && send_errno) {
		cli_error("cannot send to process %ld: %s", pid, strerror(send_errno));
		return 1;
	}
	cli_error("process %ld: %s", pid, !strncmp(reply, "error ", 6) ? reply + 6 : got ? reply : "no reply");
	return 1;
}
