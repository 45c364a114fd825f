/* bench_reloc_nop5 - bench_reloc_lib.c's body with a compiled NOP5
 * entry, for bench_reloc to measure beside the relocated one in the same
 * process.  An object of its own: an object a compiler prepared is traced
 * only as prepared (site_discover.c), so the relocated body must live in
 * one with no patchable entry at all. */
__attribute__((noinline, patchable_function_entry(5, 0))) long bench_count_nop5(long x)
{
	__asm__ volatile("");
	return x * 3 + 7;
}
