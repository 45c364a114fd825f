/* auto_lib2 - in the same library as auto_lib.c: a static function named
 * as an IFUNC of auto_lib.c is, whose target needle names after the
 * IFUNC.  Each must get its own description, or none. */
__attribute__((noinline, noclone)) static int al_pick(const char *s, int k)
{
	int h = k;
	while (*s)
		h = h * 33 + *s++;
	return h;
}

int al_hash(const char *s)
{
	return al_pick(s, 5) + 1;
}
