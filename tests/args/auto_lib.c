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
