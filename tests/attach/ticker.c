/* ticker N [exec|retitle] - four threads compute while the main thread
 * prints N lines, one every 2 ms, then the threads' sums: the same output
 * whether or not a library is loaded into it meanwhile.  With "exec", it
 * then becomes sleep 1 instead of exiting; with "retitle", it first
 * rewrites its command line in place as servers do (redis, postgres):
 * "ticker: retitled", the rest of its arguments' bytes NULs. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

static _Atomic int done;

__attribute__((noinline)) long tick_work(long x)
{
	__asm__ volatile("");
	return x * 7 + 1;
}

static void *worker(void *arg)
{
	long s = 0;
	for (long i = 0; !done; i++)
		s += tick_work(i) & 1;
	*(long *)arg = s > 0;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 500;
	pthread_t t[4];
	long ok[4];

	if (argc > 2 && !strcmp(argv[2], "retitle")) {
		char *end = argv[argc - 1] + strlen(argv[argc - 1]);
		memset(argv[0], 0, (size_t)(end - argv[0]));
		strcpy(argv[0], "ticker: retitled"); /* fits: "/.../ticker N retitle" is longer */
	}

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, &ok[i]);
	for (int i = 0; i < n; i++) {
		struct timespec d = { 0, 2 * 1000 * 1000 };
		printf("tick %d %ld\n", i, tick_work(i));
		fflush(stdout);
		nanosleep(&d, NULL);
	}
	done = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("workers %ld %ld %ld %ld\n", ok[0], ok[1], ok[2], ok[3]);
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "exec"))
		execl("/bin/sleep", "sleep", "1", (char *)NULL);
	return 0;
}
