/* waiter N - calls work() N times, prints "ready pid=PID" and waits for
 * its stdin to reach end of file, then calls work() N times more.  A test
 * holds the recording open at a known point this way. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) long work(long x)
{
	__asm__ volatile("");
	return x * 5 + 3;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, s = 0;
	char buf[256];

	for (long i = 0; i < n; i++)
		s += work(i);
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	for (long i = 0; i < n; i++)
		s += work(i);
	printf("sum %ld\n", s);
	return 0;
}
