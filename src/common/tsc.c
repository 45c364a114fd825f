/* tsc.c - decides whether the TSC can be the event clock (see tsc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tsc.h"

int tsc_usable(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[4096];
	int constant = 0, nonstop = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop && !getenv("NEEDLE_NO_TSC");
}
