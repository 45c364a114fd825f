/* The function bench_floor calls, alone in its file so that only it gets
 * the compiler's hooks (as bench_loop's bench_small, and as noinline). */
__attribute__((noinline)) long floor_small(long x)
{
	__asm__ volatile("");
	return x + 1;
}
