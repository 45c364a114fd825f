/* log.c - owns the print callback: where libneedle's warnings and errors
 * go.  Messages are for people; callers act on the negative errno.
 *
 * In a program needle record started, or one that uses the API, they go
 * to the process's stderr (or the callback it set).  In a process needle
 * record -p attached to, the process's streams are its own: from
 * needle_remote_attach on, warnings and information go to needle record
 * over the session socket (common/attach_protocol.h, ATTACH_MESSAGE),
 * held until the session connects, and dropped once it has ended; debug
 * messages are not sent (there can be one per function of a library).
 *
 * Invariants: once routed, nothing is ever written to the process's
 * stderr; a message is sent with one send(2) (a unix stream socket
 * queues a small one whole, so messages from two threads never
 * interleave); route_lock is never held across a call that can log; a
 * forked child gets it free (the parent's session thread may have held it
 * at the fork, and the child has no such thread to give it back). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agent/base/log.h"
#include "common/attach_protocol.h"

static int print_stderr(enum needle_print_level level, const char *fmt, va_list ap)
{
	/* NEEDLE_DEBUG=1 in the environment shows info and debug messages too. */
	static int verbosity = -1;
	if (verbosity < 0) {
		const char *env = getenv("NEEDLE_DEBUG");
		verbosity = env && *env ? atoi(env) + 1 : 0;
	}
	if ((int)level > verbosity)
		return 0;
	fputs("needle: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

static needle_print_fn print_fn = print_stderr;

/* The session route: 0 (stderr, the callback), ROUTE_HOLD (messages kept
 * in held[] until a session connects), ROUTE_SOCKET (sent on route_fd) or
 * ROUTE_DROP (the session ended: nobody to tell). */
enum { ROUTE_NONE, ROUTE_HOLD, ROUTE_SOCKET, ROUTE_DROP };
static _Atomic int route;
static int route_fd = -1;
static pthread_mutex_t route_lock = PTHREAD_MUTEX_INITIALIZER;

static void route_lock_after_fork(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	route_lock = fresh;
	/* The session's socket is not the child's (closed there, its number
	 * free for the program's next descriptor): nothing is sent on it. */
	if (atomic_load(&route) == ROUTE_SOCKET) {
		route_fd = -1;
		atomic_store(&route, ROUTE_DROP);
	}
}

__attribute__((constructor)) static void route_lock_atfork(void)
{
	pthread_atfork(NULL, NULL, route_lock_after_fork);
}
#define HELD_BYTES 8192
static char held[HELD_BYTES];
static size_t held_len;

void log_route_hold(void)
{
	pthread_mutex_lock(&route_lock);
	held_len = 0;
	route_fd = -1;
	atomic_store(&route, ROUTE_HOLD);
	pthread_mutex_unlock(&route_lock);
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

void log_route_socket(int fd)
{
	pthread_mutex_lock(&route_lock);
	send_all(fd, held, held_len);
	held_len = 0;
	route_fd = fd;
	atomic_store(&route, ROUTE_SOCKET);
	pthread_mutex_unlock(&route_lock);
}

void log_route_end(void)
{
	pthread_mutex_lock(&route_lock);
	route_fd = -1;
	held_len = 0;
	atomic_store(&route, ROUTE_DROP);
	pthread_mutex_unlock(&route_lock);
}

NEEDLE_API needle_print_fn needle_set_print(needle_print_fn fn)
{
	needle_print_fn old = print_fn;
	print_fn = fn;
	return old;
}

static void routed(enum needle_print_level level, const char *fmt, va_list ap)
{
	char frame[ATTACH_MESSAGE_MAX + 3];

	if (level > NEEDLE_INFO || atomic_load(&route) == ROUTE_DROP)
		return;
	frame[0] = ATTACH_MESSAGE;
	frame[1] = (char)('0' + level);
	int n = vsnprintf(frame + 2, ATTACH_MESSAGE_MAX + 1, fmt, ap);
	if (n < 0)
		return;
	size_t len = (size_t)n > ATTACH_MESSAGE_MAX ? ATTACH_MESSAGE_MAX : (size_t)n;
	/* A NUL ends the frame: none may be inside (vsnprintf wrote none
	 * before its own). */
	frame[2 + len] = 0;
	len += 3;
	pthread_mutex_lock(&route_lock);
	if (atomic_load(&route) == ROUTE_SOCKET && route_fd >= 0) {
		ssize_t w;
		do
			w = send(route_fd, frame, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (w < 0 && errno == EINTR);
	} else if (atomic_load(&route) == ROUTE_HOLD && held_len + len <= HELD_BYTES) {
		memcpy(held + held_len, frame, len);
		held_len += len;
	}
	pthread_mutex_unlock(&route_lock);
}

void needle_log(enum needle_print_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (atomic_load(&route) != ROUTE_NONE) {
		routed(level, fmt, ap);
	} else {
		needle_print_fn fn = print_fn;
		if (fn)
			fn(level, fmt, ap);
	}
	va_end(ap);
}
