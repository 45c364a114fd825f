/* calling - what the calling trampoline (trampoline.S) must hand through
 * untouched when it calls a traced function itself: arguments on the
 * stack (integers, and doubles past the eighth), a variadic function's
 * vector count in rax and its stack arguments, the address of a struct
 * returned in memory, returns in rax:rdx, xmm0:xmm1 and x87's st0, and
 * tail calls between traced functions.  It prints every result, so that
 * a test compares a traced run with an untraced one byte for byte, and
 * makes a known number of calls of each function. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 1000

struct big {
	long v[5];
};
struct pair {
	long a, b;
};
struct dpair {
	double x, y;
};

__attribute__((noinline)) long c_stack(long a, long b, long c, long d, long e, long f, long g, long h, long i)
{
	__asm__ volatile("");
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i;
}

__attribute__((noinline)) double c_fstack(double a, double b, double c, double d, double e, double f, double g,
					  double h, double i, double j)
{
	__asm__ volatile("");
	return a + b * 2 + c * 3 + d * 4 + e * 5 + f * 6 + g * 7 + h * 8 + i * 9 + j * 10;
}

__attribute__((noinline)) double c_varargs(int n, ...)
{
	va_list ap;
	double s = 0;

	va_start(ap, n);
	for (int k = 0; k < n; k++)
		s += k & 1 ? va_arg(ap, double) : (double)va_arg(ap, long);
	va_end(ap);
	return s;
}

__attribute__((noinline)) struct big c_big(long x)
{
	struct big b;
	for (int k = 0; k < 5; k++)
		b.v[k] = x * (k + 1);
	__asm__ volatile("" : : "r"(&b) : "memory");
	return b;
}

__attribute__((noinline)) struct pair c_pair(long x)
{
	__asm__ volatile("");
	return (struct pair){ x, -x };
}

__attribute__((noinline)) struct dpair c_dpair(double x)
{
	__asm__ volatile("");
	return (struct dpair){ x / 2, x * 3 };
}

__attribute__((noinline)) long double c_ldbl(long double x)
{
	__asm__ volatile("");
	return x / 3;
}

__attribute__((noinline)) __int128 c_i128(long x)
{
	__asm__ volatile("");
	return (__int128)x << 70 | (unsigned long)x;
}

__attribute__((noinline)) long c_tail_to(long a, long b, long c, long d, long e, long f, long g, long h)
{
	__asm__ volatile("");
	return a ^ b ^ c ^ d ^ e ^ f ^ (g << 1) ^ (h << 2);
}

/* A sibling call with stack arguments: the callee's entry finds the
 * caller's hooked return in the slot. */
__attribute__((noinline)) long c_tail(long a, long b, long c, long d, long e, long f, long g, long h)
{
	__asm__ volatile("");
	return c_tail_to(a + 1, b, c, d, e, f, g, h);
}

__attribute__((noinline)) long c_rec(int depth, long a, long b, long c, long d, long e, long f, long g)
{
	__asm__ volatile("");
	if (!depth)
		return a + b + c + d + e + f + g;
	return 1 + c_rec(depth - 1, a, b, c, d, e, f, g + depth);
}

int main(void)
{
	long s = 0, p = 0;
	double ds = 0;
	long double ls = 0;
	unsigned long hi = 0, lo = 0;

	for (long r = 0; r < ROUNDS; r++) {
		s += c_stack(r, 1, 2, 3, 4, 5, 6, r * 7, r - 9);
		ds += c_fstack(r, 1, 2, 3, 4, 5, 6, 7, r * 0.5, r * 0.25);
		ds += c_varargs(10, r, 1.5, 2L, 2.5, 3L, 3.5, r, 4.5, 5L, r * 0.125);
		struct big b = c_big(r);
		for (int k = 0; k < 5; k++)
			s += b.v[k] * (k + 1);
		struct pair q = c_pair(r);
		p += q.a * 3 + q.b * 5;
		struct dpair dp = c_dpair((double)r);
		ds += dp.x + dp.y * 7;
		ls += c_ldbl((long double)r);
		__int128 w = c_i128(r);
		hi += (unsigned long)(w >> 64);
		lo += (unsigned long)w;
		s += c_tail(r, 2, 3, 4, 5, 6, r, 8);
		s += c_rec(3, r, 1, 2, 3, 4, 5, 6);
	}
	printf("s=%ld p=%ld ds=%.6f ls=%.6Lf hi=%lu lo=%lu\n", s, p, ds, ls, hi, lo);
	return 0;
}
