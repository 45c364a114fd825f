/* inject_driver PID LIB - loads LIB into the running process PID with
 * inject_library (src/cli/inject/inject.c) and prints how long threads were
 * held. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/inject/inject.h"

int main(int argc, char **argv)
{
	struct inject_result res;
	struct inject_request req = { 0 };
	char err[512];

	if (argc != 3)
		return 2;
	req.lib_path = argv[2];
	int r = inject_library(atoi(argv[1]), &req, &res, err, sizeof(err));
	if (r) {
		fprintf(stderr, "inject: %s\n", err);
		return 1;
	}
	printf("held_ns %llu borrowed_ns %llu tid %u passed_over %u\n", (unsigned long long)res.held_ns,
	       (unsigned long long)res.borrowed_ns, res.tid, res.passed_over);
	return 0;
}
