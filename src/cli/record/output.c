/* output.c - the trace file of `needle record`.
 *
 * Invariants:
 *  - FILE is written in place, never under another name, so that whatever
 *    reached the disk is where the user looks, even when needle record is
 *    killed: the header, the modules and sites and a first clock section
 *    come first, then chunks as they are drained; a file without its END
 *    section is a recording that was cut short.
 *  - Before the program starts, FILE is known to be writable, not a
 *    directory, and absent, empty, a needle trace, or given with -f.
 *  - needle record holds a write lock (fcntl, whole file) on FILE from
 *    then until it exits, so a second recording to the same file is
 *    refused instead of one of the two being lost.  The lock belongs to
 *    needle record's process: no other descriptor of FILE may be opened
 *    and closed here, which would drop it.  The descriptor is
 *    close-on-exec and closed in the child: the program never has it.
 *  - The old contents are replaced only once the agent records
 *    (record_out_begin): a program that cannot be traced leaves FILE as it
 *    was, and a FILE created for it is removed.
 *  - A mark is taken after every section group that fflush() put in the
 *    file.  After the first write error (a full disk, a file size limit)
 *    no chunk is written; at the end the file is cut back to the newest
 *    mark and closed with the END section, stepping back one mark at a
 *    time (and then leaving out the thread names) until that fits.
 *  - With --host the same bytes go to needle recv instead, over one TCP
 *    connection opened (and answered "ready") before the program starts;
 *    nothing is written here.  The stream cannot be cut back, so it is a
 *    pipe's case: after a write error it ends where it broke, and the
 *    receiver keeps that as a trace without END.  The recording is said
 *    to be stored only when the receiver answers that its file ends with
 *    END (record_out_confirm).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/record/record.h"
#include "format/trace_format.h"

static void say_locked(const char *path, int fd)
{
	struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char comm[64] = "", p[64];
	FILE *f;

	if (fcntl(fd, F_GETLK, &q) || q.l_type == F_UNLCK || q.l_pid <= 0) {
		cli_error("%s is locked by another process; choose another file with -o", path);
		return;
	}
	snprintf(p, sizeof(p), "/proc/%d/comm", (int)q.l_pid);
	if ((f = fopen(p, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	if (!strcmp(comm, "needle"))
		cli_error("%s is being written by needle record (PID %d); wait for it to end, or choose another file "
			  "with -o", path, (int)q.l_pid);
	else
		cli_error("%s is locked by PID %d (%s); choose another file with -o", path, (int)q.l_pid,
			  comm[0] ? comm : "?");
}

/* stdio's buffer, twice OUT_COMMIT_BYTES: the commits decide when bytes
 * go out (one write a MiB), not a 4 KiB buffer (two writes a chunk), nor
 * a buffer that fills just before a commit.  Without memory for it,
 * stdio's own. */
#define OUT_BUFFER_BYTES (2 * OUT_COMMIT_BYTES)
static void out_buffer(struct record_out *out)
{
	if ((out->buf = malloc(OUT_BUFFER_BYTES)) && setvbuf(out->f, out->buf, _IOFBF, OUT_BUFFER_BYTES)) {
		free(out->buf);
		out->buf = NULL;
	}
}

int record_out_open(struct record_out *out, const char *path, int force)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat st;
	int fd = -1;

	memset(out, 0, sizeof(*out));
	out->path = path;
	out->fd = -1;
	/* O_EXCL first, to know whether the file is ours to remove if
	 * nothing gets recorded; the retry covers a file removed between. */
	for (int tries = 0; tries < 8; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
		if (fd >= 0) {
			out->created = 1;
			break;
		}
		if (errno != EEXIST)
			break;
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (fd >= 0 || errno != ENOENT)
			break;
	}
	if (fd < 0) {
		if (errno == EISDIR)
			cli_error("cannot write %s: it is a directory; name a file (-o FILE; -d, uftrace's spelling, names the file too)", path);
		else
			cli_error("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	/* ENOLCK and the like: a file system without locks still records. */
	if (fcntl(fd, F_SETLK, &fl) && (errno == EACCES || errno == EAGAIN)) {
		say_locked(path, fd);
		close(fd);
		return -1;
	}
	if (fstat(fd, &st)) {
		cli_error("cannot write %s: %s", path, strerror(errno));
		goto fail;
	}
	out->regular = S_ISREG(st.st_mode);
	if (!force && !out->regular) {
		cli_error("%s is not a regular file: not writing a trace into it (use --force to write it anyway)", path);
		goto fail;
	}
	if (!force && out->regular && st.st_size > 0) {
		char magic[8];
		if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
		    memcmp(magic, TRACE_MAGIC, sizeof(magic))) {
			cli_error("%s exists and is not a needle trace: not overwriting it (use --force to overwrite it, or -o "
				  "to choose another file)", path);
			goto fail;
		}
	}
	if (!(out->f = fdopen(fd, "w"))) {
		cli_error("cannot write %s: %s", path, strerror(errno));
		goto fail;
	}
	out_buffer(out);
	out->fd = fd;
	return 0;
fail:
	if (out->created)
		unlink(path);
	close(fd);
	return -1;
}

/* The socket as the writer's FILE: send() with MSG_NOSIGNAL (a receiver
 * gone is EPIPE, a write error said as such, never a SIGPIPE of needle
 * record's), a signal's EINTR and short sends retried (needle record's SIGCHLD has no
 * SA_RESTART, and stdio would take EINTR for an error and end the
 * stream) unless it asked the recording to stop: then a receiver that
 * stopped reading cannot hold needle record. */
static ssize_t socket_write(void *cookie, const char *buf, size_t n)
{
	int fd = (int)(intptr_t)cookie;
	size_t done = 0;

	/* All n bytes: a send() cut short by a signal returns the bytes it
	 * sent, and glibc's cookie stream takes a short write for an error. */
	while (done < n) {
		ssize_t w = send(fd, buf + done, n - done, MSG_NOSIGNAL);
		if (w > 0)
			done += (size_t)w;
		else if (w == 0 || errno != EINTR || record_stop)
			return done ? (ssize_t)done : w;
	}
	return (ssize_t)done;
}

static int socket_close(void *cookie)
{
	return close((int)(intptr_t)cookie);
}

int record_out_connect(struct record_out *out, const char *host, const char *port, const char *name)
{
	unsigned char hello[REMOTE_HELLO_BYTES];
	char err[256], line[REMOTE_LINE_MAX];
	size_t n = strlen(name);

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	out->remote = 1;
	/* An IPv6 address in brackets, as in a URL: [::1]:8090. */
	int v6 = strchr(host, ':') != NULL;
	snprintf(out->where, sizeof(out->where), "%s at %s%s%s:%s", name, v6 ? "[" : "", host, v6 ? "]" : "", port);
	out->path = out->where;
	int fd = remote_connect(host, port, 2000, err, sizeof(err));
	if (fd < 0) {
		cli_error("--host: cannot connect to %s port %s: %s (is 'needle recv --port %s' running there?)", host,
			  port, err, port);
		return -1;
	}
	remote_hello(hello, n);
	if (remote_send_all(fd, hello, sizeof(hello)) || remote_send_all(fd, name, n)) {
		cli_error("--host: cannot send to %s port %s: %s", host, port, strerror(errno));
		goto fail;
	}
	if (remote_read_line(fd, line, sizeof(line), 10000, NULL, err, sizeof(err)) < 0) {
		cli_error("--host: %s port %s did not answer as needle recv does: %s", host, port, err);
		goto fail;
	}
	if (strcmp(line, "ready")) {
		cli_error("--host: %s port %s: %s", host, port,
			  strncmp(line, "refused: ", 9) ? "not needle recv (an unknown answer)" : line);
		goto fail;
	}
	out->fd = fd;
	cookie_io_functions_t io = { .write = socket_write, .close = socket_close };
	if (!(out->f = fopencookie((void *)(intptr_t)fd, "w", io))) {
		cli_error("--host: %s", strerror(errno));
		out->fd = -1;
		goto fail;
	}
	out_buffer(out);
	return 0;
fail:
	close(fd);
	return -1;
}

int record_out_confirm(struct record_out *out)
{
	char err[256], line[REMOTE_LINE_MAX];
	unsigned long long bytes;
	char verdict[16];

	if (fflush(out->f) || shutdown(out->fd, SHUT_WR)) {
		cli_error("cannot send %s: %s", out->where, strerror(errno));
		return -1;
	}
	/* The receiver answers once the file is in place and its --run-cmd
	 * has run: as long as a replay of the trace may take. */
	if (remote_read_line(out->fd, line, sizeof(line), 3600 * 1000, &record_stop, err, sizeof(err)) < 0) {
		cli_error("sent %s, but the receiver did not say it stored it: %s", out->where, err);
		return -1;
	}
	if (sscanf(line, "stored %llu %15s", &bytes, verdict) != 2 || strcmp(verdict, "complete")) {
		cli_error("sent %s, but the receiver answered '%s'", out->where, line);
		return -1;
	}
	return 0;
}

int record_out_begin(struct recording *r)
{
	struct record_out *out = &r->out;

	if (out->regular && ftruncate(out->fd, 0))
		out->err = errno;
	out->begun = 1;
	if (trace_writer_open(&r->w, out->f, record_tracer(r->o)) && !out->err)
		out->err = r->w.err;
	return out->err ? -out->err : 0;
}

static int flush_out(struct recording *r)
{
	struct record_out *out = &r->out;

	if (r->w.err)
		return r->w.err;
	if (fflush(out->f))
		return errno ? errno : EIO;
	return 0;
}

void record_out_commit_pending(struct recording *r)
{
	if (r->w.bytes != r->out.committed)
		record_out_commit(r);
}

void record_out_commit(struct recording *r)
{
	struct record_out *out = &r->out;
	int err;

	if (out->err)
		return;
	if ((err = flush_out(r))) {
		/* What stdio still holds would be written at the next flush,
		 * behind a hole: drop it; the end goes back to a mark. */
		out->err = err;
		__fpurge(out->f);
		clearerr(out->f);
		return;
	}
	out->committed = r->w.bytes;
	off_t end = ftello(out->f);
	struct out_mark m = { (uint64_t)end, r->w.events, r->w.chunks, r->w.salvaged };
	if (!out->have_base) {
		out->base = m;
		out->have_base = 1;
		return;
	}
	out->marks[out->mark_next] = m;
	out->mark_next = (out->mark_next + 1) % OUT_MARKS;
	if (out->mark_cnt < OUT_MARKS)
		out->mark_cnt++;
}

/* Put the write position at a mark, with nothing after it in the file
 * (a regular file: the only kind that can be cut). */
static int cut_to(struct recording *r, uint64_t end)
{
	struct record_out *out = &r->out;

	__fpurge(out->f);
	clearerr(out->f);
	r->w.err = 0;
	if (ftruncate(out->fd, (off_t)end))
		return -1;
	return fseeko(out->f, (off_t)end, SEEK_SET);
}

int record_out_finish(struct recording *r, int (*tail)(struct recording *, const struct out_mark *, int minimal),
		      struct out_mark *kept)
{
	struct record_out *out = &r->out;
	int first_err = out->err;

	if (!out->have_base)
		return -1;      /* not even the header and the symbols fit */
	if (!out->regular) {
		/* A pipe or a device (-f): what was written stays written. */
		*kept = out->mark_cnt ? out->marks[(out->mark_next + OUT_MARKS - 1) % OUT_MARKS] : out->base;
		if (first_err)
			return -1;
		int err = tail(r, kept, 0) ? r->w.err : flush_out(r);
		if (err)
			out->err = err;
		return err ? -1 : 0;
	}
	/* Newest mark first: with no error that is where the file ends. */
	for (unsigned i = 0; i <= out->mark_cnt; i++) {
		const struct out_mark *m = i < out->mark_cnt
			? &out->marks[(out->mark_next + OUT_MARKS - 1 - i) % OUT_MARKS] : &out->base;
		for (int minimal = 0; minimal <= 1; minimal++) {
			if ((i || minimal || first_err) && cut_to(r, m->end))
				continue;
			int err = tail(r, m, minimal) ? r->w.err : flush_out(r);
			if (!err && fsync(out->fd))
				err = errno;
			if (!err) {
				*kept = *m;
				return i || minimal || first_err;
			}
			if (!out->err)
				out->err = err;
		}
	}
	/* Nothing fits: leave the file cut at the newest mark, without END. */
	const struct out_mark *newest = out->mark_cnt ? &out->marks[(out->mark_next + OUT_MARKS - 1) % OUT_MARKS]
						      : &out->base;
	cut_to(r, newest->end);
	*kept = *newest;
	return -1;
}

void record_out_close(struct record_out *out)
{
	if (out->f)
		fclose(out->f);
	else if (out->fd >= 0)
		close(out->fd);
	free(out->buf); /* after fclose: stdio's until then */
	out->buf = NULL;
	out->f = NULL;
	out->fd = -1;
}

void record_out_abandon(struct record_out *out)
{
	/* Still under the lock, so no other recording has begun on it. */
	if (out->created && !out->begun)
		unlink(out->path);
	if (out->f) {
		/* Nothing of ours is buffered that should reach the file. */
		__fpurge(out->f);
	}
	record_out_close(out);
}
