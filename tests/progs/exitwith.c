/* exitwith N - calls step() once and exits with status N.  The CLI tests
 * also build it statically: a program the agent cannot be loaded into. */
#include <stdlib.h>

__attribute__((noinline)) int step(int x)
{
	__asm__ volatile("");
	return x;
}

int main(int argc, char **argv)
{
	return step(argc > 1 ? atoi(argv[1]) : 0);
}
