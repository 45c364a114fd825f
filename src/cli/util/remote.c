/* remote.c - what needle record --host and needle recv share: the hello,
 * the names a receiver accepts, connecting and reading the receiver's
 * lines (remote.h states the exchange). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/util/remote.h"

int remote_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > REMOTE_NAME_MAX || name[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (name[i] == '/' || (unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return 0;
	return 1;
}

void remote_hello(unsigned char *out, size_t name_len)
{
	memcpy(out, REMOTE_MAGIC, 12);
	out[12] = REMOTE_VERSION & 0xff;
	out[13] = REMOTE_VERSION >> 8;
	out[14] = (unsigned char)(name_len & 0xff);
	out[15] = (unsigned char)(name_len >> 8);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int remote_connect(const char *host, const char *port, unsigned wait_ms, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	int gai = getaddrinfo(host, port, &hints, &res);

	if (gai) {
		snprintf(err, errlen, "%s", gai_strerror(gai));
		return -1;
	}
	uint64_t until = now_ms() + wait_ms;
	int fd = -1;
	for (;;) {
		int refused = 0;
		for (ai = res; ai && fd < 0; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (fd < 0)
				continue;
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
				break;
			refused |= errno == ECONNREFUSED;
			snprintf(err, errlen, "%s", strerror(errno));
			close(fd);
			fd = -1;
		}
		if (fd >= 0 || !refused || now_ms() >= until)
			break;
		/* Not a hot path: a receiver started with us is not listening
		 * yet. */
		usleep(50 * 1000);
	}
	freeaddrinfo(res);
	return fd;
}

int remote_read_line(int fd, char *line, size_t len, int timeout_ms, volatile sig_atomic_t *stop, char *err,
		     size_t errlen)
{
	size_t n = 0;
	uint64_t until = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		uint64_t now = now_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = now >= until ? 0 : poll(&p, 1, (int)(until - now));
		if (r < 0 && errno == EINTR && !(stop && *stop))
			continue;
		if (r <= 0) {
			if (r && errno == EINTR)
				snprintf(err, errlen, "interrupted before it answered");
			else if (r)
				snprintf(err, errlen, "%s", strerror(errno));
			else
				snprintf(err, errlen, "no answer within %d s", timeout_ms / 1000);
			return -1;
		}
		/* Byte by byte: nothing after the line may be consumed (the
		 * trace follows "ready"), and these lines are few. */
		char c;
		ssize_t got = recv(fd, &c, 1, 0);
		if (got < 0 && errno == EINTR && !(stop && *stop))
			continue;
		if (got <= 0) {
			snprintf(err, errlen, "%s", !got ? "the receiver closed the connection"
					      : errno == EINTR ? "interrupted before it answered" : strerror(errno));
			return -1;
		}
		if (c == '\n') {
			line[n] = 0;
			return (int)n;
		}
		if (n + 1 >= len) {
			snprintf(err, errlen, "the receiver's answer is too long");
			return -1;
		}
		line[n++] = c;
	}
}

int remote_send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}
