/* srclines_part.h - functions defined in a second source file, for
 * replay -L (tests/record/test_srclines.sh): only srclines.c includes it. */
#define NOINLINE __attribute__((noinline))

NOINLINE static int part_leaf(int x)
{
	return x * 3 + 1;
}

NOINLINE static int part_outer(int x)
{
	return part_leaf(x) + part_leaf(x + 1);
}
