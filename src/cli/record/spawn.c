/* spawn.c - starting the traced program, and finding the processes
 * it leaves behind.
 *
 * Invariants:
 *  - The program inherits from needle record only what it would inherit
 *    from the caller, plus the two descriptors the agent reads before main
 *    (the buffer and the meta file).  Those sit at high numbers (below
 *    1024, for select(), and below RLIMIT_NOFILE), never at the low
 *    numbers a program takes for granted as free (it may write to fd 3);
 *    the agent closes them once read.  Everything else needle record opens,
 *    the trace file first, is close-on-exec.
 *  - Signal dispositions needle record changed for itself (SIGINT,
 *    SIGQUIT and SIGXFSZ ignored or caught, SIGTERM, SIGHUP and SIGCHLD
 *    caught) are the caller's again in the child: ignored if the caller
 *    ignored them (nohup, a shell's background job), default otherwise.
 *  - NEEDLE_CTL carries the PID of the process needle record started, so
 *    that `needle ctl` can tell that process from a child it forked (both
 *    show the variable in /proc/PID/environ).
 *  - A descendant is waited for only while it maps this recording's buffer
 *    (an exec'd or unrelated process records nothing).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/util/procfs.h"
#include "common/fd_high.h"
#include "common/record_config.h"
#include "cli/record/record.h"

/* libneedle.so beside the needle binary, or where NEEDLE_LIB says. */
int record_find_agent(char *out, size_t len)
{
	const char *env = getenv("NEEDLE_LIB");
	char self[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	const char *dir = dirname(self);
	snprintf(out, len, "%s/libneedle.so", dir);
	if (!access(out, R_OK))
		return 0;
	snprintf(out, len, "%s/../lib/needle/libneedle.so", dir);
	return access(out, R_OK);
}

/* Does PROG resolve to an executable file, as execvp would find it?  A
 * name without a slash that no PATH entry holds is then looked for in the
 * current directory, as uftrace does (`uftrace t-abc` runs ./t-abc): a
 * user who just built a program names it so. */
int record_find_program(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(out, len, "%s", prog);
		return access(out, X_OK) ? -errno : 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", prog);
		if (!access(out, X_OK))
			return 0;
		path += n + (colon != NULL);
	}
	snprintf(out, len, "./%s", prog);
	return access(out, X_OK) ? -ENOENT : 0;
}

/* A copy of fd that survives exec, at a number the program is unlikely
 * to use (common/fd_high.h), else the lowest one free above the standard
 * streams. */
static int fd_high(int fd)
{
	int h = fd_dup_high(fd, F_DUPFD);
	return h >= 0 ? h : fcntl(fd, F_DUPFD, 3);
}

static uint64_t inherited_ignored;

void record_note_inherited_signals(void)
{
	static const int own[] = RECORD_OWN_SIGNALS;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		struct sigaction sa;
		if (!sigaction(own[i], NULL, &sa) && sa.sa_handler == SIG_IGN)
			inherited_ignored |= 1ull << own[i];
	}
}

int record_signal_was_ignored(int sig)
{
	return (inherited_ignored >> sig) & 1;
}

pid_t record_spawn(char **argv, const char *agent, int buf_fd, int meta_fd, const struct record_opts *o,
		   struct kernel_rec *kernel, int *exec_errno)
{
	int pipefd[2], gofd[2] = { -1, -1 };
	pid_t pid;

	pid_t self = getpid();

	if (pipe2(pipefd, O_CLOEXEC))
		return -1;
	/* --kernel: the child waits before its exec for the events to be
	 * opened on it, so that they see the program from its first
	 * instruction. */
	if (kernel && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gofd)) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char num[32];
		const char *pre_env = getenv("LD_PRELOAD");
		char *pre = pre_env ? strdup(pre_env) : NULL; /* setenv below may free it */
		char *preload = malloc(strlen(agent) + (pre ? strlen(pre) : 0) + 2);
		int hbuf = fd_high(buf_fd), hmeta = fd_high(meta_fd);

		close(pipefd[0]);
		static const int own[] = RECORD_OWN_SIGNALS;
		for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			signal(own[i], record_signal_was_ignored(own[i]) ? SIG_IGN : SIG_DFL);
		if (hbuf < 0 || hmeta < 0 || !preload || (pre_env && !pre)) {
			int e = errno ? errno : ENOMEM;
			if (write(pipefd[1], &e, sizeof(e)) < 0)
				_exit(127);
			_exit(127);
		}
		sprintf(preload, "%s%s%s", agent, pre && *pre ? ":" : "", pre && *pre ? pre : "");
		setenv("LD_PRELOAD", preload, 1);
		/* --no-pltbind, uftrace's: every symbol bound at start, as the
		 * user asked (the program sees the variable). */
		if (o->bind_now)
			setenv("LD_BIND_NOW", "1", 1);
		/* Everything the agent is to do, in one memfd (the environment
		 * carries its descriptor only): read and closed by the agent
		 * before main, so the program never sees it. */
		struct record_config cfg = o->agent;
		cfg.buf_fd = hbuf;
		cfg.meta_fd = hmeta;
		cfg.orig_ld_preload = pre ? pre : (char *)"";
		/* A traced process that exec's opens the buffer and the meta
		 * file again through these (agent/record/exec_follow.c): the
		 * program itself keeps no descriptor of needle's. */
		cfg.rec_pid = self;
		cfg.rec_buf_fd = buf_fd;
		cfg.rec_meta_fd = meta_fd;
		cfg.image = 0;
		uint8_t *bytes = NULL;
		size_t len = 0, left;
		int cfd = -1, hcfg = -1, e = record_config_encode(&cfg, &bytes, &len);
		if (!e && (cfd = memfd_create("needle-config", 0)) < 0)
			e = -errno;
		left = len;
		for (const uint8_t *p = bytes; !e && left;) {
			ssize_t w = write(cfd, p, left);
			if (w <= 0) {
				e = w < 0 ? -errno : -EIO;
				break;
			}
			p += w;
			left -= (size_t)w;
		}
		if (!e && (hcfg = fd_high(cfd)) < 0)
			e = -errno;
		if (e) {
			e = -e;
			if (write(pipefd[1], &e, sizeof(e)) < 0)
				_exit(127);
			_exit(127);
		}
		close(cfd);
		if (o->agent.ctl)
			snprintf(num, sizeof(num), "%d ctl=%d", hcfg, (int)getpid());
		else
			snprintf(num, sizeof(num), "%d", hcfg);
		setenv(RECORD_CONFIG_ENV, num, 1);
		if (kernel) {
			char go;
			close(gofd[1]);
			if (read(gofd[0], &go, 1) != 1)
				_exit(127); /* needle record is gone */
		}
		execvp(argv[0], argv);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	if (kernel) {
		close(gofd[0]);
		if (kernel_open(kernel, pid))
			cli_error("--kernel: nothing could be opened (%s); recording the functions only",
				  kernel->left_out[0] ? kernel->left_out : "perf_event_open refused every event");
		else if (kernel->left_out[0])
			cli_error("--kernel: left out: %s", kernel->left_out);
		/* MSG_NOSIGNAL: a child that died before its exec is no
		 * SIGPIPE of ours. */
		if (send(gofd[1], "g", 1, MSG_NOSIGNAL) != 1 && errno != EPIPE)
			cli_error("--kernel: cannot start the program (%s)", strerror(errno));
		close(gofd[1]);
	}
	*exec_errno = 0;
	if (read(pipefd[0], exec_errno, sizeof(*exec_errno)) != sizeof(*exec_errno))
		*exec_errno = 0;
	close(pipefd[0]);
	return pid;
}

struct proc_link {
	pid_t pid, ppid;
};

/* Every process and its parent, from /proc/PID/stat: "pid (comm) S ppid".
 * The comm may hold spaces and parentheses: the last ')' ends it. */
static size_t proc_links(struct proc_link **out)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct proc_link *v = NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], buf[512];
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		char *close_paren = strrchr(buf, ')');
		int ppid;
		if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct proc_link *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = (struct proc_link){ atoi(e->d_name), ppid };
	}
	closedir(d);
	*out = v;
	return n;
}

size_t record_descendants(ino_t buf_ino, pid_t *pids, size_t max)
{
	struct proc_link *v;
	size_t n = proc_links(&v), found = 0;
	pid_t *queue = malloc((n + 1) * sizeof(*queue));
	size_t head = 0, tail = 0;

	if (!queue) {
		free(v);
		return 0;
	}
	queue[tail++] = getpid();
	while (head < tail) {
		pid_t p = queue[head++];
		for (size_t i = 0; i < n && tail <= n; i++) {
			if (v[i].ppid != p)
				continue;
			queue[tail++] = v[i].pid;
			if (record_maps_buffer(v[i].pid, buf_ino)) {
				if (found < max)
					pids[found] = v[i].pid;
				found++;
			}
		}
	}
	free(queue);
	free(v);
	return found;
}
