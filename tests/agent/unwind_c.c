/* unwind_c MODE - control flow that skips or interrupts traced returns.
 * Each mode prints what it did; the output must be the same traced and
 * untraced, and the test checks the trace's nesting.
 *
 *   longjmp    level3 longjmps back to runner, 100 times
 *   siglongjmp a signal handler siglongjmps out of level3, 100 times
 *   signal     a signal handler runs traced code in the middle of level2
 *   altstack   the same on an alternate signal stack
 *   exit       a thread calls pthread_exit from t_level2
 *   cancel     a thread is cancelled inside t_level2
 *   fork       the child calls traced functions, then exits 7
 *   vfork      vfork + exec of /bin/true
 *   backtrace  backtrace() from level3: same depth traced and untraced
 *   coroutine  swapcontext between main and a coroutine that yields 5 times
 *              from inside traced calls, then ends through uc_link */
#include <execinfo.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static jmp_buf jump;
static sigjmp_buf sigjump;
static volatile int mode_siglongjmp;
static volatile int handled;

NOINLINE int leaf(int x)
{
	__asm__ volatile("");
	return x + 1;
}

NOINLINE void level3(int i)
{
	leaf(i);
	if (mode_siglongjmp)
		raise(SIGUSR1);
	else
		longjmp(jump, i + 1);
}

NOINLINE void level2(int i)
{
	level3(i);
}

NOINLINE void level1(int i)
{
	level2(i);
}

NOINLINE int after(int x)
{
	return leaf(x) * 2;
}

NOINLINE void on_usr1(int sig)
{
	(void)sig;
	siglongjmp(sigjump, 1);
}

NOINLINE int run_jumps(int n, int sig)
{
	int total = 0;
	mode_siglongjmp = sig;
	for (int i = 0; i < n; i++) {
		if (sig) {
			if (!sigsetjmp(sigjump, 1))
				level1(i);
		} else {
			if (!setjmp(jump))
				level1(i);
		}
		total += after(i);
	}
	return total;
}

NOINLINE int handler_work(int x)
{
	return leaf(x) + 3;
}

NOINLINE void on_usr2(int sig)
{
	(void)sig;
	handled += handler_work(handled);
}

NOINLINE int interrupted(int x)
{
	raise(SIGUSR2);
	return leaf(x);
}

NOINLINE int run_signals(int n)
{
	int total = 0;
	for (int i = 0; i < n; i++)
		total += interrupted(i);
	return total;
}

/* t_level2 may return (never is never set), so that at -O2 t_level1's
 * call of it is a sibling call: a cancellation then unwinds two traced
 * frames that share one stack pointer and one return slot. */
static volatile int never;

NOINLINE void t_level2(int how)
{
	leaf(how);
	if (how == 0)
		pthread_exit((void *)42);
	while (!never)
		pause(); /* a cancellation point */
}

NOINLINE void t_level1(int how)
{
	t_level2(how);
}

static volatile int cancel_ready;

static void *thread_main(void *arg)
{
	int how = (int)(long)arg;
	if (how == 1)
		cancel_ready = 1;
	t_level1(how);
	return NULL;
}

NOINLINE int child_work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += leaf(i);
	return s;
}

NOINLINE int show_backtrace(void)
{
	void *frames[64];
	return backtrace(frames, 64);
}

NOINLINE int bt_level2(void)
{
	return show_backtrace();
}

NOINLINE int bt_level1(void)
{
	return bt_level2();
}

static ucontext_t main_ctx, co_ctx;

NOINLINE void co_yield(void)
{
	swapcontext(&co_ctx, &main_ctx);
}

NOINLINE void co_body(void)
{
	for (int i = 0; i < 5; i++) {
		leaf(i);
		co_yield();
	}
}

NOINLINE void co_entry(void)
{
	co_body();
}

NOINLINE int co_resume(void)
{
	swapcontext(&main_ctx, &co_ctx);
	return leaf(1);
}

NOINLINE int run_coroutine(void)
{
	static char stack[65536];
	int s = 0;
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = sizeof(stack);
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co_entry, 0);
	for (int i = 0; i < 6; i++)
		s += co_resume();
	return s;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "longjmp";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(mode, "longjmp")) {
		printf("longjmp total %d\n", run_jumps(100, 0));
	} else if (!strcmp(mode, "siglongjmp")) {
		signal(SIGUSR1, on_usr1);
		printf("siglongjmp total %d\n", run_jumps(100, 1));
	} else if (!strcmp(mode, "signal") || !strcmp(mode, "altstack")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr2;
		if (!strcmp(mode, "altstack")) {
			stack_t ss = { .ss_sp = malloc(65536), .ss_size = 65536 };
			sigaltstack(&ss, NULL);
			sa.sa_flags = SA_ONSTACK;
		}
		sigaction(SIGUSR2, &sa, NULL);
		printf("%s total %d handled %d\n", mode, run_signals(100), handled);
	} else if (!strcmp(mode, "exit") || !strcmp(mode, "cancel")) {
		int how = !strcmp(mode, "cancel");
		pthread_t t;
		void *ret;
		pthread_create(&t, NULL, thread_main, (void *)(long)how);
		if (how) {
			while (!cancel_ready)
				;
			pthread_cancel(t);
		}
		pthread_join(t, &ret);
		printf("%s: thread returned %s\n", mode,
		       ret == PTHREAD_CANCELED ? "canceled" : ret == (void *)42 ? "42" : "?");
		printf("after: %d\n", after(1));
	} else if (!strcmp(mode, "fork")) {
		pid_t pid = fork();
		if (pid == 0)
			exit(child_work(100) == 5050 ? 7 : 1);
		int st;
		waitpid(pid, &st, 0);
		printf("fork: child exited %d, parent %d\n", WEXITSTATUS(st), child_work(10));
	} else if (!strcmp(mode, "vfork")) {
		pid_t pid = vfork();
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		int st;
		waitpid(pid, &st, 0);
		printf("vfork: child exited %d, parent %d\n", WEXITSTATUS(st), child_work(10));
	} else if (!strcmp(mode, "coroutine")) {
		printf("coroutine: %d\n", run_coroutine());
	} else if (!strcmp(mode, "backtrace")) {
		printf("backtrace depth %d\n", bt_level1());
	}
	return 0;
}
