/* kernel_prog - what needle record --kernel must place inside the calls
 * that made it: k_syscalls makes exactly N getppid system calls (main's
 * thread 100, a second thread 50), k_sleep sleeps 30 ms in nanosleep,
 * k_touch touches each of 64 fresh pages of a mapping at a fixed address
 * (one minor fault each), k_fail opens a file that does not exist
 * (ENOENT).  Its output is the same traced or not.
 *
 * kernel_prog loop: both threads call k_syscalls(10) and k_sleep until
 * SIGTERM, for needle record -p. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGES 64
#define AT ((void *)0x200000000ul)

__attribute__((noinline)) long k_syscalls(int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += syscall(SYS_getppid) > 0;
	return s;
}

__attribute__((noinline)) void k_sleep(void)
{
	struct timespec d = { 0, 30 * 1000000L };
	nanosleep(&d, NULL);
}

__attribute__((noinline)) int k_touch(void)
{
	volatile char *p = mmap(AT, PAGES * 4096, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	for (int i = 0; i < PAGES; i++)
		p[i * 4096] = 1;
	munmap((void *)p, PAGES * 4096);
	return PAGES;
}

__attribute__((noinline)) int k_fail(void)
{
	int fd = open("/nonexistent-needle-test/x", O_RDONLY);
	return fd < 0 && errno == ENOENT;
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) void k_nap(void)
{
	struct timespec d = { 0, 2 * 1000000L };
	nanosleep(&d, NULL);
}

static void *looper(void *arg)
{
	long n = 0;
	(void)arg;
	while (!stop) {
		n += k_syscalls(10);
		k_nap();
	}
	return (void *)n;
}

static void *second(void *arg)
{
	(void)arg;
	return (void *)k_syscalls(50);
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *r;
	if (argc > 1 && !strcmp(argv[1], "loop")) {
		signal(SIGTERM, on_term);
		pthread_create(&t, NULL, looper, NULL);
		looper(NULL);
		pthread_join(t, &r);
		printf("looped\n");
		return 0;
	}
	long a = k_syscalls(100);
	k_sleep();
	int pages = k_touch();
	int failed = k_fail();
	pthread_create(&t, NULL, second, NULL);
	pthread_join(t, &r);
	printf("syscalls %ld + %ld, pages %d, ENOENT %d\n", a, (long)r, pages, failed);
	return 0;
}
