/* fentry_race LIB N DIR - loads N copies of LIB (each a new object, so
 * each is discovered and normalized afresh) while the copy's own threads
 * run through its sites; prints how many results were wrong in all. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int copy_file(const char *from, const char *to)
{
	struct stat st;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	int ok = in >= 0 && out >= 0 && !fstat(in, &st) && sendfile(out, in, NULL, (size_t)st.st_size) == st.st_size;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: fentry_race LIB N DIR\n");
		return 2;
	}
	int n = atoi(argv[2]);
	long wrong = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/libfr%d.so", argv[3], i);
		if (copy_file(argv[1], path)) {
			perror(path);
			return 1;
		}
		void *h = dlopen(path, RTLD_NOW);
		long (*stop)(void) = h ? (long (*)(void))dlsym(h, "fr_stop") : NULL;
		if (!stop) {
			fprintf(stderr, "%s: %s\n", path, dlerror());
			return 1;
		}
		/* The threads go on through the sites now normalized. */
		struct timespec d = { 0, 200 * 1000 };
		nanosleep(&d, NULL);
		wrong += stop();
		unlink(path);
	}
	printf("loads %d wrong %ld\n", n, wrong);
	return 0;
}
