/* agent_session.c - needle record's end of the socket a session with an
 * agent runs over (common/attach_protocol.h): listening under a fresh
 * abstract name, taking the connection of the one process expected, and
 * reading what the agent says.  attach.c (-p) and release.c (letting go
 * of a recording's forked children) both hold sessions.
 *
 * Invariants: a connection is taken only from the process it was opened
 * for (SO_PEERCRED), whoever else finds the name; nothing here blocks
 * past the caller's timeout; the agent's messages are printed on needle
 * record's stderr, never the process's. */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/record/record.h"
#include "common/attach_protocol.h"
#include "common/tsc.h"

int record_same_netns(pid_t pid)
{
	char path[64];
	struct stat self, other;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat("/proc/self/ns/net", &self) || stat(path, &other))
		return 1; /* cannot be told: tried */
	return self.st_ino == other.st_ino && self.st_dev == other.st_dev;
}

int agent_session_listen(char *name, size_t len)
{
	struct sockaddr_un addr;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned rnd = 0;

	if (fd < 0)
		return -1;
	if (getentropy(&rnd, sizeof(rnd)))
		rnd = (unsigned)monotonic_ns();
	snprintf(name, len, "needle-attach-%d-%08x", (int)getpid(), rnd);
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	size_t n = strlen(name);
	memcpy(addr.sun_path + 1, name, n);
	if (bind(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
	    listen(fd, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The agent's connection, from the target only, within timeout_ms. */
int agent_session_accept(int lfd, pid_t pid, int timeout_ms)
{
	struct pollfd p = { lfd, POLLIN, 0 };
	uint64_t end = monotonic_ns() + (uint64_t)timeout_ms * 1000000u;

	while (monotonic_ns() < end) {
		int left = (int)((end - monotonic_ns()) / 1000000u) + 1;
		if (poll(&p, 1, left) <= 0)
			continue;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) && cred.pid == pid)
			return fd;
		close(fd); /* someone else found the name */
	}
	return -1;
}

int agent_session_send(int fd, const uint8_t *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL);
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* What the agent sent, read without waiting: its messages (ATTACH_MESSAGE)
 * are printed here, on needle record's stderr, since the process's own
 * streams are never written (information only with NEEDLE_DEBUG set, as
 * libneedle shows it in a program needle record started).  1 once it
 * said it detached, -1 when the session ended (end of file, an error, or
 * a line of libneedle-boot.so, left unread for boot_error), else 0. */
int agent_session_read(int sock)
{
	static char buf[ATTACH_MESSAGE_MAX + 3];

	for (;;) {
		ssize_t n = recv(sock, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		if (n == 0 || (buf[0] != ATTACH_DETACHED && buf[0] != ATTACH_MESSAGE))
			return -1;
		if (buf[0] == ATTACH_DETACHED) {
			if (recv(sock, buf, 1, 0) != 1)
				return -1;
			return 1;
		}
		char *end = memchr(buf, 0, (size_t)n);
		if (!end)
			return (size_t)n == sizeof(buf) ? -1 : 0; /* the rest is on its way */
		size_t len = (size_t)(end - buf) + 1;
		if (recv(sock, buf, len, 0) != (ssize_t)len)
			return -1;
		const char *debug = getenv("NEEDLE_DEBUG");
		if (buf[1] == '0' || (debug && *debug))
			fprintf(stderr, "needle: %s%s", buf + 2, len > 3 && end[-1] == '\n' ? "" : "\n");
	}
}

