/* switch_tracer - a call that is in flight while `needle ctl` switches
 * the tracer from function_graph to function and back.  outer() waits
 * (for the file named by argv[1]) with its entry recorded; the test
 * switches the tracer, then creates the file. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((noinline)) long leaf(long x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long outer(const char *go)
{
	struct stat st;
	long sum = leaf(1);
	while (stat(go, &st))
		usleep(2000);
	for (int i = 0; i < 10; i++)
		sum += leaf(i);
	return sum;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long sum = outer(argv[1]);
	for (int i = 0; i < 5; i++)
		sum += leaf(i);
	printf("%ld\n", sum);
	return 0;
}
