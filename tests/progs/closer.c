/* closer - closes every descriptor from 3 up, as daemons do at start, then
 * prints "closed pid=PID" and waits for its stdin to reach end of file,
 * calling a() once per line it reads. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) int a(int x)
{
	__asm__ volatile("");
	return x + 1;
}

int main(void)
{
	char line[256];
	long max = sysconf(_SC_OPEN_MAX);
	int s = 0;

	for (long fd = 3; fd < max && fd < 65536; fd++)
		close((int)fd);
	printf("closed pid=%d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		s = a(s);
	printf("lines %d\n", s);
	return 0;
}
