/* sigq_target.c - a process whose one thread takes a stream of queued
 * signals (SIGRTMIN+2, sigqueue'd by a child with the values 1..N, one
 * every 100 us), for tests/attach/test_attach_signals.sh: needle record -p
 * borrows that thread to load libneedle while signals keep coming, and
 * every one must reach the handler once, as sent (SI_QUEUE, the child's
 * pid, its value); beside them as many SIGRTMIN+3 sent with kill (SI_USER,
 * the child's pid: a siginfo no other process may queue).  Prints "ready
 * PID", then, when the child is done (SIGUSR1), "received R of N, wrong
 * W, twice T, killed K" and exits. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t done;
static volatile long received, wrong, twice, killed;
static volatile pid_t sender;
static unsigned char *seen;
static long total;

static void on_value(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	long v = si->si_value.sival_int;
	if (si->si_code != SI_QUEUE || si->si_pid != sender || v < 1 || v > total) {
		wrong++;
		return;
	}
	if (seen[v])
		twice++;
	seen[v] = 1;
	received++;
}

static void on_kill(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code != SI_USER || si->si_pid != sender)
		wrong++;
	else
		killed++;
}

static void on_done(int sig)
{
	(void)sig;
	done = 1;
}

int main(int argc, char **argv)
{
	total = argc > 1 ? atol(argv[1]) : 20000;
	seen = calloc((size_t)total + 1, 1);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_value;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGRTMIN + 2, &sa, NULL);
	sa.sa_sigaction = on_kill;
	sigaction(SIGRTMIN + 3, &sa, NULL);
	signal(SIGUSR1, on_done);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* The stream starts once the test has seen "ready" and a line on
	 * standard input says go. */
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	pid_t parent = getpid();
	/* The child may send before fork returns here and sender is set: the
	 * two signals stay blocked (queued, both being real-time) until it is. */
	sigset_t stream, old;
	sigemptyset(&stream);
	sigaddset(&stream, SIGRTMIN + 2);
	sigaddset(&stream, SIGRTMIN + 3);
	sigprocmask(SIG_BLOCK, &stream, &old);
	pid_t child = fork();
	if (child == 0) {
		for (long i = 1; i <= total; i++) {
			union sigval v = { .sival_int = (int)i };
			while (sigqueue(parent, SIGRTMIN + 2, v))
				usleep(50); /* the queue is full: the receiver catches up */
			while (kill(parent, SIGRTMIN + 3))
				usleep(50);
			struct timespec t = { 0, 100 * 1000 };
			nanosleep(&t, NULL);
		}
		kill(parent, SIGUSR1);
		_exit(0);
	}
	sender = child;
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (!done) {
		struct timespec t = { 0, 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	waitpid(child, NULL, 0);
	printf("received %ld of %ld, wrong %ld, twice %ld, killed %ld\n", (long)received, total, (long)wrong, (long)twice,
	       (long)killed);
	return 0;
}
