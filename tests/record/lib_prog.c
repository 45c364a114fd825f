/* lib_prog - calls into a library with DWARF of its own (auto_lib.c) and
 * into the C library (described by libc6-dbg's debug file), and prints
 * each call as replay --auto-args should show it.
 *
 *   lib_prog           the calls, once each
 *   lib_prog serve F   sleep 1 ms (usleep) until the file F exists (-p) */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct span { long lo, hi; };
long al_width(struct span s, int scale);
int al_count(const char *s, char c);
long al_pick(long a, long b);
int al_hash(const char *s);

int main(int argc, char **argv)
{
	if (argc == 3) {
		while (access(argv[2], F_OK)) {
			int r = usleep(1000);
			printf("usleep(useconds=1000) = %d;\n", r);
			fflush(stdout);
		}
		return 0;
	}
	long w = al_width((struct span){ 3, 10 }, 2);
	printf("al_width(s.lo=3, s.hi=10, scale=2) = %ld;\n", w);
	int n = al_count("needle", 'e');
	printf("al_count(s=\"needle\", c='e') = %d;\n", n);
	long p = al_pick(6, 7);
	int h = al_hash("xy");
	fprintf(stderr, "al_pick %ld, al_hash %d\n", p, h);
	long a = strtol("42", NULL, 10);
	printf("strtol(nptr=\"42\", endptr=0x0, base=10) = %ld;\n", a);
	char *e = getenv("NEEDLE_NO_SUCH_VARIABLE");
	printf("getenv(name=\"NEEDLE_NO_SUCH_VARIABLE\") = %s;\n", e ? e : "NULL");
	return 0;
}
