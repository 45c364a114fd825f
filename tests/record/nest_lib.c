/* nest_lib - a library built without patchable entries (its functions
 * are relocated) that calls its own exported function through its PLT,
 * and a static one directly: --nest-libcall shows the first as a library
 * call, as uftrace does, and not the second (tests/record/test_libname.sh). */
/* Each long enough to be relocated (five bytes of movable instructions
 * before anything else). */
static volatile int sink;

__attribute__((noinline)) int nl_inner(int x)
{
	sink = x;
	return x * 3 + 1;
}

__attribute__((noinline)) static int nl_helper(int x)
{
	sink = x + 1;
	return x + 7;
}

/* Its calls lie past its first instructions, which relocation moves. */
int nl_outer(int x)
{
	sink = x;
	sink = x + 2;
	return nl_inner(x) + nl_helper(x);
}
