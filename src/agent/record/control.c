/* control.c - `needle ctl PID COMMAND` reaches a recording process here.
 *
 * Connections come on the abstract UNIX socket "needle-<pid>", accepted
 * by a listener thread (named "needle-ctl") in a program needle record
 * started, or by the session thread of `needle record -p`, which waits
 * on its own socket anyway and polls this one beside it
 * (control_poll_fd, control_serve_pending): a second agent thread alive
 * beside the session would take a malloc arena of its own (64 MiB of
 * address space the C library never gives back) and a stack of its own.
 * One request per connection, one reply line (common/ctl_protocol.h):
 * a command line ("status", "snapshot"), or the line "config N" and N
 * bytes of a record_config, the changes needle ctl's filter, notrace,
 * tracer and depth make.  This file is the transport: it reads the line
 * and the bytes; what a request does is the handler's that control_start
 * was given (the recorder's ctl_request).  The reply is "ok <what is
 * traced now>" or "error <why>".  A change is applied under the agent's
 * control mutex as one patch batch.
 *
 * Invariants:
 *  - Abstract sockets have no file permissions, so each connection's
 *    credentials (SO_PEERCRED) decide: the process owner's uid and root
 *    are served, anyone else gets an error line.
 *  - The listening descriptor is close-on-exec and sits at a high number
 *    (below min(RLIMIT_NOFILE, 1024)), away from the numbers a program
 *    assumes are free.
 *  - The program may close it (daemons close every descriptor) or put
 *    another file at its number: before each accept the listener checks
 *    that the descriptor is still its socket (same inode), and opens a new
 *    one under the same name otherwise, never touching what the program
 *    put there.
 *  - A forked child closes its inherited copy (it has no listener
 *    thread): the name then lives and dies with the process that serves it.
 *  - The thread blocks the program's signals, so that none is delivered
 *    to it, but not SIGTRAP or needle's stop signal, which patching needs.
 *    The session thread that serves the socket under -p blocks the same.
 *  - Served by the caller, the socket is non-blocking: a client that left
 *    between the poll and the accept never holds the caller, which must
 *    also see needle record's detach.  A client that connects and says
 *    nothing holds it 2 s at most (SO_RCVTIMEO), as it holds the thread.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/base/control_lock.h"
#include "agent/record/control.h"
#include "common/ctl_protocol.h"
#include "common/fd_high.h"
#include "needle.h"

#define LINE_MAX_BYTES CTL_LINE_MAX

static int listen_fd = -1;
/* Set by control_stop; the listener leaves at its next look. */
static _Atomic int stopping;
static pthread_t listener_thread;
static int listener_running;
static int served_by_caller; /* control_start(0): no thread, polled */
static dev_t listen_dev;
static ino_t listen_ino;

static void reply(int fd, const char *status, const char *msg)
{
	char buf[LINE_MAX_BYTES + 16];
	int n = snprintf(buf, sizeof(buf), "%s %s\n", status, msg);
	/* MSG_NOSIGNAL: a client that left must not raise SIGPIPE here. */
	if (n > 0 && send(fd, buf, (size_t)n, MSG_NOSIGNAL) < 0)
		return;
}

/* What a request line asks, answered by the recorder (control_start). */
static control_handler handler;

static void handle(int fd, char *line, const uint8_t *body, size_t body_len)
{
	char msg[512];
	int err = handler(line, body, body_len, msg, sizeof(msg));
	reply(fd, err ? "error" : "ok", msg);
}

/* A CTL_CONFIG_REQUEST's line was read, with `extra` bytes of its body
 * after it: the rest of the body, then the request.  Not a hot path: the
 * body is allocated, as large as the request says (CTL_CONFIG_MAX at
 * most), and read under the connection's timeout. */
static void serve_config(int fd, char *line, size_t body_len, const char *extra, size_t extra_len)
{
	if (body_len > CTL_CONFIG_MAX || extra_len > body_len) {
		reply(fd, "error", "configuration too large, or longer than it said");
		return;
	}
	uint8_t *body = malloc(body_len ? body_len : 1);
	if (!body) {
		reply(fd, "error", "out of memory");
		return;
	}
	memcpy(body, extra, extra_len);
	size_t got = extra_len;
	while (got < body_len) {
		ssize_t n = read(fd, body + got, body_len - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < body_len)
		reply(fd, "error", "configuration cut short");
	else
		handle(fd, line, body, body_len);
	free(body);
}

static void serve(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char line[LINE_MAX_BYTES];
	size_t got = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != 0 && cred.uid != getuid() && cred.uid != geteuid())) {
		reply(fd, "error", "permission denied: only the owner of the process, or root, may control it");
		return;
	}
	/* One line (and a config request's bytes); a client that sends
	 * nothing, or no newline, gets an error. */
	struct timeval tv = { 2, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < sizeof(line) - 1) {
		ssize_t n = read(fd, line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(line, '\n', got))
			break;
	}
	line[got] = 0;
	char *nl = strchr(line, '\n');
	if (!nl) {
		reply(fd, "error", got ? "command too long or not ended by a newline" : "no command");
		return;
	}
	*nl = 0;
	size_t body_len;
	int used = 0;
	if (sscanf(line, "config %zu%n", &body_len, &used) == 1 && !line[used]) {
		serve_config(fd, line, body_len, nl + 1, got - (size_t)(nl + 1 - line));
		return;
	}
	if (nl > line && nl[-1] == '\r')
		nl[-1] = 0;
	handle(fd, line, NULL, 0);
}

/* A copy of fd out of the program's way (common/fd_high.h), close-on-
 * exec; the original is closed.  fd itself if no copy can be made. */
static int fd_high(int fd)
{
	int h = fd_dup_high(fd, F_DUPFD_CLOEXEC);
	if (h < 0)
		return fd;
	close(fd);
	return h;
}

/* Bind and listen on "needle-<pid>"; the new descriptor in listen_fd. */
static int listen_open(void)
{
	struct sockaddr_un addr;
	struct stat st;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (served_by_caller ? SOCK_NONBLOCK : 0), 0), err;

	if (fd < 0)
		return -errno;
	fd = fd_high(fd);
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, CTL_SOCKET_NAME, (int)getpid());
	if (bind(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
	    listen(fd, 8) || fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	listen_fd = fd;
	listen_dev = st.st_dev;
	listen_ino = st.st_ino;
	return 0;
}

/* Is listen_fd still the socket this file opened? */
static int listen_still_ours(void)
{
	struct stat st;
	return listen_fd >= 0 && !fstat(listen_fd, &st) && st.st_dev == listen_dev && st.st_ino == listen_ino;
}

static void pause_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&t, NULL);
}

/* 0 when listen_fd is this file's socket, opening a new one if the
 * program took the descriptor (the number is the program's now). */
static int listen_check(void)
{
	if (listen_still_ours())
		return 0;
	listen_fd = -1;
	return listen_open();
}

/* Accept one connection and serve it: 0, or -1 when none was accepted. */
static int accept_serve(void)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	serve(fd);
	close(fd);
	return 0;
}

static void *listener(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "needle-ctl");
	control_mark_agent_thread();
	while (!atomic_load(&stopping)) {
		if (listen_check()) {
			/* The old socket may still hold the name for a
			 * moment (or for good, if the program keeps a copy):
			 * try again. */
			pause_ms(1000);
			continue;
		}
		if (!accept_serve())
			continue;
		if (atomic_load(&stopping))
			break;
		if (errno == EBADF || errno == ENOTSOCK || errno == EINVAL)
			continue; /* checked at the top */
		if (errno != EINTR && errno != ECONNABORTED)
			pause_ms(100); /* EMFILE, ENOMEM: the queue keeps the client */
	}
	return NULL;
}

int control_poll_fd(void)
{
	if (!listener_running || !served_by_caller)
		return -1;
	return listen_check() ? -1 : listen_fd;
}

void control_serve_pending(void)
{
	/* Bounded: clients that keep connecting must not keep the caller
	 * from its own socket. */
	for (int i = 0; i < 16 && listener_running && served_by_caller && listen_still_ours(); i++)
		if (accept_serve())
			break;
}

static void after_fork_child(void)
{
	/* No listener here: a copy of the socket would keep the parent's
	 * name bound after the parent is gone, with nobody to answer. */
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	listener_running = 0;
}

int control_start(int own_thread, control_handler handle_request)
{
	static int atfork_done;
	sigset_t all, old;
	int err;

	if (listener_running)
		return 0;
	handler = handle_request;
	served_by_caller = !own_thread;
	if ((err = listen_open()))
		return err;
	atomic_store(&stopping, 0);
	if (own_thread) {
		sigfillset(&all);
		sigdelset(&all, SIGTRAP);
		sigdelset(&all, needle_stop_signal());
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = -pthread_create(&listener_thread, NULL, listener, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (!err) {
		listener_running = 1;
		if (!atfork_done++)
			pthread_atfork(NULL, NULL, after_fork_child);
	} else {
		close(listen_fd);
		listen_fd = -1;
	}
	return err;
}

void control_stop(void)
{
	if (!listener_running)
		return;
	if (!served_by_caller) {
		atomic_store(&stopping, 1);
		/* Wakes the accept (EINVAL on a listening socket that is
		 * shut down); if the program replaced the descriptor, the
		 * listener is in a pause or a serve with a 2 s timeout, and
		 * sees stopping next. */
		if (listen_still_ours())
			shutdown(listen_fd, SHUT_RDWR);
		pthread_join(listener_thread, NULL);
	}
	listener_running = 0;
	if (listen_still_ours())
		close(listen_fd);
	listen_fd = -1;
}
