/* phases - three phases of 100 calls each to a() and b(); between phases
 * it prints a line and waits for one on stdin, so that a test can change
 * what is traced (needle ctl) at known points. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) int a(int x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) int b(int x)
{
	__asm__ volatile("");
	return x + 2;
}

int main(void)
{
	char line[64];
	long s = 0;

	for (int phase = 1; phase <= 3; phase++) {
		for (int i = 0; i < 100; i++)
			s += a(i) + b(i);
		printf("phase%d pid=%d sum=%ld\n", phase, (int)getpid(), s);
		fflush(stdout);
		if (phase < 3 && !fgets(line, sizeof(line), stdin))
			return 1;
	}
	return 0;
}
