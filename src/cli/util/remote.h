/* remote.h - a trace sent over TCP: `needle record --host` streams the
 * file it would have written, `needle recv` stores it (docs/file-format.md,
 * "Sending a trace").
 *
 * The exchange, on one connection:
 *   sender:   hello (REMOTE_HELLO_BYTES: the magic, u16 version, u16 name
 *             length, little-endian), the name, then the trace file's bytes
 *             until it shuts down its side
 *   receiver: "ready\n" once it can store the trace under that name, or
 *             "refused: WHY\n" and closes
 *   receiver: after the sender's end, "stored BYTES complete\n" or "stored
 *             BYTES incomplete\n" once the file is in place under its name
 *             (and --run-cmd has run on it)
 * Every line the receiver sends is shorter than REMOTE_LINE_MAX. */
#ifndef NEEDLE_REMOTE_H
#define NEEDLE_REMOTE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define REMOTE_MAGIC "NEEDLE-SEND\n" /* 12 bytes, no NUL sent */
#define REMOTE_VERSION 1
#define REMOTE_HELLO_BYTES 16
#define REMOTE_NAME_MAX 255
#define REMOTE_LINE_MAX 512
#define REMOTE_DEFAULT_PORT "8090" /* uftrace recv's */

/* 1 if name can be a file in the receiver's directory: a file name alone
 * (no '/'), not "." or "..", not hidden (the receiver's partial files are),
 * printable, at most REMOTE_NAME_MAX bytes. */
int remote_name_ok(const char *name);

/* The name a trace file's path is sent under: its last component. */
static inline const char *remote_file_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* The hello for name (which remote_name_ok accepts) in out[REMOTE_HELLO_BYTES]. */
void remote_hello(unsigned char *out, size_t name_len);

/* Connect to host:port (a name or an address, IPv4 or IPv6), trying
 * again for up to wait_ms while the connection is refused (a receiver
 * started at the same moment is not listening yet).  The descriptor
 * (blocking, close-on-exec), or -1 with why in err. */
int remote_connect(const char *host, const char *port, unsigned wait_ms, char *err, size_t errlen);

/* One line from fd, without its newline, within timeout_ms: its length,
 * or -1 (closed, timed out, too long: why in err).  A signal that sets
 * *stop (when stop is not NULL) ends the wait. */
int remote_read_line(int fd, char *line, size_t len, int timeout_ms, volatile sig_atomic_t *stop, char *err,
		     size_t errlen);

/* Write all of p to a socket (MSG_NOSIGNAL: a closed peer is an error,
 * never a SIGPIPE).  0 or -1 with errno. */
int remote_send_all(int fd, const void *p, size_t n);

#endif
