/* crash MODE N - calls outer() N times (each calls leaf() twice), then
 * dies inside traced frames: MODE kill raises SIGKILL, segv writes through
 * a null pointer, exit returns 3 from main, term raises SIGTERM.  Nothing
 * depends on timing: the process ends itself. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) int leaf(int x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) int outer(int x)
{
	return leaf(x) + leaf(x + 1);
}

__attribute__((noinline)) void die(const char *mode)
{
	fflush(stdout);
	if (!strcmp(mode, "kill"))
		raise(SIGKILL);
	if (!strcmp(mode, "segv"))
		*(volatile int *)(uintptr_t)0 = 1;
	if (!strcmp(mode, "term"))
		raise(SIGTERM);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	int n = argc > 2 ? atoi(argv[2]) : 1000;
	long sum = 0;

	for (int i = 0; i < n; i++)
		sum += outer(i);
	printf("sum %ld\n", sum);
	die(mode);
	return 3;
}
