/* bench_reloc_lib - the body bench_patch counts (bench_count_target), in an
 * object built without patchable entries, for bench_reloc. */
__attribute__((noinline)) long bench_count_target(long x)
{
	__asm__ volatile("");
	return x * 3 + 7; /* the body bench_patch counts */
}
