/* wrapper - the program's own getpid wraps the C library's, found with
 * dlsym(RTLD_NEXT), as malloc wrappers and interposers do: the call it
 * makes to the real one is the same call (test_subtrees.sh). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

static pid_t (*real_getpid)(void);

pid_t getpid(void)
{
	if (!real_getpid)
		real_getpid = (pid_t(*)(void))dlsym(RTLD_NEXT, "getpid");
	return real_getpid ? real_getpid() : -1;
}

__attribute__((noinline)) static pid_t twice(void)
{
	return getpid() + getpid();
}

int main(void)
{
	pid_t a = getpid();
	printf("%d\n", twice() == 2 * a);
	return 0;
}
