/* Shared objects that test_dlclose loads and unloads again and again: the
 * same names at other offsets in the second one (DL_PAD), which the loader
 * maps where the first one was. */
#ifdef DL_PAD
__attribute__((noinline)) int dl_pad(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 5 + 3;
}
#endif

__attribute__((noinline)) int dl_leaf(int x)
{
	__asm__ volatile("");
	return x + 7;
}

__attribute__((noinline)) int dl_entry(int x)
{
	return dl_leaf(x) * 2;
}
