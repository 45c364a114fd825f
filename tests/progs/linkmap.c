/* linkmap - for each line read on stdin, prints the file name of every
 * object in the process's link map, one per line, then "--"; exits at
 * the end of its input.  Shows what a tracer brings into a process. */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>

static int print_object(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = info->dlpi_name, *base = strrchr(name, '/');

	(void)size;
	(void)data;
	if (*name)
		printf("%s\n", base ? base + 1 : name);
	return 0;
}

int main(void)
{
	char line[64];

	while (fgets(line, sizeof(line), stdin)) {
		dl_iterate_phdr(print_object, NULL);
		printf("--\n");
		fflush(stdout);
	}
	return 0;
}
