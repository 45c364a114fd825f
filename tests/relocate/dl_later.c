/* dl_later - loads a library built without tracing flags after it has
 * started (dlopen), calls it, unloads it and loads it again: the
 * library's functions become relocated sites when it appears, and again
 * at its second load.  Prints how many calls it made. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	static const int rounds[2] = { 1000, 500 };
	long sum = 0, calls = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: dl_later LIB\n");
		return 2;
	}
	for (int load = 0; load < 2; load++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		int (*mix)(int) = h ? (int (*)(int))dlsym(h, "later_mix") : NULL;
		if (!mix) {
			fprintf(stderr, "dl_later: %s\n", dlerror());
			return 1;
		}
		for (int i = 0; i < rounds[load]; i++, calls++)
			sum += mix(i);
		dlclose(h);
	}
	printf("later_mix %ld sum %ld\n", calls, sum);
	return 0;
}
