/* notrace_prog - a function built for tracing and one left out of it
 * (tests/record/test_sites_kind.sh). */
#include <stdio.h>

__attribute__((noinline)) int traced(int x)
{
	return x + 1;
}

/* patchable_function_entry(0): the compiler leaves it without an entry. */
__attribute__((noinline, patchable_function_entry(0, 0))) int left_out(int x)
{
	return traced(x) * 2;
}

int main(void)
{
	printf("%d\n", left_out(3));
	return 0;
}
