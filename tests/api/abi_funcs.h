/* abi_funcs.h - traced functions whose arguments and return values take
 * each class of the x86-64 ABI: six integer arguments, eight double
 * ones, a struct returned in rax:rdx, a double returned in xmm0.  The
 * direct-path tests (test_api_direct.c, test_api_probe.c) check that a
 * handler clobbering every register it may leaves them unchanged.  One
 * copy per test program, which is built with patchable entries. */
#ifndef NEEDLE_TEST_ABI_FUNCS_H
#define NEEDLE_TEST_ABI_FUNCS_H

#include <stdint.h>

#define TRACED __attribute__((noipa))

struct pair {
	long a, b;
};

TRACED uint64_t d_int(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f)
{
	return a + 3 * b + 5 * c + 7 * d + 11 * e + 13 * f;
}

TRACED double d_fp(double a, double b, double c, double d, double e, double f, double g, double h)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}

TRACED struct pair d_pair(long x)
{
	return (struct pair){ x * 3, x - 7 };
}

TRACED double d_fret(double x)
{
	return x * 0.5;
}

#endif
