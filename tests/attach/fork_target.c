/* fork_target - a process that forks while it is recorded, for
 * test_attach_fork_release.
 *
 * Every process of it calls work() in a loop and adds up what it
 * returns; on SIGTERM it says "done PID calls=N ok" when the sum is the
 * one N calls must give (a traced call that returned something else
 * shows as "BAD"), and exits 0.  SIGUSR1 makes the first process fork a
 * child, which also starts a thread that blocks every signal and calls
 * work() too (letting go of the child's recording needs that thread held
 * from outside); SIGUSR2 makes a child fork a grandchild; SIGHUP makes
 * the first process fork with a raw clone system call (no atfork
 * handler runs in that child).  Each new process prints "child PID",
 * "grandchild PID" or "rawchild PID".
 *
 * With "daemon", the first process forks one child into a session of its
 * own and returns from main at once, as a daemon's launcher does; with
 * "exec", that child runs `sh -c 'sleep 30; true'` instead (an exec'ed
 * image whose -F matches nothing forwards the recording to its own
 * execs, and must be let go of too). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t fork_child, fork_grandchild, fork_raw, done;
static _Atomic unsigned long blocked_calls, blocked_sum;

__attribute__((noinline)) unsigned long work(unsigned long i)
{
	__asm__ volatile("" ::: "memory");
	return i * 3 + 1;
}

static void on_usr1(int s) { (void)s; fork_child = 1; }
static void on_usr2(int s) { (void)s; fork_grandchild = 1; }
static void on_hup(int s) { (void)s; fork_raw = 1; }
static void on_term(int s) { (void)s; done = 1; }

static void *blocked(void *arg)
{
	(void)arg;
	/* Straight to the kernel, as a runtime's own threads do: no
	 * interposed pthread_sigmask sees it, and needle's stop signal is
	 * blocked too. */
	uint64_t all = ~0ull;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(all));
	/* Busy: a thread asleep in a system call is left behind a door, one
	 * that runs must be stopped, which only ptrace can do to it. */
	for (unsigned long i = 0;; i++) {
		atomic_fetch_add(&blocked_sum, work(i));
		atomic_store(&blocked_calls, i + 1);
		if (!(i & 1023))
			usleep(1000);
	}
	return NULL;
}

static void say(const char *what)
{
	printf("%s %d\n", what, (int)getpid());
	fflush(stdout);
}

static int run(int first)
{
	unsigned long calls = 0, sum = 0;
	while (!done) {
		sum += work(calls++);
		if (first && fork_child) {
			fork_child = 0;
			pid_t p = fork();
			if (p == 0) {
				first = 0;
				calls = sum = 0;
				pthread_t t;
				pthread_create(&t, NULL, blocked, NULL);
				say("child");
			}
		}
		if (first && fork_raw) {
			fork_raw = 0;
			if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) == 0) {
				first = 0;
				calls = sum = 0;
				say("rawchild");
			}
		}
		if (!first && fork_grandchild) {
			fork_grandchild = 0;
			if (fork() == 0) {
				calls = sum = 0;
				say("grandchild");
			}
		}
		usleep(1000);
	}
	/* The blocked thread's sums are checked at a moment it is between
	 * two calls: its count and sum are read until they agree. */
	unsigned long bc = 0, bs = 0;
	int bok = 1;
	for (int i = 0; i < 1000 && (bc = atomic_load(&blocked_calls)); i++) {
		bs = atomic_load(&blocked_sum);
		if ((bok = bs == 3 * (bc * (bc - 1) / 2) + bc && bc == atomic_load(&blocked_calls)))
			break;
	}
	int ok = sum == 3 * (calls * (calls - 1) / 2) + calls && bok;
	printf("done %d calls=%lu %s\n", (int)getpid(), calls, ok ? "ok" : "BAD");
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		if (fork() == 0) {
			setsid();
			say("child");
			execl("/bin/sh", "sh", "-c", "sleep 30; true", (char *)NULL);
			_exit(127);
		}
		sleep(1); /* its image records before this one ends */
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "daemon")) {
		if (fork() == 0) {
			setsid();
			say("child");
			return run(0);
		}
		return 0;
	}
	say("ready");
	return run(1);
}
