/* main NAME N - dlopen NAME the way the program's own
 * object asks for it (found through its DT_RPATH, DT_RUNPATH or $ORIGIN,
 * which a dlopen made from any other object would not search), then call
 * its plug_fn N times.  Prints the sum, so the output shows every call. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*fn)(int) = (int (*)(int))dlsym(h, "plug_fn");
	if (!fn)
		return 1;
	long sum = 0;
	for (int i = 0, n = atoi(argv[2]); i < n; i++)
		sum += fn(i);
	printf("sum %ld\n", sum);
	return 0;
}
