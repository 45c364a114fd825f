/* uvalues.c - values as uftrace shows them: a pointer to a traced
 * function, a NULL string, the C library's string functions (IFUNCs
 * whose implementations have no debug info); for -A PATTERN, -R PATTERN
 * and -T FUNC@arg1 (tests/record/test_uftrace_values.sh). */
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

NOINLINE int target(int x)
{
	return x + 1;
}

NOINLINE int apply(int (*fn)(int), int v)
{
	return fn(v);
}

NOINLINE const char *maybe(const char *s)
{
	return s;
}

int main(int argc, char **argv)
{
	/* Not constants the compiler could fold the string calls on. */
	char word[16];
	snprintf(word, sizeof(word), "%s", argc > 1 ? argv[1] : "needle");
	int a = apply(target, 2);
	const char *m = maybe(NULL);
	size_t n = strlen(word);
	int c = strcmp(word, "needle");
	printf("%d %s %zu %d\n", a, m ? m : "-", n, c);
	return 0;
}
