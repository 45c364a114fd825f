/* daemon N [hold] - daemonizes the way servers do: calls parent_work() 10
 * times, forks, and the parent exits with status 5.  The child waits until
 * the parent is gone (end of file on a pipe whose writer only the parent
 * held), starts a session of its own, calls child_work() N times and prints
 * "child done pid=PID".  With "hold" it then waits for its stdin to reach
 * end of file before exiting.  Nothing depends on timing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) long parent_work(long x)
{
	__asm__ volatile("");
	return x + 11;
}

__attribute__((noinline)) long child_work(long x)
{
	__asm__ volatile("");
	return x * 3;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100, s = 0;
	int hold = argc > 2 && !strcmp(argv[2], "hold");
	int p[2];
	char c;

	for (long i = 0; i < 10; i++)
		s += parent_work(i);
	if (pipe(p))
		return 1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0)
		return 5; /* p[1] closes when the parent is gone */
	close(p[1]);
	while (read(p[0], &c, 1) > 0)
		;
	setsid();
	for (long i = 0; i < n; i++)
		s += child_work(i);
	printf("child done pid=%d sum=%ld\n", (int)getpid(), s);
	fflush(stdout);
	if (hold)
		while (read(0, &c, 1) > 0)
			;
	return 0;
}
