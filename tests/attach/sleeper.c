/* sleeper MODE - one thread sleeping in a system call the kernel restarts
 * through its restart block (nanosleep, poll with a timeout): needle
 * record -p borrows exactly this thread.  Prints the call's result: it
 * must succeed, never fail with EINTR. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	int r;

	if (argc > 1 && !strcmp(argv[1], "poll")) {
		r = poll(NULL, 0, 2000);
		printf("poll %d %s\n", r, r < 0 ? strerror(errno) : "ok");
	} else {
		struct timespec t = { 2, 0 };
		r = nanosleep(&t, NULL);
		printf("nanosleep %d %s\n", r, r < 0 ? strerror(errno) : "ok");
	}
	return r < 0;
}
