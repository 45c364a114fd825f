/* recv.c - `needle recv`: store the traces `needle record --host` sends
 * (uftrace recv's counterpart; the exchange is in cli/util/remote.h).
 *
 * Invariants:
 *  - A trace is written under a hidden name of its own (".recv-PID-N")
 *    and renamed to NAME only when its sender is done or gone and sent at
 *    least the file's header, so a file under a sender's name is never one
 *    still being written, and an older NAME stays until a newer one
 *    replaces it whole or cut short (a recording that never began, which
 *    closes with nothing sent, leaves it as it was).
 *  - NAME is replaced only if it is absent or a needle trace (as needle
 *    record's -o refuses another file), and only one sender at a time
 *    sends a NAME: a second is refused at its hello, before its program
 *    runs, as a second local recording to one file is.
 *  - Whether a trace is whole is read from its bytes, not taken from the
 *    sender: the stream is followed section by section (file header, then
 *    {type, crc, length} headers and payloads) and is complete only if it
 *    ends exactly after an END section.  A cut stream keeps what arrived
 *    (the views read such a file up to its last whole chunk) and is said
 *    to be cut; the sender is told, and says so too.
 *  - One sender's slowness or death never stalls another: every socket is
 *    read as poll says it is ready (only the fsync of a trace that ended
 *    holds the loop), --run-cmd runs in a child, one at a time in the
 *    order the traces ended, and its sender's answer waits for it.
 *  - Nothing but the receiver's own files is written: a name with a '/',
 *    a hidden one or "." / ".." is refused at the hello.
 *  - A --run-cmd child gets the signal mask and dispositions recv was
 *    given (recv ignores nothing: its socket writes are MSG_NOSIGNAL). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netdb.h>
#include <unistd.h>

#include "cli/recv.h"
#include "cli/util/cli_util.h"
#include "cli/util/remote.h"
#include "format/trace_format.h"

static const char recv_usage[] =
	"usage: needle recv [-d DIR] [--port N] [--run-cmd CMD]\n"
	"\n"
	"Store the traces 'needle record --host HOST' sends (uftrace recv's counterpart), each in DIR\n"
	"under the name of the sender's -o file (needle.data by default), until interrupted.\n"
	"\n"
	"  -d, --data DIR     where to store them (made if missing; default: the current directory)\n"
	"      --port N       the TCP port to listen on, every address of the machine (default 8090,\n"
	"                     uftrace's; 0: one the system picks, said on stderr)\n"
	"      --run-cmd CMD  after each trace is stored, run CMD with /bin/sh in DIR, its name in\n"
	"                     $NEEDLE_RECV_FILE (e.g. 'needle replay -i \"$NEEDLE_RECV_FILE\"'); one at a\n"
	"                     time, and the sender returns when it is done\n"
	"\n"
	"A trace is complete when it ends with its END section; one whose sender stopped before is\n"
	"kept, said to be cut short (the views read it up to its last chunk), and its sender says so.\n";

#define MAX_CLIENTS 64

enum client_stage { HELLO, NAME, STREAM, WAITING_CMD };

struct client {
	int fd;
	enum client_stage stage;
	unsigned char hello[REMOTE_HELLO_BYTES];
	size_t got;      /* bytes of the hello, or of the name, so far */
	size_t name_len;
	char name[REMOTE_NAME_MAX + 1];
	char peer[64];
	char tmp[REMOTE_NAME_MAX + 64];
	int out_fd;
	uint64_t bytes;
	int write_err;
	/* The stream's shape: the file header, then sections. */
	unsigned char head[sizeof(struct trace_file_header)];
	size_t head_got;       /* of the file header, then of a section's header */
	int in_file_header;
	uint64_t body_left;    /* of the current section's payload */
	uint32_t last_type;    /* the type of the last section header read */
	int bad;               /* not a needle trace: refused, nothing kept */
	int complete;
	uint64_t seq;          /* order of ending, for --run-cmd */
};

static struct client clients[MAX_CLIENTS];
static size_t client_cnt;
static uint64_t next_seq = 1;

static void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->out_fd >= 0) {
		close(c->out_fd);
		unlink(c->tmp);
	}
	*c = clients[--client_cnt];
}

static void answer(struct client *c, const char *line)
{
	/* A sender gone by now learns nothing (the error is not one of
	 * ours): its trace is stored anyway. */
	(void)remote_send_all(c->fd, line, strlen(line));
}

/* The sender's last word: its trace is in place (and --run-cmd ran). */
static void answer_stored(struct client *c)
{
	char line[64];

	snprintf(line, sizeof(line), "stored %llu %s\n", (unsigned long long)c->bytes,
		 c->complete ? "complete" : "incomplete");
	answer(c, line);
	client_close(c);
}

/* Follow the stream's sections over n more bytes. */
static void scan(struct client *c, const unsigned char *p, size_t n)
{
	while (n && !c->bad) {
		if (c->body_left) {
			size_t k = n < c->body_left ? n : (size_t)c->body_left;
			c->body_left -= k;
			p += k;
			n -= k;
			continue;
		}
		size_t size = c->in_file_header ? sizeof(struct trace_file_header) : sizeof(struct trace_section_header);
		size_t k = n < size - c->head_got ? n : size - c->head_got;
		memcpy(c->head + c->head_got, p, k);
		c->head_got += k;
		p += k;
		n -= k;
		if (c->head_got < size)
			continue;
		if (c->in_file_header) {
			/* As the reader takes it: the magic, a version it reads,
			 * a 64-byte header. */
			struct trace_file_header fh;
			memcpy(&fh, c->head, sizeof(fh));
			c->bad = memcmp(fh.magic, TRACE_MAGIC, sizeof(fh.magic)) || fh.version < TRACE_VERSION_MIN ||
				 fh.version > TRACE_VERSION || fh.header_size != sizeof(fh);
			c->in_file_header = 0;
			c->head_got = 0;
			continue;
		}
		struct trace_section_header h;
		memcpy(&h, c->head, sizeof(h));
		c->head_got = 0;
		if (h.length > TRACE_MAX_SECTION) {
			c->bad = 1;
			break;
		}
		c->last_type = h.type;
		c->body_left = h.length;
	}
	c->complete = !c->bad && !c->in_file_header && !c->head_got && !c->body_left && c->last_type == SEC_END;
}

static void take_hello(struct client *c)
{
	if (memcmp(c->hello, REMOTE_MAGIC, 12) || (c->hello[12] | c->hello[13] << 8) != REMOTE_VERSION) {
		answer(c, "refused: not needle record --host of this version\n");
		fprintf(stderr, "needle: recv: refused %s: not needle record --host (or another version)\n", c->peer);
		client_close(c);
		return;
	}
	c->name_len = (size_t)(c->hello[14] | c->hello[15] << 8);
	if (!c->name_len || c->name_len > REMOTE_NAME_MAX) {
		answer(c, "refused: no name, or one too long\n");
		client_close(c);
		return;
	}
	c->stage = NAME;
	c->got = 0;
}

/* Can a trace replace name here: absent, empty, or a needle trace (as
 * needle record's -o takes a file)?  NULL, or why not. */
static const char *not_replaceable(const char *name)
{
	struct stat st;
	char magic[8];

	if (lstat(name, &st))
		return errno == ENOENT ? NULL : strerror(errno);
	if (!S_ISREG(st.st_mode))
		return "it exists here and is not a regular file";
	if (!st.st_size)
		return NULL;
	int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t got = fd < 0 ? -1 : read(fd, magic, sizeof(magic));
	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)sizeof(magic) || memcmp(magic, TRACE_MAGIC, sizeof(magic)))
		return "it exists here and is not a needle trace";
	return NULL;
}

static void take_name(struct client *c, const char *dir)
{
	char line[REMOTE_LINE_MAX];
	static unsigned serial;

	c->name[c->name_len] = 0;
	if (memchr(c->name, 0, c->name_len) || !remote_name_ok(c->name)) {
		answer(c, "refused: the name is not a plain file name\n");
		fprintf(stderr, "needle: recv: refused %s: its name is not a plain file name\n", c->peer);
		client_close(c);
		return;
	}
	const char *why = not_replaceable(c->name);
	for (size_t i = 0; i < client_cnt && !why; i++)
		if (&clients[i] != c && (clients[i].stage == STREAM || clients[i].stage == WAITING_CMD) &&
		    !strcmp(clients[i].name, c->name))
			why = "another sender is sending it";
	if (why) {
		snprintf(line, sizeof(line), "refused: %s: %s\n", c->name, why);
		answer(c, line);
		fprintf(stderr, "needle: recv: refused %s from %s: %s\n", c->name, c->peer, why);
		client_close(c);
		return;
	}
	snprintf(c->tmp, sizeof(c->tmp), ".recv-%d-%u", (int)getpid(), serial++);
	c->out_fd = open(c->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (c->out_fd < 0) {
		snprintf(line, sizeof(line), "refused: cannot write in %s: %s\n", dir, strerror(errno));
		answer(c, line);
		fprintf(stderr, "needle: recv: cannot store %s from %s in %s: %s\n", c->name, c->peer, dir,
			strerror(errno));
		client_close(c);
		return;
	}
	c->stage = STREAM;
	c->in_file_header = 1;
	answer(c, "ready\n");
}

/* The sender is done (or gone): the file goes under its name.  Returns
 * 1 if the client waits for --run-cmd, 0 if it was answered and closed. */
static int store(struct client *c, const char *dir, int have_cmd)
{
	char line[REMOTE_LINE_MAX];

	if (c->bad) {
		fprintf(stderr, "needle: recv: %s from %s is not a needle trace: not kept\n", c->name, c->peer);
		answer(c, "refused: not a needle trace\n");
		client_close(c);
		return 0;
	}
	/* A recording that never began closes with nothing sent (or less
	 * than a header): an older trace of that name stays. */
	if (c->in_file_header) {
		fprintf(stderr, "needle: recv: nothing came from %s for %s (its recording did not begin): %s\n", c->peer,
			c->name, access(c->name, F_OK) ? "nothing stored" : "the trace stored before stays");
		answer(c, "refused: nothing was sent\n");
		client_close(c);
		return 0;
	}
	if (!c->write_err && fsync(c->out_fd))
		c->write_err = errno;
	close(c->out_fd);
	c->out_fd = -1;
	const char *why = not_replaceable(c->name);
	if (why) {
		/* Made since the hello, by someone else. */
		fprintf(stderr, "needle: recv: cannot store %s from %s: %s; nothing kept\n", c->name, c->peer, why);
		unlink(c->tmp);
		snprintf(line, sizeof(line), "refused: %s: %s\n", c->name, why);
		answer(c, line);
		client_close(c);
		return 0;
	}
	if (c->write_err || rename(c->tmp, c->name)) {
		int e = c->write_err ? c->write_err : errno;
		fprintf(stderr, "needle: recv: cannot store %s from %s in %s: %s; nothing kept\n", c->name, c->peer,
			dir, strerror(e));
		unlink(c->tmp);
		snprintf(line, sizeof(line), "refused: cannot write in %s: %s\n", dir, strerror(e));
		answer(c, line);
		client_close(c);
		return 0;
	}
	if (c->complete)
		fprintf(stderr, "needle: recv: stored %s/%s from %s (%llu bytes)\n", dir, c->name, c->peer,
			(unsigned long long)c->bytes);
	else
		fprintf(stderr, "needle: recv: stored %s/%s from %s (%llu bytes), CUT SHORT: the sender stopped "
			"before the trace's END; the views read it up to its last chunk\n", dir, c->name, c->peer,
			(unsigned long long)c->bytes);
	if (have_cmd) {
		c->stage = WAITING_CMD;
		c->seq = next_seq++;
		return 1;
	}
	answer_stored(c);
	return 0;
}

static void take_bytes(struct client *c, const char *dir, int have_cmd)
{
	unsigned char buf[1 << 16];
	ssize_t n;

	if (c->stage == HELLO || c->stage == NAME) {
		unsigned char *dst = c->stage == HELLO ? c->hello : (unsigned char *)c->name;
		size_t want = (c->stage == HELLO ? sizeof(c->hello) : c->name_len) - c->got;
		n = recv(c->fd, dst + c->got, want, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				return;
			client_close(c);
			return;
		}
		c->got += (size_t)n;
		if (c->got < (c->stage == HELLO ? sizeof(c->hello) : c->name_len))
			return;
		if (c->stage == HELLO)
			take_hello(c);
		else
			take_name(c, dir);
		return;
	}
	n = recv(c->fd, buf, sizeof(buf), 0);
	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		store(c, dir, have_cmd);
		return;
	}
	scan(c, buf, (size_t)n);
	if (c->bad) {
		store(c, dir, have_cmd);
		return;
	}
	c->bytes += (uint64_t)n;
	for (ssize_t off = 0; !c->write_err && off < n;) {
		ssize_t w = write(c->out_fd, buf + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			c->write_err = w < 0 ? errno : EIO;
		else
			off += w;
	}
}

static pid_t run_cmd(const char *cmd, const char *name, const sigset_t *old)
{
	pid_t pid = fork();

	if (pid == 0) {
		sigprocmask(SIG_SETMASK, old, NULL);
		setenv("NEEDLE_RECV_FILE", name, 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Listening sockets: IPv6 and IPv4 both where the machine has IPv6. */
static int listen_on(const char *port, int *fds, int *bound_port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE },
			*res, *ai;
	int n = 0, err = 0, one = 1, in_use = 0;
	int gai = getaddrinfo(NULL, port, &hints, &res);

	if (gai) {
		cli_error("recv: port %s: %s", port, gai_strerror(gai));
		return -1;
	}
	/* IPv6 first: with IPV6_V6ONLY it leaves IPv4 to the second socket;
	 * port 0 takes the first socket's port for the second. */
	for (int pass = 0; pass < 2; pass++)
		for (ai = res; ai && n < 2; ai = ai->ai_next) {
			if ((ai->ai_family == AF_INET6) != (pass == 0))
				continue;
			int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (fd < 0)
				continue;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (ai->ai_family == AF_INET6)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
			if (n && *bound_port) {
				if (ai->ai_family == AF_INET6)
					((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons((uint16_t)*bound_port);
				else
					((struct sockaddr_in *)ai->ai_addr)->sin_port = htons((uint16_t)*bound_port);
			}
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16)) {
				err = errno;
				close(fd);
				/* Another process on this port for one family
				 * would take that family's senders. */
				in_use |= err == EADDRINUSE;
				continue;
			}
			struct sockaddr_storage ss;
			socklen_t len = sizeof(ss);
			if (!getsockname(fd, (struct sockaddr *)&ss, &len))
				*bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
									       : ((struct sockaddr_in *)&ss)->sin_port);
			fds[n++] = fd;
		}
	freeaddrinfo(res);
	if (!n || in_use) {
		err = in_use ? EADDRINUSE : err;
		while (n)
			close(fds[--n]);
		cli_error("recv: cannot listen on port %s: %s", port, strerror(err));
		return -1;
	}
	return n;
}

static void accept_one(int lfd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (client_cnt == MAX_CLIENTS) {
		/* Said to the sender, which then records nothing. */
		remote_send_all(fd, "refused: too many senders at once\n", 34);
		close(fd);
		return;
	}
	struct client *c = &clients[client_cnt++];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->out_fd = -1;
	if (getnameinfo((struct sockaddr *)&ss, len, c->peer, sizeof(c->peer), NULL, 0, NI_NUMERICHOST))
		snprintf(c->peer, sizeof(c->peer), "?");
}

int cmd_recv(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'd' }, { "port", required_argument, NULL, 'p' },
		{ "run-cmd", required_argument, NULL, 'r' }, { "help", no_argument, NULL, 'h' },
		{ "no-pager", no_argument, NULL, 'P' },      { "no-event", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = ".", *port = REMOTE_DEFAULT_PORT, *cmd = NULL;
	int c, lfds[2], bound = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'p': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (!*optarg || *end || v > 65535) {
				cli_error("recv: --port needs a TCP port number (0-65535), not '%s'", optarg);
				return 2;
			}
			port = optarg;
			break;
		}
		case 'r':
			cmd = optarg;
			break;
		case 'P': /* --no-pager, --no-event: uftrace's, which every command takes */
			break;
		case 'h':
			fputs(recv_usage, stdout);
			return 0;
		default:
			cli_option_error(argv[0], argc, argv, "d:h", longopts);
			return 2;
		}
	}
	if (optind < argc) {
		cli_error("recv: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (mkdir(dir, 0777) && errno != EEXIST) {
		cli_error("recv: cannot make %s: %s", dir, strerror(errno));
		return 1;
	}
	if (chdir(dir)) {
		cli_error("recv: cannot store traces in %s: %s", dir, strerror(errno));
		return 1;
	}
	int nl = listen_on(port, lfds, &bound);
	if (nl < 0)
		return 1;
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	/* Ignored, SIGCHLD would reap --run-cmd unseen: its end would
	 * never come. */
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, &old);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		cli_error("recv: %s", strerror(errno));
		return 1;
	}
	fprintf(stderr, "needle: recv: listening on port %d, storing traces in %s\n", bound, dir);

	pid_t cmd_pid = 0;
	struct client *cmd_client = NULL;
	uint64_t cmd_seq = 0;
	for (int done = 0; !done;) {
		/* The next --run-cmd: the oldest stored trace waiting. */
		if (cmd && !cmd_pid) {
			cmd_client = NULL;
			for (size_t i = 0; i < client_cnt; i++)
				if (clients[i].stage == WAITING_CMD &&
				    (!cmd_client || clients[i].seq < cmd_client->seq))
					cmd_client = &clients[i];
			if (cmd_client) {
				cmd_seq = cmd_client->seq;
				cmd_pid = run_cmd(cmd, cmd_client->name, &old);
				if (cmd_pid < 0) {
					cli_error("recv: cannot run --run-cmd on %s: %s", cmd_client->name, strerror(errno));
					cmd_pid = 0;
					answer_stored(cmd_client);
					continue;
				}
			}
		}
		struct pollfd p[MAX_CLIENTS + 3];
		size_t np = 0;
		p[np++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (int i = 0; i < nl; i++)
			p[np++] = (struct pollfd){ .fd = lfds[i], .events = POLLIN };
		for (size_t i = 0; i < client_cnt; i++)
			p[np++] = (struct pollfd){ .fd = clients[i].stage == WAITING_CMD ? -1 : clients[i].fd,
						   .events = POLLIN };
		if (poll(p, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			cli_error("recv: %s", strerror(errno));
			break;
		}
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && si.ssi_signo != SIGCHLD)
				done = 1;
			int st;
			pid_t w;
			while ((w = waitpid(-1, &st, WNOHANG)) > 0)
				if (w == cmd_pid)
					cmd_pid = 0;
		}
		/* A --run-cmd done (or never started): its sender's answer. */
		if (cmd && !cmd_pid) {
			for (size_t i = 0; i < client_cnt; i++) {
				struct client *w = &clients[i];
				if (w->stage != WAITING_CMD || w->seq != cmd_seq)
					continue;
				answer_stored(w);
				break;
			}
			cmd_seq = 0;
		}
		for (int i = 0; i < nl; i++)
			if (p[1 + i].revents & POLLIN)
				accept_one(lfds[i]);
		/* Clients by descriptor: client_close moves the last into a
		 * closed one's place. */
		for (size_t k = 1 + (size_t)nl; k < np; k++) {
			if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			for (size_t i = 0; i < client_cnt; i++)
				if (clients[i].fd == p[k].fd && clients[i].stage != WAITING_CMD) {
					take_bytes(&clients[i], dir, cmd != NULL);
					break;
				}
		}
	}
	/* Interrupted: what arrived is kept, each trace said whole or cut. */
	while (client_cnt) {
		struct client *w = &clients[0];
		if (w->stage == STREAM) {
			store(w, dir, 0);
		} else if (w->stage == WAITING_CMD) {
			answer_stored(w);
		} else {
			client_close(w);
		}
	}
	return 0;
}
