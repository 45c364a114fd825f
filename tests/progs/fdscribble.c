/* fdscribble N - writes garbage to descriptors 3 to 9 (whatever they are),
 * then calls work() N times: a program that assumes those numbers are its
 * own must not be able to damage the recording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) long work(long x)
{
	__asm__ volatile("");
	return x * 7 + 1;
}

int main(int argc, char **argv)
{
	static const char junk[] = "\xde\xad\xbe\xef garbage written by the program\n";
	long n = argc > 1 ? atol(argv[1]) : 1000, s = 0;

	for (int fd = 3; fd <= 9; fd++)
		for (int i = 0; i < 64; i++)
			if (write(fd, junk, sizeof(junk) - 1) < 0)
				break;
	for (long i = 0; i < n; i++)
		s += work(i);
	printf("sum %ld\n", s);
	return 0;
}
