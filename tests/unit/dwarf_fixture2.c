/* dwarf_fixture2.c - the second file of the DWARF fixture
 * (dwarf_fixture.c): static functions of the same names as two of its,
 * one of the same signature, one of another. */
#if __has_attribute(noclone)
#define KEEP __attribute__((noinline, noclone, used))
#else
#define KEEP __attribute__((noinline, used))
#endif

extern volatile long sink;

static KEEP int f_same(int a)
{
	sink = a;
	return a;
}

static KEEP int f_dup(long x)
{
	sink = x;
	return 0;
}

void *volatile keep_them2[] = { f_same, f_dup };
