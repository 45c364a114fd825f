/* signal_prog - the signals needle record --signal takes, as a program
 * sees them (tests/record/test_signal.sh).
 *
 *   signal_prog raise     foo(); signal(SIGUSR1, handler); raise it; foo()
 *                         (uftrace's s-signal.c), then what the program
 *                         reads back of its action, and errno
 *   signal_prog bare SIG  before(); raise SIG with no handler; after()
 *   signal_prog reset     a SA_RESETHAND handler: its action read back
 *                         before and after one delivery
 *   signal_prog loop N    before(); N rounds of work() with SIGUSR1
 *                         raised at round N/2 (no handler); after()
 *   signal_prog wait FILE work() every millisecond until FILE exists
 *                         (for needle record -p), then "done" */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile int dummy;

__attribute__((noinline)) int foo(void)
{
	return dummy;
}

__attribute__((noinline)) void bar(int n)
{
	dummy = n;
}

__attribute__((noinline)) void before(void)
{
	dummy++;
}

__attribute__((noinline)) void after(void)
{
	dummy++;
}

__attribute__((noinline)) void work(int i)
{
	dummy += i;
}

void handler(int sig)
{
	bar(sig);
}

static void show_action(const char *when, int sig)
{
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa)) {
		printf("%s: sigaction failed: %s\n", when, strerror(errno));
		return;
	}
	printf("%s: handler=%s flags=%#x mask:usr2=%d term=%d int=%d\n", when,
	       sa.sa_handler == handler ? "handler" : sa.sa_handler == SIG_DFL ? "SIG_DFL"
					 : sa.sa_handler == SIG_IGN ? "SIG_IGN" : "other",
	       (unsigned)sa.sa_flags, sigismember(&sa.sa_mask, SIGUSR2), sigismember(&sa.sa_mask, SIGTERM),
	       sigismember(&sa.sa_mask, SIGINT));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "raise";

	if (!strcmp(mode, "raise")) {
		foo();
		void (*old)(int) = signal(SIGUSR1, handler);
		printf("old: %s\n", old == SIG_DFL ? "SIG_DFL" : "other");
		errno = 42;
		raise(SIGUSR1);
		printf("errno after the handler: %d\n", errno);
		foo();
		show_action("after signal()", SIGUSR1);
		struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_NODEFER };
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, SIGUSR2);
		sigaddset(&sa.sa_mask, SIGTERM);
		struct sigaction prev;
		sigaction(SIGUSR1, &sa, &prev);
		printf("prev: %s flags=%#x\n", prev.sa_handler == handler ? "handler" : "other",
		       (unsigned)prev.sa_flags);
		show_action("after sigaction()", SIGUSR1);
		raise(SIGUSR1);
		printf("dummy=%d\n", dummy);
		return 0;
	}
	if (!strcmp(mode, "bare") && argc > 2) {
		before();
		raise(atoi(argv[2]));
		after();
		printf("survived\n");
		return 0;
	}
	if (!strcmp(mode, "reset")) {
		struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESETHAND };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
		show_action("before", SIGUSR1);
		raise(SIGUSR1);
		show_action("after one", SIGUSR1);
		return 0;
	}
	if (!strcmp(mode, "loop") && argc > 2) {
		int n = atoi(argv[2]);
		before();
		for (int i = 0; i < n; i++) {
			if (i == n / 2)
				raise(SIGUSR1);
			work(i);
		}
		after();
		printf("dummy=%d\n", dummy);
		return 0;
	}
	if (!strcmp(mode, "wait") && argc > 2) {
		for (int i = 0; access(argv[2], F_OK); i++) {
			work(i);
			usleep(1000);
		}
		printf("done\n");
		return 0;
	}
	fprintf(stderr, "usage: signal_prog raise|bare SIG|reset|loop N|wait FILE\n");
	return 2;
}
