/* srclines.c - calls between functions of two source files (this one and
 * srclines_part.h), for replay --srcline and -L
 * (tests/record/test_srclines.sh). */
#include <unistd.h>

#include "srclines_part.h"

NOINLINE int here_leaf(void)
{
	return (int)getpid() & 1;
}

NOINLINE int here_outer(void)
{
	return part_outer(here_leaf()) + 1;
}

int main(void)
{
	return here_outer() > 0 ? 0 : 1;
}
