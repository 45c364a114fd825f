/* auto_lib - a shared library built with -g whose functions lib_prog
 * calls: --auto-args reads this library's own DWARF for them. */
struct span { long lo, hi; };

__attribute__((noinline)) long al_width(struct span s, int scale)
{
	__asm__ volatile("");
	return (s.hi - s.lo) * scale;
}

__attribute__((noinline)) int al_count(const char *s, char c)
{
	int n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

/* An IFUNC: the target the resolver picks is named al_pick by needle;
 * auto_lib2.c has a static al_pick of another signature. */
static long al_pick_impl(long a, long b)
{
	long r = 0;
	for (long i = 0; i < b; i++)
		r += a ^ i;
	return r;
}

static long (*al_pick_resolver(void))(long, long)
{
	return al_pick_impl;
}

long al_pick(long a, long b) __attribute__((ifunc("al_pick_resolver")));
