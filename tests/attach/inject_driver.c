/* inject_driver PID LIB - loads LIB into the running process PID with
 * inject_dlopen (src/cli/inject.c) and prints how long the borrowed thread
 * was held. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/inject.h"

int main(int argc, char **argv)
{
	struct inject_result res;
	char err[512];

	if (argc != 3)
		return 2;
	int r = inject_dlopen(atoi(argv[1]), argv[2], &res, err, sizeof(err));
	if (r) {
		fprintf(stderr, "inject: %s\n", err);
		return 1;
	}
	printf("held_ns %llu\n", (unsigned long long)res.held_ns);
	return 0;
}
