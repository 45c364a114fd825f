/* hostile_fork - a fork made with a raw clone(2) system call, which runs
 * no pthread_atfork handlers.  The child's calls are its own. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) long in_parent(long x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long in_child(long x)
{
	__asm__ volatile("");
	return x + 2;
}

__attribute__((noinline)) long both(long x)
{
	__asm__ volatile("");
	return x + 3;
}

int main(void)
{
	long sum = both(0);
	long pid = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);

	if (pid < 0) {
		perror("clone");
		return 1;
	}
	if (pid == 0) {
		for (long i = 0; i < 300; i++)
			sum += in_child(i) + both(i);
		printf("child %ld\n", sum);
		fflush(stdout);
		_exit(7);
	}
	int status;
	waitpid((pid_t)pid, &status, 0);
	for (long i = 0; i < 200; i++)
		sum += in_parent(i);
	printf("parent %ld child status %d\n", sum, WEXITSTATUS(status));
	return 0;
}
