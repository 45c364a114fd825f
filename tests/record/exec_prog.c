/* exec_prog - a program that exec's itself (or another program) in the
 * ways a program does, for tests/record/test_exec_follow.sh:
 *
 *   exec_prog abc             main > a > b > c > getpid, then what it sees:
 *                             its descriptors, LD_PRELOAD, NEEDLE_CONFIG,
 *                             EXEC_TEST
 *   exec_prog fork            fork, the child execl's "abc"; the parent waits
 *   exec_prog vfork           the same with vfork
 *   exec_prog spawn           posix_spawn "abc" with an environment of its own
 *   exec_prog execvp DIR      fork, the child execvp's exec_prog along PATH=DIR
 *   exec_prog sh              fork, the child execl's /bin/sh -c "SELF abc"
 *   exec_prog thread          a second thread execl's "abc" (the first waits)
 *   exec_prog fail            execl of a file that does not exist: its errno,
 *                             and nothing left open
 *   exec_prog static PROG     fork, the child execl's PROG (a static program)
 *
 * Each process prints its lines after its children's, so the output is
 * the same whatever the scheduling. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static const char *self;

static int fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1; /* the directory's own */
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "(unset)";
}

__attribute__((noinline)) int c(void) { return getpid() > 0; }
__attribute__((noinline)) int b(void) { return c() + 1; }
__attribute__((noinline)) int a(void) { return b() + 1; }

static int wait_child(pid_t pid)
{
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void *exec_thread(void *arg)
{
	(void)arg;
	execl(self, "exec_prog", "abc", (char *)NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "abc";
	self = "/proc/self/exe";
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = 0;
		self = path;
	}
	fflush(stdout);
	if (!strcmp(mode, "abc")) {
		printf("abc %d fds=%d LD_PRELOAD=%s NEEDLE_CONFIG=%s EXEC_TEST=%s\n", a(), fds(), env("LD_PRELOAD"),
		       env("NEEDLE_CONFIG"), env("EXEC_TEST"));
		return 3;
	}
	if (!strcmp(mode, "fork") || !strcmp(mode, "vfork")) {
		pid_t pid = mode[0] == 'f' ? fork() : vfork();
		if (pid == 0) {
			execl(self, "exec_prog", "abc", (char *)NULL);
			_exit(127);
		}
		printf("%s: child exit %d\n", mode, wait_child(pid));
		return 0;
	}
	if (!strcmp(mode, "spawn")) {
		char *cargv[] = { "exec_prog", "abc", NULL };
		char *cenv[] = { "EXEC_TEST=spawned", NULL };
		pid_t pid;
		int e = posix_spawn(&pid, self, NULL, NULL, cargv, cenv);
		printf("spawn: %d, child exit %d, fds=%d\n", e, e ? -1 : wait_child(pid), fds());
		return 0;
	}
	if (!strcmp(mode, "execvp") && argc > 2) {
		pid_t pid = fork();
		if (pid == 0) {
			char *cargv[] = { "exec_prog", "abc", NULL };
			setenv("PATH", argv[2], 1);
			setenv("EXEC_TEST", "along PATH", 1);
			execvp("exec_prog", cargv);
			_exit(127);
		}
		printf("execvp: child exit %d\n", wait_child(pid));
		return 0;
	}
	if (!strcmp(mode, "sh")) {
		char cmd[4200];
		snprintf(cmd, sizeof(cmd), "%s abc", self);
		pid_t pid = fork();
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		printf("sh: child exit %d\n", wait_child(pid));
		return 0;
	}
	if (!strcmp(mode, "thread")) {
		pthread_t t;
		pthread_create(&t, NULL, exec_thread, NULL);
		pthread_join(t, NULL);
		return 1; /* not reached: the exec ends every thread */
	}
	if (!strcmp(mode, "fail")) {
		int before = fds();
		errno = 0;
		int r = execl("/nonexistent/exec_prog", "exec_prog", "abc", (char *)NULL);
		int e = errno;
		printf("fail: %d %s, fds %d then %d, LD_PRELOAD=%s\n", r, strerror(e), before, fds(), env("LD_PRELOAD"));
		return 0;
	}
	if (!strcmp(mode, "static") && argc > 2) {
		pid_t pid = fork();
		if (pid == 0) {
			execl(argv[2], argv[2], (char *)NULL);
			_exit(127);
		}
		printf("static: child exit %d\n", wait_child(pid));
		return 0;
	}
	fprintf(stderr, "exec_prog: unknown mode %s\n", mode);
	return 2;
}
