/* kill_at_hello - kill `needle record -p` with SIGKILL at one moment: after
 * the agent's session thread connected to it and before its hello (the
 * configuration and the buffer's descriptors) arrived.
 *
 *   kill_at_hello NEEDLE PID OUT
 *
 * Runs `NEEDLE record -p PID -o OUT` and stops it (SIGSTOP) as soon as it
 * has forked the process that loads libneedle into PID: that one goes on
 * by itself, and the session thread it starts connects to a socket that
 * nobody accepts on.  Once that thread waits in recvmsg (2 s at most),
 * needle record is killed, its listening socket closed on the connection
 * it never accepted.  Prints "hit" when the session thread was seen
 * waiting so, else "miss"; exits 1 if needle record could not be run.
 * Spinning on /proc: a shell's loop forks for each look and is late. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return (int)n;
}

/* Whether a thread of pid named needle-attach sits in recvmsg. */
static int session_waits_for_hello(pid_t pid)
{
	char path[320], buf[256];
	struct dirent *e;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		if (read_small(path, buf, sizeof(buf)) <= 0 || strcmp(buf, "needle-attach\n"))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", (int)pid, e->d_name);
		found = read_small(path, buf, sizeof(buf)) > 0 && !strncmp(buf, "47 ", 3); /* SYS_recvmsg */
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	char path[128], buf[256];
	int hit = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: kill_at_hello NEEDLE PID OUT\n");
		return 1;
	}
	pid_t pid = (pid_t)atoi(argv[2]);
	pid_t rec = fork();
	if (rec < 0)
		return 1;
	if (rec == 0) {
		execl(argv[1], argv[1], "record", "-p", argv[2], "-o", argv[3], (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)rec, (int)rec);
	double end = now() + 5;
	while (now() < end && read_small(path, buf, sizeof(buf)) == 0)
		;
	kill(rec, SIGSTOP);
	for (end = now() + 2; now() < end && !(hit = session_waits_for_hello(pid));)
		usleep(200);
	kill(rec, SIGKILL);
	int status;
	waitpid(rec, &status, 0);
	puts(hit ? "hit" : "miss");
	return WIFSIGNALED(status) ? 0 : 1;
}
