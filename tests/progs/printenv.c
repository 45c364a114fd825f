/* printenv - prints its environment, sorted by the caller. */
#include <stdio.h>

extern char **environ;

__attribute__((noinline)) static void show(const char *s)
{
	puts(s);
}

int main(void)
{
	for (char **e = environ; *e; e++)
		show(*e);
	return 0;
}
