/* jumps.c - calls to functions libneedle interposes (longjmp, ppoll),
 * and to those that return twice (setjmp) or find their caller by their
 * return address (dlopen, dlsym), whose calls are lines with no exit:
 * the interposers' own work (errno, a system call of theirs) is not a
 * call of the program's; ppoll, which the interposer calls for the
 * program, is; setjmp is one line, not also the C library's functions
 * it jumps to (__sigsetjmp, __sigjmp_save); dlsym(RTLD_NEXT), traced,
 * finds what the program's own references are bound to, as untraced
 * (tests/record/test_interposed.sh).  Prints what it did. */
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
	int next_bound = dlsym(RTLD_NEXT, "ppoll") == (void *)&ppoll;
	sigemptyset(&mask);
	struct timespec zero = { 0, 0 };
	int p = ppoll(NULL, 0, &zero, &mask);
	printf("jumped %d, libm %d, ppoll %d, next is the bound ppoll %d\n", r, have, p, next_bound);
	return 0;
}
