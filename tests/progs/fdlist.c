/* fdlist - prints, at the start of main, the descriptors the process has
 * open (besides the one it reads /proc/self/fd through), in increasing
 * order on one line: what a program finds when it starts. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int main(void)
{
	int fds[4096], n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return 1;
	while ((e = readdir(d)) && n < 4096) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd != dirfd(d))
			fds[n++] = fd;
	}
	closedir(d);
	qsort(fds, (size_t)n, sizeof(int), cmp);
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? " " : "", fds[i]);
	putchar('\n');
	return 0;
}
