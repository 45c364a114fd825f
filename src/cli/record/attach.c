/* attach.c - `needle record -p PID`: record a process that is
 * already running, then leave it as it was.
 *
 *  1. The target is checked from /proc (exists, not a zombie or a kernel
 *     thread, x86-64, dynamically linked, ours to trace, not traced by
 *     someone else): each refusal is one line, and the target is never
 *     touched.
 *  2. needle record listens on an abstract UNIX socket with a fresh name,
 *     then loads libneedle into the target and calls
 *     needle_remote_attach(name) there (inject.c: one thread borrowed for
 *     well under a millisecond).
 *  3. The agent's session thread connects; needle record checks that the
 *     peer is the target (SO_PEERCRED) and sends the configuration and the
 *     buffer and meta descriptors (common/attach_protocol.h).  From there
 *     the agent works as in a program needle record started: it reports
 *     through the buffer header and the meta file, and events are drained
 *     the same way.  What libneedle has to say comes over the socket
 *     (ATTACH_MESSAGE) and is printed here: the target's own streams are
 *     never written.
 *  4. Ctrl-C, SIGTERM, SIGHUP or --duration: needle record asks the agent
 *     to detach, drains while it unpatches, and salvages the chunks
 *     threads still owned.  If needle record dies instead, the agent sees
 *     its socket close and detaches by itself; if the target exits or
 *     execs, the socket or the pidfd says so, and how it ended (its wait
 *     status) is read from /proc or the pidfd, never assumed.
 *  5. The children it forked while recorded, which record into the same
 *     buffer, are let go of too (release.c), before the trace is closed.
 *
 * Invariants: the target's state is never changed before it is known to
 * be attachable; nothing but the one borrowed thread is ever stopped; the
 * exit status is 0 when a trace was written, 1 otherwise, with one line
 * saying why. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/util/exe_class.h"
#include "cli/util/procfs.h"
#include "cli/inject/inject.h"
#include "cli/record/record.h"
#include "cli/record/hold.h"
#include "common/attach_protocol.h"
#include "common/tsc.h"

static uint64_t realtime_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static long status_number(const char *status, const char *key)
{
	const char *p = strstr(status, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Everything that can be told without touching the target. */

/* The needle buffer a process maps (at `at` in its maps text, a line
 * "lo-hi perms offset dev inode path"): is it still a recording's, that
 * is, does another process hold a descriptor of that memfd?  needle
 * record keeps one open for its whole run; a recording that ended leaves
 * the mapping only in a child forked while it ran whose needle record
 * was killed before it could let go of it (release.c).  1 when served,
 * or when it cannot be told (no access to other processes' descriptors:
 * said as before); else 0, with the memfd's inode in *orphan. */
static int buffer_served(pid_t pid, const char *maps, const char *at, ino_t *orphan)
{
	const char *line = at;
	while (line > maps && line[-1] != '\n')
		line--;
	unsigned long long ino = 0;
	if (sscanf(line, "%*s %*s %*s %*s %llu", &ino) != 1 || !ino)
		return 1;
	*orphan = (ino_t)ino;
	DIR *proc = opendir("/proc");
	if (!proc)
		return 1;
	int served = 0, looked = 0;
	struct dirent *e;
	while (!served && (e = readdir(proc))) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		if (*end || p <= 0 || p == pid)
			continue;
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%ld/fd", p);
		DIR *fds = opendir(dir);
		if (!fds)
			continue;
		looked = 1;
		struct dirent *f;
		while (!served && (f = readdir(fds))) {
			char path[352], target[64];
			struct stat st;
			if (f->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, f->d_name);
			ssize_t n = readlink(path, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = 0;
			if (strstr(target, "/memfd:needle-buffer") && !stat(path, &st) && st.st_ino == ino)
				served = 1;
		}
		closedir(fds);
	}
	closedir(proc);
	return served || !looked;
}

/* 0 when pid may be attached to (*orphan: the inode of a dead
 * recording's buffer it must first be let go of, else 0), -1 with one
 * line said when not. */
static int check_target(pid_t pid, char *comm, size_t commlen, ino_t *orphan)
{
	char *stat_line = proc_read(pid, "stat", NULL);
	snprintf(comm, commlen, "?");
	if (!stat_line) {
		cli_error("no process with PID %d", (int)pid);
		return -1;
	}
	char *open_paren = strchr(stat_line, '('), *close_paren = strrchr(stat_line, ')');
	char state = 0;
	unsigned long flags = 0;
	if (open_paren && close_paren && close_paren > open_paren) {
		snprintf(comm, commlen, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
		sscanf(close_paren + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags);
	}
	free(stat_line);
	if (pid == getpid()) {
		cli_error("process %d is this needle record", (int)pid);
		return -1;
	}
	/* Another needle (a needle record that started a program): its
	 * program is the process to record. */
	struct stat self_st, exe_st;
	char exe_link[64];
	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", (int)pid);
	if (!stat("/proc/self/exe", &self_st) && !stat(exe_link, &exe_st) && self_st.st_dev == exe_st.st_dev &&
	    self_st.st_ino == exe_st.st_ino) {
		cli_error("process %d is needle itself: record the program it runs (its child), not needle", (int)pid);
		return -1;
	}
	if (state == 'Z' || state == 'X') {
		cli_error("process %d (%s) is a zombie: it has exited, and only its parent's wait is missing", (int)pid,
			  comm);
		return -1;
	}
	if (flags & 0x00200000ul) { /* PF_KTHREAD */
		cli_error("process %d (%s) is a kernel thread: needle traces user-space programs", (int)pid, comm);
		return -1;
	}
	char *status = proc_read(pid, "status", NULL);
	if (!status) {
		cli_error("cannot read /proc/%d/status: %s", (int)pid, strerror(errno));
		return -1;
	}
	long uid = status_number(status, "\nUid:");
	long tracer = status_number(status, "\nTracerPid:");
	long tgid = status_number(status, "\nTgid:");
	free(status);
	/* /proc shows a thread's id too, and the attach would wait for a
	 * process that never answers (the session is the process's). */
	if (tgid > 0 && tgid != pid) {
		char tcomm[64];
		proc_comm((pid_t)tgid, tcomm, sizeof(tcomm));
		cli_error("%d (%s) is a thread of process %ld (%s): record the process, needle record -p %ld", (int)pid,
			  comm, tgid, tcomm, tgid);
		return -1;
	}
	/* A stopped process runs no thread to lend (the attach's borrowed
	 * thread): it would be waited for in vain. */
	if (state == 'T') {
		cli_error("process %d (%s) is stopped (SIGSTOP, or a shell's job control): let it run (kill -CONT %d), "
			  "then record it", (int)pid, comm, (int)pid);
		return -1;
	}
	if (geteuid() != 0 && uid >= 0 && (uid_t)uid != geteuid()) {
		struct passwd *pw = getpwuid((uid_t)uid);
		cli_error("process %d (%s) belongs to user %s: record it as that user, or as root", (int)pid, comm,
			  pw ? pw->pw_name : "another user");
		return -1;
	}
	int scope = read_int_file("/proc/sys/kernel/yama/ptrace_scope");
	if (scope == 3) {
		cli_error("kernel.yama.ptrace_scope is 3: no process may attach to another until reboot");
		return -1;
	}
	if (scope >= 1 && geteuid() != 0) {
		cli_error("kernel.yama.ptrace_scope is %d: only %s may attach to process %d; run as root, or "
			  "'sysctl kernel.yama.ptrace_scope=0'", scope, scope == 1 ? "its ancestors or root" : "root",
			  (int)pid);
		return -1;
	}
	/* The session's socket is an abstract name, which exists in one
	 * network namespace: the agent in a container's could not reach it. */
	if (!record_same_netns(pid)) {
		cli_error("process %d (%s) is in another network namespace (a container?), where libneedle could not "
			  "reach needle record: run needle record in it (nsenter --target %d --net needle record -p %d ...)",
			  (int)pid, comm, (int)pid, (int)pid);
		return -1;
	}
	if (tracer > 0) {
		char tcomm[64];
		proc_comm((pid_t)tracer, tcomm, sizeof(tcomm));
		cli_error("process %d (%s) is already traced by process %ld (%s): detach that debugger or tracer first",
			  (int)pid, comm, tracer, tcomm);
		return -1;
	}
	char exe[64];
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		int class = exe_class_check(fd);
		close(fd);
		if (class < 0) {
			cli_error("process %d (%s) is not an x86-64 program (32-bit, or another architecture): needle "
				  "traces x86-64 processes", (int)pid, comm);
			return -1;
		}
	}
	char *maps = proc_read(pid, "maps", NULL);
	if (!maps) {
		cli_error("cannot read the memory map of process %d (%s): %s", (int)pid, comm, strerror(errno));
		return -1;
	}
	int has_libc = strstr(maps, "/libc.so.6") != NULL;
	int has_loader = strstr(maps, "/ld-linux-x86-64.so") != NULL;
	/* A recording maps its buffer (needle record's memfd) until it
	 * ends; loading libneedle again into such a process would run the
	 * loader's traced functions on a borrowed thread. */
	const char *buffer = strstr(maps, "/memfd:needle-buffer");
	*orphan = 0;
	int recorded = buffer != NULL, served = recorded ? buffer_served(pid, maps, buffer, orphan) : 0;
	free(maps);
	if (recorded && !served)
		recorded = 0; /* let go of first (record_attach) */
	else
		*orphan = 0;
	if (recorded) {
		cli_error("process %d (%s) is already being recorded (by the needle record that started it, or "
			  "another -p)", (int)pid, comm);
		return -1;
	}
	/* A process caught while its dynamic loader maps its libraries (a
	 * -p given right after starting it) has the loader and no C library
	 * yet.  It is refused, not waited for: the C library mapped is not
	 * yet the C library relocated, and a thread blocked in the loader's
	 * reads would look safe to borrow for a dlopen. */
	if (!has_libc && has_loader) {
		cli_error("process %d (%s) is still starting (its dynamic loader is loading its libraries): "
			  "attach once it runs", (int)pid, comm);
		return -1;
	}
	if (!has_libc) {
		cli_error("process %d (%s) has no C library loaded (statically linked?): libneedle cannot be loaded "
			  "into it", (int)pid, comm);
		return -1;
	}
	return 0;
}

/* The target's command line, as an argv (malloc'ed). */
static char **target_argv(pid_t pid, const char *comm)
{
	size_t len = 0, n = 0;
	char *cmd = proc_read(pid, "cmdline", &len);
	char **argv;

	if (!cmd || !len) {
		free(cmd);
		argv = calloc(2, sizeof(*argv));
		if (argv)
			argv[0] = strdup(comm);
		return argv;
	}
	/* A program that rewrote its title in place (redis, postgres,
	 * nginx's "worker process") leaves the rest of the old arguments'
	 * bytes as NULs: not arguments. */
	while (len > 1 && !cmd[len - 1] && !cmd[len - 2])
		len--;
	for (size_t i = 0; i < len; i++)
		n += cmd[i] == 0;
	if (cmd[len - 1])
		n++;
	argv = calloc(n + 1, sizeof(*argv));
	for (size_t i = 0, k = 0; argv && i < len && k < n; k++) {
		argv[k] = cmd + i;
		i += strlen(cmd + i) + 1;
	}
	return argv; /* cmd stays allocated: argv points into it */
}

/* The hello with the buffer's and the meta file's descriptors, then the
 * configuration's bytes (common/record_config.h). */
static int send_hello(int fd, const struct recording *r)
{
	uint8_t *config;
	size_t config_len;

	if (record_config_encode(&r->o->agent, &config, &config_len))
		return -1;
	struct attach_hello hello = {
		.magic = ATTACH_MAGIC,
		.version = ATTACH_VERSION,
		.config_len = (uint32_t)config_len,
	};
	int fds[2] = { r->buf_fd, r->meta_fd };
	char control[CMSG_SPACE(sizeof(fds))];
	struct iovec iov = { &hello, sizeof(hello) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	memset(control, 0, sizeof(control));
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	int err = config_len > ATTACH_CONFIG_MAX || sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(hello) ||
		  agent_session_send(fd, config, config_len);
	free(config);
	return err ? -1 : 0;
}

/* What libneedle-boot.so said instead of a session, if it did: 1 when an
 * error line was read (and said). */
static int boot_error(int sock, pid_t pid, const char *comm)
{
	char line[700];
	ssize_t n = recv(sock, line, sizeof(line) - 1, MSG_DONTWAIT);
	int code, off = 0;

	if (n <= 0)
		return 0;
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	if (sscanf(line, ATTACH_ERROR_READ, &code, &off) < 1 || !off)
		return 0;
	if (code == EBUSY)
		cli_error("process %d (%s) is already being recorded (by the needle record that started it, or "
			  "another -p)", (int)pid, comm);
	else
		cli_error("cannot load libneedle into process %d (%s): %s", (int)pid, comm, line + off);
	return 1;
}

/* Whether the process has ended (a zombie counts: kill(2) alone would
 * still find it). */
static int process_gone(pid_t pid, int pidfd)
{
	struct pollfd p = { pidfd, POLLIN, 0 };
	if (pidfd >= 0)
		return poll(&p, 1, 0) > 0;
	return kill(pid, 0) != 0;
}

/* PIDFD_GET_INFO (linux/pidfd.h, Linux 6.15), spelled here for older
 * headers: the first version of its structure, which holds exit_code. */
struct needle_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
#define NEEDLE_PIDFD_GET_INFO _IOWR(0xFF, 11, struct needle_pidfd_info)
#define NEEDLE_PIDFD_INFO_EXIT (1ull << 3)

/* How a process that is not needle record's child ended, as a wait
 * status: /proc/PID/stat's exit_code (field 52) while it is a zombie, or,
 * once its parent reaped it, its pidfd's exit information.  Both are
 * tried for up to a second (the parent may reap it between the two
 * looks).  1 when known. */
static int process_end_status(pid_t pid, int pidfd, int *status)
{
	uint64_t end = monotonic_ns() + 1000000000ull;

	do {
		char *stat = proc_read(pid, "stat", NULL);
		char *close_paren = stat ? strrchr(stat, ')') : NULL;
		if (close_paren && (close_paren[2] == 'Z' || close_paren[2] == 'X')) {
			/* Field 3 (the state) follows ") "; exit_code is field 52. */
			char *f = close_paren + 2;
			for (int i = 3; i < 52 && f; i++) {
				f = strchr(f, ' ');
				if (f)
					f++;
			}
			if (f && *f) {
				*status = atoi(f);
				free(stat);
				return 1;
			}
		}
		free(stat);
		struct needle_pidfd_info info;
		memset(&info, 0, sizeof(info));
		info.mask = NEEDLE_PIDFD_INFO_EXIT;
		int got = pidfd >= 0 ? ioctl(pidfd, NEEDLE_PIDFD_GET_INFO, &info) : -1;
		if (!got && (info.mask & NEEDLE_PIDFD_INFO_EXIT)) {
			*status = info.exit_code;
			return 1;
		}
		if (!stat && (pidfd < 0 || (got < 0 && errno == ENOTTY)))
			break; /* reaped, and a kernel without exit information */
		struct timespec t = { 0, 5 * 1000 * 1000 };
		nanosleep(&t, NULL);
	} while (monotonic_ns() < end);
	return 0;
}

static volatile sig_atomic_t stop_asked;

static void on_stop(int sig)
{
	(void)sig;
	stop_asked = 1;
	record_stop = 1;
}

/* What ended the recording. */
enum why_end { END_NONE, END_ASKED, END_DURATION, END_EXITED, END_SESSION };

static enum why_end check_end(int pidfd, int sock, uint64_t deadline)
{
	struct pollfd p[2] = { { sock, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
	int n = poll(p, pidfd >= 0 ? 2 : 1, 0);

	int session = n > 0 && p[0].revents ? agent_session_read(sock) : 0;
	if (n > 0 && p[1].revents)
		return END_EXITED;
	if (session)
		return END_SESSION; /* the agent sends nothing else but messages */
	if (stop_asked)
		return END_ASKED;
	if (deadline && monotonic_ns() >= deadline)
		return END_DURATION;
	return END_NONE;
}

/* Ask the agent to detach; drain while it unpatches.  1 when it said it
 * is done, 0 if its side closed first (the process ended), -1 on
 * timeout. */
static int detach(struct recording *r, int sock)
{
	char c = ATTACH_DETACH;
	uint64_t t0 = monotonic_ns(), end = t0 + 30000000000ull;
	if (send(sock, &c, 1, MSG_NOSIGNAL) != 1)
		return 0;
	while (monotonic_ns() < end) {
		/* The answer is looked for between portions of the drain (the
		 * program's threads may wait for free chunks meanwhile): a
		 * whole drain of a full buffer took 100 ms and more, which
		 * counted as the detach's. */
		struct pollfd p = { sock, POLLIN, 0 };
		int drained = r->out.begun ? (int)record_drain_some(r, 16) : 0;
		int s = poll(&p, 1, drained ? 0 : 1) > 0 ? agent_session_read(sock) : 0;
		if (s) {
			r->attach.detach_ns = monotonic_ns() - t0;
			return s > 0;
		}
	}
	return -1;
}

/* The libneedle to load into pid: ours, unless it has one already (an
 * earlier recording's: a program needle record started, or a -p) from
 * another file.  Two libneedles in one process would both interpose the
 * C library and patch the same entries (a second preloaded one's
 * session spun, and children forked meanwhile hung in the loader).  That
 * one is used when its file is still there with libneedle-boot.so beside
 * it (use: its path); else -1, said. */
static int agent_to_load(pid_t pid, const char *comm, const char *agent, char *use, size_t len)
{
	struct maps_reader m;
	struct maps_line l;
	char loaded[PATH_MAX] = "";
	uint64_t ino = 0;

	snprintf(use, len, "%s", agent);
	if (maps_open(&m, pid))
		return 0;
	while (!loaded[0] && maps_next(&m, &l)) {
		const char *base = strrchr(l.path, '/');
		if (l.perms[2] == 'x' && base && !strncmp(base, "/libneedle.so", 13)) {
			snprintf(loaded, sizeof(loaded), "%s", l.path);
			ino = l.inode;
		}
	}
	maps_close(&m);
	/* The file the process mapped, if its path still names it: maps's
	 * device numbers are not stat's on every file system (btrfs,
	 * overlayfs), so stat is compared with stat, and maps only by inode. */
	struct stat there, ours;
	int present = loaded[0] && !strstr(loaded, " (deleted)") && !stat(loaded, &there) && there.st_ino == ino;
	if (!loaded[0] || (present && !stat(agent, &ours) && ours.st_ino == there.st_ino && ours.st_dev == there.st_dev))
		return 0;
	char boot[PATH_MAX];
	const char *slash = strrchr(loaded, '/');
	snprintf(boot, sizeof(boot), "%.*slibneedle-boot.so", (int)(slash - loaded + 1), loaded);
	if (present && !access(boot, R_OK)) {
		fprintf(stderr, "needle: process %d has %s loaded already (an earlier recording's): using it\n", (int)pid,
			loaded);
		snprintf(use, len, "%s", loaded);
		return 0;
	}
	cli_error("process %d (%s) has another libneedle loaded (%s, an earlier recording's, since replaced or "
		  "without libneedle-boot.so beside it): it cannot be recorded again until it restarts",
		  (int)pid, comm, loaded);
	return -1;
}

int record_attach(struct recording *r, const char *agent_default)
{
	struct record_opts *o = r->o;
	pid_t pid = o->attach_pid;
	char comm[64], name[ATTACH_NAME_MAX + 1], err[600];
	int lfd = -1, sock = -1, pidfd = -1, ret = 1;

	/* Ctrl-C, SIGTERM and SIGHUP stop the recording from the first:
	 * caught before the slow steps (the program's DWARF, libneedle's
	 * start-up), so that one sent early is not lost, even to a
	 * background job whose shell left SIGINT ignored. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART: waits end at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	ino_t orphan;
	if (check_target(pid, comm, sizeof(comm), &orphan))
		return 1;
	/* A child forked while its parent was recorded by a needle record
	 * that was killed still records into that recording's buffer, which
	 * nobody reads: let go of it first, as that needle record would
	 * have. */
	int released = orphan ? record_release_orphan(pid, orphan, err, sizeof(err)) : 0;
	/* One whose libneedle is still in that recording's session (it was
	 * stopped or killed during its start-up) lets go of it by itself
	 * when the start-up ends: waited for, up to 10 s, as long as it
	 * keeps the buffer mapped. */
	for (int waited = 0; released == -EBUSY && waited < 100; waited++) {
		if (stop_asked) {
			cli_error("stopped while process %d (%s) was still ending an earlier recording; it was not "
				  "touched", (int)pid, comm);
			return 1;
		}
		struct timespec t = { 0, 100 * 1000 * 1000 };
		nanosleep(&t, NULL);
		if (check_target(pid, comm, sizeof(comm), &orphan))
			return 1;
		released = orphan ? record_release_orphan(pid, orphan, err, sizeof(err)) : 0;
	}
	if (released == -EBUSY) {
		cli_error("process %d (%s) is still ending an earlier recording that was stopped during its start "
			  "(after 10 s): try again once it has", (int)pid, comm);
		return 1;
	}
	if (released) {
		cli_error("process %d (%s) keeps the patched code of a recording whose needle record was killed, "
			  "and cannot be let go of (%s): it cannot be recorded again until it restarts",
			  (int)pid, comm, err);
		return 1;
	}
	if (orphan)
		fprintf(stderr, "needle: process %d kept the copy of a recording whose needle record was killed: let "
			"go of it first\n", (int)pid);
	char agent[PATH_MAX];
	if (agent_to_load(pid, comm, agent_default, agent, sizeof(agent)))
		return 1;
	/* Its program's DWARF, through the link (even if the file was
	 * replaced or removed since it started). */
	char exe[64];
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	if (record_prepare(r, exe, pid))
		return 1;
	/* Threads of the process that block every signal are held with
	 * ptrace for the agent's patch batches (hold.c); without it,
	 * the agent refuses to patch while such a thread exists. */
	static struct record_hold hold;
	record_hold_start(&hold, r->shm, pid);
	if ((lfd = agent_session_listen(name, sizeof(name))) < 0) {
		cli_error("cannot set up the session with process %d: %s", (int)pid, strerror(errno));
		goto abandon;
	}
	if (o->snapshot)
		snapshot_catch_sigusr2();
	if (stop_asked) {
		cli_error("stopped before recording began; process %d (%s) %s", (int)pid, comm,
			  orphan ? "runs on, let go of the earlier recording it kept" : "was not touched");
		goto abandon;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	r->pid = pid;
	r->attached = 1;
	r->attach.attach_realtime_ns = realtime_ns();
	r->raw0 = tsc_read();
	r->ns0 = monotonic_ns();
	/* The borrowed thread loads only libneedle-boot.so (beside
	 * libneedle.so), whose thread loads libneedle while the program runs. */
	char boot[PATH_MAX], request[PATH_MAX + ATTACH_NAME_MAX + 2];
	const char *slash = strrchr(agent, '/');
	snprintf(boot, sizeof(boot), "%.*slibneedle-boot.so", slash ? (int)(slash - agent + 1) : 0, agent);
	if (access(boot, R_OK)) {
		cli_error("cannot find %s beside libneedle.so: build it with make", boot);
		goto abandon;
	}
	char agent_abs[PATH_MAX];
	if (!realpath(agent, agent_abs))
		snprintf(agent_abs, sizeof(agent_abs), "%s", agent);
	snprintf(request, sizeof(request), "%s\n%s", agent_abs, name);
	struct inject_request req = { .lib_path = boot, .entry = "needle_boot", .arg = request, .hand_over_stack = 1 };
	struct inject_result res;
	char boot_abs[PATH_MAX];
	if (realpath(boot, boot_abs))
		req.lib_path = boot_abs;
	int e = inject_library(pid, &req, &res, err, sizeof(err));
	r->attach.max_hold_ns = r->attach.borrowed_hold_ns = res.held_ns;
	r->attach.borrowed_tid = res.tid;
	if (e) {
		cli_error("cannot attach to process %d (%s): %s", (int)pid, comm, err);
		goto abandon;
	}
	if (res.entry_ret) {
		cli_error(res.entry_ret == -EBUSY ? "process %d (%s) is already being attached to by another needle "
						    "record -p"
						  : "cannot start loading libneedle in process %d (%s): %s",
			  (int)pid, comm, strerror((int)-res.entry_ret));
		goto abandon;
	}
	if ((sock = agent_session_accept(lfd, pid, 10000)) < 0) {
		cli_error("libneedle started in process %d (%s) but never connected back (did it exit or exec?)",
			  (int)pid, comm);
		goto abandon;
	}
	close(lfd);
	lfd = -1;
	if (send_hello(sock, r)) {
		/* libneedle-boot.so connects only to say why nothing else will. */
		struct pollfd p = { sock, POLLIN, 0 };
		if (poll(&p, 1, 1000) > 0 && boot_error(sock, pid, comm))
			goto abandon;
		cli_error("lost the session with process %d (%s) while configuring it", (int)pid, comm);
		goto abandon;
	}
	/* --kernel: open before the agent records (its session thread,
	 * needle-attach, named by now, is left out), so that the first calls
	 * have their kernel events whole: each thread of the process, and
	 * the threads and children they start. */
	if (o->kernel) {
		r->kernel.asked = o->kernel;
		r->kernel.no_follow_exec = o->agent.no_follow_exec;
		r->kernel.keep_max = o->snapshot && o->buffer_bytes / sizeof(struct kernel_event) > KEEP_EVENTS_MIN
					     ? o->buffer_bytes / sizeof(struct kernel_event)
					     : KEEP_EVENTS_MIN;
		if (kernel_open_process(&r->kernel, pid))
			cli_error("--kernel: nothing could be opened (%s); recording the functions only",
				  r->kernel.left_out[0] ? r->kernel.left_out : "perf_event_open refused every event");
		else if (r->kernel.left_out[0])
			cli_error("--kernel: left out: %s", r->kernel.left_out);
	}
	/* Start-up and discovery run in the target while it works: wait for
	 * the agent's answer in the buffer header. */
	uint32_t state;
	while ((state = atomic_load(&r->shm->agent_state)) == AGENT_STARTING) {
		enum why_end why = check_end(pidfd, sock, 0);
		if (why == END_SESSION && boot_error(sock, pid, comm))
			goto abandon;
		if (why == END_EXITED || why == END_SESSION) {
			cli_error("process %d (%s) %s before recording began", (int)pid, comm,
				  why == END_EXITED ? "exited" : "ended the session (exec?)");
			goto abandon;
		}
		/* Ctrl-C while libneedle starts: the session closes, which
		 * tells it to let go of the process once it can. */
		if (why == END_ASKED) {
			cli_error("stopped before recording began; process %d (%s) runs on, and libneedle lets go of "
				  "it when its start-up ends", (int)pid, comm);
			goto abandon;
		}
		struct timespec t = { 0, 2 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	if (state != AGENT_RECORDING) {
		agent_session_read(sock); /* what it said on the way */
		char agent_err[512];
		uint64_t sites;
		record_read_result(r, &sites, agent_err, sizeof(agent_err));
		if (r->shm->agent_error == -EBUSY)
			cli_error("process %d (%s) is already being recorded (by the needle record that started it, or "
				  "another -p)", (int)pid, comm);
		else
			cli_error("cannot record process %d (%s): %s; it runs on untraced", (int)pid, comm,
				  agent_err[0] ? agent_err : "libneedle failed in it");
		goto abandon;
	}
	r->argv = target_argv(pid, comm);
	struct snapshot_service ss = { 0 };
	if (o->snapshot)
		snapshot_service_start(&ss, r);
	else
		record_begin(r);
	/* Said once every object's functions record: an attach in steps
	 * (shm_layout.h) records the program's and the C library's at once,
	 * the other objects' one by one after. */
	int said = o->snapshot != 0;

	/* --duration counts from when every object's functions record: an
	 * attach in steps can take a second and more to reach the last
	 * object on a loaded machine, and a window spent getting there would
	 * record little of what was asked. */
	uint64_t began = monotonic_ns(), deadline = o->duration_ns && said ? began + o->duration_ns : 0;
	enum why_end why;
	while ((why = check_end(pidfd, sock, deadline)) == END_NONE) {
		if (!said && (!atomic_load(&r->shm->agent_in_steps) || atomic_load(&r->shm->agent_all_live))) {
			fprintf(stderr, "needle: recording process %d (%s); Ctrl-C stops\n", (int)pid, comm);
			said = 1;
			if (o->duration_ns)
				deadline = monotonic_ns() + o->duration_ns;
		}
		/* ... but never waits more than 10 s for the last object. */
		if (o->duration_ns && !deadline && monotonic_ns() - began > 10000000000ull)
			deadline = monotonic_ns() + o->duration_ns;
		if (o->snapshot) {
			/* Short waits: the end of the process is seen by polling. */
			uint32_t word = atomic_load(&r->shm->wake_word);
			uint64_t ns = snapshot_service_poll(&ss, r);
			record_kernel_keep(r, 0);
			snapshot_service_wait(&ss, r, word, ns < 10000000ull ? ns : 10000000ull);
			continue;
		}
		if (record_buffer_ready(r))
			record_drain(r, 0);
		record_kernel_drain(r, 0);
		record_wait(r, record_sigchld, 20);
	}
	uint32_t end = why == END_EXITED ? ATTACH_END_EXITED : why == END_SESSION ? ATTACH_END_LOST
									: ATTACH_END_DETACHED;
	int unconfirmed = 0;
	if (end == ATTACH_END_DETACHED) {
		int d = detach(r, sock);
		if ((unconfirmed = d < 0))
			cli_error("warning: process %d did not confirm that it detached within 30 s", (int)pid);
		else if (d == 0)
			end = process_gone(pid, pidfd) ? ATTACH_END_EXITED : ATTACH_END_LOST;
	} else if (end == ATTACH_END_LOST && !process_gone(pid, pidfd)) {
		/* The session's end may only race the process's exit. */
		struct timespec t = { 0, 50 * 1000 * 1000 };
		nanosleep(&t, NULL);
		if (process_gone(pid, pidfd))
			end = ATTACH_END_EXITED;
	} else if (end == ATTACH_END_LOST) {
		end = ATTACH_END_EXITED;
	}
	/* The kernel's events end where the functions' do. */
	kernel_stop(&r->kernel);
	agent_session_read(sock); /* what it said last */
	/* Its children forked meanwhile, which still record (unless its
	 * detach is not known to be done: the hold service is still its). */
	if (!unconfirmed)
		record_release_forked(r, &hold, pid);
	int status = 0;
	if (end == ATTACH_END_EXITED && process_end_status(pid, pidfd, &status)) {
		end = ATTACH_END_ENDED;
		r->status = status; /* SEC_PROCESS's wait status */
	}
	r->attach.end = end;
	r->attach.detach_realtime_ns = realtime_ns();
	/* The agent's own stops, written before it said it detached (after
	 * its answer: the socket orders them). */
	r->attach.stops = r->shm->agent_stops;
	r->attach.stop_window_max_ns = r->shm->agent_stop_window_max_ns;
	r->attach.outside_hold_max_ns = r->shm->agent_outside_hold_max_ns;
	if (r->attach.stop_window_max_ns > r->attach.max_hold_ns)
		r->attach.max_hold_ns = r->attach.stop_window_max_ns;
	if (r->attach.outside_hold_max_ns > r->attach.max_hold_ns)
		r->attach.max_hold_ns = r->attach.outside_hold_max_ns;
	/* Snapshot mode: the agent writes no more (detached, or the process
	 * is gone), so the last snapshot is whole. */
	uint32_t reason = end == ATTACH_END_DETACHED                      ? TRACE_SNAPSHOT_DETACHED
			  : end == ATTACH_END_ENDED && WIFSIGNALED(status) ? TRACE_SNAPSHOT_CRASH
									   : TRACE_SNAPSHOT_END;
	int werr = o->snapshot ? snapshot_service_end(&ss, r, reason) : record_finish(r);
	if (end == ATTACH_END_ENDED && WIFSIGNALED(status))
		fprintf(stderr, "needle: process %d was killed by signal %d (%s)%s\n", (int)pid, WTERMSIG(status),
			strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
	else if (end == ATTACH_END_ENDED)
		fprintf(stderr, "needle: process %d exited with status %d\n", (int)pid, WEXITSTATUS(status));
	else if (end == ATTACH_END_EXITED)
		fprintf(stderr, "needle: process %d ended; how is not known (this kernel tells it only to "
			"its parent)\n", (int)pid);
	else if (end == ATTACH_END_LOST)
		cli_error("process %d ended the recording itself (it exec'd, or closed needle's socket)", (int)pid);
	else
		fprintf(stderr, "needle: detached from process %d; it runs on\n", (int)pid);
	ret = werr ? 1 : 0;
	goto out;

abandon:
	record_out_abandon(&r->out);
out:
	/* Its descriptors, and -E's uprobes out of tracefs. */
	kernel_close(&r->kernel);
	if (sock >= 0)
		close(sock);
	if (lfd >= 0)
		close(lfd);
	if (pidfd >= 0)
		close(pidfd);
	return ret;
}
