/* dwarf_fixture.c - functions of chosen signatures whose DWARF
 * test_dwarf_params (and test_arg_specs) read back: built with -g at
 * -O0 and at -O2.  Every function uses every parameter, so that -O2
 * keeps a location for each (a parameter without one is not shown), and
 * main takes every function's address, so that none is dropped, inlined
 * away or cloned under another name. */
#include <stdbool.h>

#if __has_attribute(noclone)
#define KEEP __attribute__((noinline, noclone, used))
#else
#define KEEP __attribute__((noinline, used))
#endif

volatile long sink;

enum mode { M_READ = 1, M_WRITE = 2, M_BOTH = 3 };
struct pt { int x, y; };
struct fpt { float x, y; };
struct two_longs { long a, b; };
struct long_dbl { long l; double d; };
struct dbl_dbl { double a, b; };
struct big { long a, b, c; };
struct chars { char c[3]; };
struct bits { unsigned lo : 3, hi : 5; int n; };
union num { int i; float f; };

KEEP int f_ints(int a, long b, unsigned short c, char d, bool e, signed char g)
{
	sink = a + b + c + d + e + g;
	return (int)sink;
}

/* Integers past the sixth: the stack words above the return address. */
KEEP long f_stack(long a1, long a2, long a3, long a4, long a5, long a6, long a7, int a8)
{
	sink = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8;
	return sink;
}

KEEP double f_fp(double x, float y, int i, double z)
{
	sink = (long)(x + y + z) + i;
	return x * y + z + i;
}

/* The ninth double goes to the stack. */
KEEP double f_nine(double d1, double d2, double d3, double d4, double d5, double d6, double d7, double d8,
		   double d9)
{
	return d1 + d2 + d3 + d4 + d5 + d6 + d7 + d8 + d9;
}

KEEP const char *f_str(const char *s, char *t, unsigned char *u, void *p, int *ip)
{
	sink = (long)s + (long)t + (long)u + (long)p + (long)ip;
	return s;
}

KEEP int f_pt(struct pt p, int k)
{
	sink = p.x + p.y + k;
	return (int)sink;
}

KEEP struct pt f_mkpt(int x, int y)
{
	struct pt p = { x, y };
	sink = x;
	return p;
}

KEEP float f_fpt(struct fpt v, union num u)
{
	sink = u.i;
	return v.x + v.y;
}

KEEP struct two_longs f_ret_ll(long a)
{
	struct two_longs r = { a, a + 1 };
	return r;
}

KEEP struct long_dbl f_ret_ld(long a)
{
	struct long_dbl r = { a, (double)a };
	return r;
}

KEEP struct dbl_dbl f_ret_dd(double a)
{
	struct dbl_dbl r = { a, a * 2 };
	return r;
}

/* A struct of more than 16 bytes: in memory, between two integers in
 * registers. */
KEEP long f_big(int i, struct big b, int j)
{
	sink = i + b.a + b.b + b.c + j;
	return sink;
}

/* Returned in memory: the caller's address for it takes rdi. */
KEEP struct big f_ret_big(int i)
{
	struct big b = { i, i, i };
	sink = i;
	return b;
}

/* Five registers taken, a two-register struct does not fit in the
 * sixth: it goes to the stack, and the long after it takes r9. */
KEEP long f_nofit(long a, long b, long c, long d, long e, struct two_longs s, long g)
{
	sink = a + b + c + d + e + s.a + s.b + g;
	return sink;
}

KEEP void f_void(void)
{
	sink = 1;
}

KEEP int f_var(int n, ...)
{
	sink = n;
	return n;
}

KEEP int f_enum(enum mode m, bool on)
{
	sink = m + on;
	return (int)sink;
}

KEEP bool f_bool(int v)
{
	sink = v;
	return v > 0;
}

/* An array's elements and a bit-field's neighbour. */
KEEP int f_agg(struct chars c, struct bits b)
{
	sink = c.c[0] + c.c[1] + c.c[2] + b.lo + b.hi + b.n;
	return (int)sink;
}

/* A long double goes to memory and is not shown; the int after it still
 * takes rdi. */
KEEP long double f_ldbl(long double x, int i)
{
	sink = i;
	return x + i;
}

/* __int128 takes two registers and is not shown. */
KEEP int f_i128(int a, __int128 v, int b)
{
	sink = a + (long)v + b;
	return (int)sink;
}

/* More than 16 values: the first 16 shown, the rest cut ("..."). */
KEEP long f_many(long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8, long a9, long a10,
		 long a11, long a12, long a13, long a14, long a15, long a16, long a17)
{
	sink = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16 + a17;
	return sink;
}

/* Another calling convention: its registers are not the System V ABI's
 * (rcx, rdx for the first two integers). */
KEEP __attribute__((ms_abi)) long f_msabi(long a, long b)
{
	sink = a - b;
	return sink;
}

/* A 32-byte vector (AVX's __m256d): a type this reader does not place;
 * nothing after it is known. */
typedef double v4d __attribute__((vector_size(32)));
KEEP int f_vec(int a, v4d v, int b)
{
	sink = a + (long)v[0] + b;
	return (int)sink;
}

/* Over-aligned: its stack words are not placed, nor those after it;
 * registers still are. */
struct __attribute__((aligned(32))) wide { long x; };
KEEP int f_wide(struct wide w, int b, struct big after)
{
	sink = w.x + b + after.a;
	return (int)sink;
}

/* Static functions of one name in two files (dwarf_fixture2.c): one
 * that agrees with its namesake, one that does not. */
static KEEP int f_same(int a)
{
	sink = a;
	return a;
}

static KEEP int f_dup(int a, int b)
{
	sink = a + b;
	return a;
}

/* Another name for one function: described under both. */
KEEP int f_target(int v)
{
	sink = v;
	return v;
}
extern int f_alias(int v) __attribute__((alias("f_target")));

/* Defined without a prototype: every caller promotes a float to double. */
KEEP int f_knr(x, n)
	float x;
	int n;
{
	sink = (long)x + n;
	return n;
}

/* An empty struct (a GNU C extension: no register, no value) and a
 * packed one, whose long sits across two stack words. */
struct empty {};
struct __attribute__((packed)) pk { char m; long n; short k; };
KEEP int f_empty(int a, struct empty e, int b)
{
	sink = a + b + (long)sizeof(e);
	return a;
}

KEEP int f_packed(struct pk p, int k)
{
	sink = p.m + p.n + p.k + k;
	return k;
}

typedef int (*fn_t)(int);
KEEP long f_fnptr(fn_t fn, struct pt *pp)
{
	sink = (long)fn + (long)pp;
	return sink;
}

void *volatile keep_them[] = {
	f_ints, f_stack, f_fp, f_nine, f_str, f_pt, f_mkpt, f_fpt, f_ret_ll, f_ret_ld, f_ret_dd, f_big,
	f_ret_big, f_nofit, f_void, f_var, f_enum, f_bool, f_agg, f_ldbl, f_i128, f_many, f_fnptr,
	f_msabi, f_vec, f_wide, f_same, f_dup, f_target, f_knr, f_empty, f_packed,
};

int main(void)
{
	return keep_them[0] == 0;
}
