/* jumps.c - calls to functions libneedle interposes without tracing
 * them (longjmp, dlopen) and to one it interposes and traces (ppoll):
 * the interposers' own work (errno, a system call of theirs) is not a
 * call of the program's; ppoll, which the interposer calls for the
 * program, is (tests/record/test_interposed.sh).  Prints what it did. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa))

static jmp_buf env;

NOINLINE static void jump_back(int v)
{
	longjmp(env, v);
}

NOINLINE static int after(int v)
{
	return v + (int)(getpid() & 0);
}

int main(void)
{
	volatile int r = 0;
	sigset_t mask;

	if (!setjmp(env))
		jump_back(7);
	else
		r = after(1);
	void *h = dlopen("libm.so.6", RTLD_NOW);
	int have = h && dlsym(h, "cos");
	sigemptyset(&mask);
	struct timespec zero = { 0, 0 };
	int p = ppoll(NULL, 0, &zero, &mask);
	printf("jumped %d, libm %d, ppoll %d\n", r, have, p);
	return 0;
}
