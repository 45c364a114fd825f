/* datasym - pointers to globals and static variables as arguments, for
 * the views' &name (test_uftrace_values.sh): the program's own, one into
 * the middle of an array (no name: a number), and the C library's
 * stdout. */
#include <stdio.h>

static int counter;
int table[4];

__attribute__((noinline)) void touch(int *p, int v)
{
	*p += v;
}

__attribute__((noinline)) int stream(FILE *f)
{
	return f == stdout;
}

int main(void)
{
	touch(&counter, 1);
	touch(&table[0], 2);
	touch(&table[1], 3);
	return stream(stdout) && counter + table[0] + table[1] == 6 ? 0 : 1;
}
