/* cpu_hop N - pins itself to CPU i % CPUS (the CPUs it may run on, in
 * order) before each of N calls of work(i), and prints the CPU each
 * call ran on: needle record -W cpu's notes must say the same. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int work(int i)
{
	__asm__ volatile("");
	return sched_getcpu() + i * 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, cpus[CPU_SETSIZE], cnt = 0;
	cpu_set_t allowed, one;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return 1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[cnt++] = c;
	for (int i = 0; i < n; i++) {
		CPU_ZERO(&one);
		CPU_SET(cpus[i % cnt], &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			return 1;
		printf("%d\n", work(i));
	}
	return 0;
}
