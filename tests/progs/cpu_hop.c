/* cpu_hop N [stay|fork] - pins itself to CPU i % CPUS (the CPUs it may
 * run on, in order) before each of N calls of work(i), and prints the CPU
 * each call ran on: needle record -W cpu's notes must say the same.
 * stay: pinned once, to the first, for all N calls (prints the CPU once).
 * fork: pinned to the first, calls work(0), then forks; the child calls
 * work(0) once and prints its CPU, the parent waits for it. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int work(int i)
{
	__asm__ volatile("");
	return sched_getcpu() + i * 0;
}

static int pin(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, cpus[CPU_SETSIZE], cnt = 0;
	const char *mode = argc > 2 ? argv[2] : "";
	cpu_set_t allowed;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return 1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[cnt++] = c;
	if (!strcmp(mode, "stay") || !strcmp(mode, "fork")) {
		if (pin(cpus[0]))
			return 1;
		if (!strcmp(mode, "fork")) {
			/* The parent's note first: the child would inherit it. */
			if (work(0) < 0)
				return 1;
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				printf("%d\n", work(0));
				return 0;
			}
			int st;
			return pid < 0 || waitpid(pid, &st, 0) != pid || st ? 1 : 0;
		}
		long s = 0;
		for (int i = 0; i < n; i++)
			s += work(i);
		printf("%ld\n", s / n);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (pin(cpus[i % cnt]))
			return 1;
		printf("%d\n", work(i));
	}
	return 0;
}
