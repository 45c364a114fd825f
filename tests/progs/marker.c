/* marker FILE - creates FILE: shows whether a program ran at all. */
#include <stdio.h>

__attribute__((noinline)) int touch(const char *path)
{
	FILE *f = fopen(path, "w");
	return f ? fclose(f) : 1;
}

int main(int argc, char **argv)
{
	return argc > 1 ? touch(argv[1]) : 2;
}
