/* eventloop MODE - a single-threaded event loop asleep in one waiting
 * call, the way servers idle: nginx's worker in epoll_wait, its master in
 * sigsuspend, postgres in epoll_wait with a timeout, a signal thread in
 * sigtimedwait.  Each line on stdin (a pipe) wakes it once; it then
 * calls loop_tick() and prints what the call returned, so that any EINTR
 * or short count shows in its output.  "quit" ends it.  SIGUSR1 is
 * blocked (sigsuspend and sigtimedwait wait for it) and sent by the loop
 * itself when a line arrives on the pipe in the signal modes: the pipe is
 * read by a helper process made with fork, which signals the parent.
 *
 * MODE: epoll (epoll_wait, no timeout), epoll_timeout (epoll_wait,
 * 10 s), epoll_pwait, sigsuspend, sigtimedwait. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	(void)sig;
	got++;
}

__attribute__((noinline)) int loop_tick(int n)
{
	__asm__ volatile("");
	return n + 1;
}

static int run_epoll(const char *mode)
{
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = 0 };
	char line[256];
	sigset_t none;

	sigemptyset(&none);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev))
		return 1;
	for (int n = 0;;) {
		struct epoll_event out;
		errno = 0;
		int r = !strcmp(mode, "epoll_pwait") ? epoll_pwait(ep, &out, 1, -1, &none)
			: epoll_wait(ep, &out, 1, !strcmp(mode, "epoll_timeout") ? 10000 : -1);
		int e = errno;
		if (r != 1) {
			printf("wait returned %d errno %s\n", r, strerror(e));
			fflush(stdout);
			continue;
		}
		ssize_t len = read(0, line, sizeof(line) - 1);
		if (len <= 0)
			return 0;
		line[len] = 0;
		n = loop_tick(n);
		printf("tick %d: %s", n, line);
		fflush(stdout);
		if (strstr(line, "quit"))
			return 0;
	}
}

/* The signal modes: a child reads stdin and sends SIGUSR1 per line. */
static int run_signal(const char *mode)
{
	sigset_t usr1, old;
	struct sigaction act = { .sa_handler = on_usr1 };

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	sigaction(SIGUSR1, &act, NULL);
	pid_t parent = getpid(), reader = fork();
	if (reader == 0) {
		char line[256];
		while (fgets(line, sizeof(line), stdin)) {
			kill(parent, SIGUSR1);
			if (strstr(line, "quit"))
				break;
			usleep(50 * 1000);
		}
		_exit(0);
	}
	for (int n = 0; n < 1000;) {
		errno = 0;
		int r;
		if (!strcmp(mode, "sigsuspend")) {
			r = sigsuspend(&old);
			if (r == -1 && errno == EINTR && got) {
				got = 0;
				r = SIGUSR1;
			}
		} else {
			r = sigwaitinfo(&usr1, NULL);
		}
		int e = errno;
		if (r != SIGUSR1) {
			printf("wait returned %d errno %s\n", r, strerror(e));
			fflush(stdout);
			continue;
		}
		n = loop_tick(n);
		printf("signal %d\n", n);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "epoll";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strncmp(mode, "epoll", 5))
		return run_epoll(mode);
	return run_signal(mode);
}
