/* subtrees.c - calls nested a few levels, a slow one among them, and
 * calls into the C library, for the uftrace-style filters of record and
 * replay (tests/record/test_subtrees.sh). */
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE int leaf(void)
{
	return (int)getpid() & 1;
}

NOINLINE int inner(void)
{
	return leaf() + 1;
}

NOINLINE int outer(void)
{
	return inner() + 1;
}

NOINLINE void nap(void)
{
	usleep(3000);
}

NOINLINE void slow(void)
{
	leaf();
	nap();
}

NOINLINE void *grab(void)
{
	return malloc(32);
}

int main(void)
{
	free(grab());
	outer();
	slow();
	return 0;
}
