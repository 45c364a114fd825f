/* reloc_ifunc.c - an IFUNC in the relocation test object: reloc_pick is
 * resolved to one of two implementations, and the one that runs must be
 * traced under the IFUNC's name.  Built without patchable entries.  The
 * implementations write to memory first, so that their entries are long
 * enough to relocate. */
static volatile int seen;

static int pick_a(int x)
{
	seen = x;
	return x + 100;
}

static int pick_b(int x)
{
	seen = x;
	return x + 200;
}

static int (*resolve_pick(void))(int)
{
	return seen < 0 ? pick_b : pick_a;
}

int reloc_pick(int x) __attribute__((ifunc("resolve_pick")));
