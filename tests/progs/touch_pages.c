/* touch_pages.c - a function that maps N fresh pages (no MAP_POPULATE)
 * and writes a byte to each, for the readings of -T FUNC@read=page-fault
 * and read=proc/statm (tests/record/test_triggers.sh): N minor faults and
 * N pages more resident while it runs, inside touch; idle takes none. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static char *volatile keep;

NOINLINE void touch(long pages)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)(pages * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	for (long i = 0; i < pages; i++)
		p[i * page] = 1;
	keep = p; /* kept mapped: resident at the exit */
}

NOINLINE int idle(int x)
{
	return x + 1;
}

int main(int argc, char **argv)
{
	long pages = argc > 1 ? atol(argv[1]) : 1000;
	touch(pages);
	printf("%d\n", idle(41));
	return 0;
}
