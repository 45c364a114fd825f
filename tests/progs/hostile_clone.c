/* hostile_clone - a thread made with a raw clone(2) and no CLONE_SETTLS:
 * it shares its creator's TLS.  Both call traced functions at the same
 * time; the output is the same traced or not. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) long parent_work(long x)
{
	__asm__ volatile("");
	return x + 3;
}

__attribute__((noinline)) long child_work(long x)
{
	__asm__ volatile("");
	return x * 3;
}

static _Atomic long child_sum;
static _Atomic int go;
static volatile pid_t child_tid = 1;

static int child(void *arg)
{
	long sum = 0;
	(void)arg;
	while (!atomic_load(&go))
		;
	for (long i = 0; i < 200000; i++)
		sum += child_work(i);
	child_sum = sum;
	/* No C library on the way out: its TLS is the parent's. */
	syscall(SYS_exit, 0);
	return 0;
}

int main(void)
{
	size_t size = 1 << 20;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long sum = parent_work(0); /* the parent's state exists before the clone */

	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		    CLONE_CHILD_CLEARTID;
	if (clone(child, stack + size, flags, NULL, NULL, NULL, &child_tid) < 0) {
		perror("clone");
		return 1;
	}
	go = 1;
	for (long i = 0; i < 100000; i++)
		sum += parent_work(i);
	/* CLONE_CHILD_CLEARTID: the kernel zeroes child_tid and wakes us. */
	while (child_tid)
		syscall(SYS_futex, &child_tid, FUTEX_WAIT, child_tid, NULL, NULL, 0);
	printf("parent %ld child %ld\n", sum, (long)child_sum);
	return 0;
}
