/* The object dlopen_search_main loads: found only by its search path. */
__attribute__((noinline)) int plug_fn(int i)
{
	__asm__ volatile("");
	return i * 2 + 1;
}
