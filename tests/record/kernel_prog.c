/* kernel_prog - what needle record --kernel must place inside the calls
 * that made it (tests/record/test_kernel.sh):
 *   k_syscalls   exactly N getpid system calls (main's thread 100, a
 *                second thread 50)
 *   k_sleep      sleeps 10 ms in nanosleep (off the CPU, S)
 *   k_lock       blocks on a mutex k_hold's thread holds for 5 ms (woken
 *                by that thread)
 *   k_pipe       reads a pipe that k_fill's thread fills 5 ms after main
 *                says it is about to read (so that the read waits 5 ms
 *                however late main is scheduled after k_lock)
 *   k_touch      touches each of 1,000 fresh pages of a mapping at a
 *                fixed address (one minor fault each)
 *   k_fail       opens a file that does not exist (ENOENT)
 *   k_rename     renames the main thread "k-renamed" (prctl), last
 *   k_name_self  the second thread names itself "k-second"
 *                (pthread_setname_np), first
 * Its output is the same traced or not.
 *
 * kernel_prog loop: both threads call k_syscalls(10) and k_nap until
 * SIGTERM, for needle record -p.  kernel_prog spin: two threads each
 * spin 300 ms in k_busy (on one CPU, with taskset: preempted by each
 * other). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGES 1000
#define AT ((void *)0x200000000ul)

static void nap_ms(long ms)
{
	struct timespec d = { 0, ms * 1000000L };
	nanosleep(&d, NULL);
}

__attribute__((noinline)) long k_syscalls(int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += syscall(SYS_getpid) > 0;
	return s;
}

__attribute__((noinline)) void k_sleep(void)
{
	nap_ms(10);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int held[2], pipefd[2], ready[2];

/* Holds the lock 5 ms, once main is about to take it. */
__attribute__((noinline)) void k_hold(void)
{
	char c = 1;
	pthread_mutex_lock(&lock);
	if (write(held[1], &c, 1) != 1)
		return;
	nap_ms(5);
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void k_lock(void)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void k_fill(void)
{
	char c;
	if (read(ready[0], &c, 1) != 1)
		return;
	nap_ms(5);
	if (write(pipefd[1], "x", 1) != 1)
		return;
}

__attribute__((noinline)) int k_pipe(void)
{
	char c;
	return (int)read(pipefd[0], &c, 1);
}

static void *holder(void *arg)
{
	(void)arg;
	k_hold();
	k_fill();
	return NULL;
}

__attribute__((noinline)) int k_touch(void)
{
	volatile char *p = mmap(AT, PAGES * 4096L, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	/* One fault per page: no huge page under it (THP could map 512 at
	 * once). */
	madvise((void *)p, PAGES * 4096L, MADV_NOHUGEPAGE);
	for (int i = 0; i < PAGES; i++)
		p[i * 4096L] = 1;
	munmap((void *)p, PAGES * 4096L);
	return PAGES;
}

__attribute__((noinline)) int k_fail(void)
{
	int fd = open("/nonexistent-needle-test/x", O_RDONLY);
	return fd < 0 && errno == ENOENT;
}

__attribute__((noinline)) int k_rename(void)
{
	return prctl(PR_SET_NAME, "k-renamed", 0, 0, 0) == 0;
}

__attribute__((noinline)) int k_name_self(void)
{
	return pthread_setname_np(pthread_self(), "k-second") == 0;
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) void k_nap(void)
{
	nap_ms(2);
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

__attribute__((noinline)) long k_busy(void)
{
	struct timespec t0, t;
	long n = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			__asm__ volatile("" : "+r"(n));
		n++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 300000000L);
	return n;
}

static void *spinner(void *arg)
{
	(void)arg;
	return (void *)k_busy();
}

static void *second(void *arg)
{
	(void)arg;
	k_name_self();
	return (void *)k_syscalls(50);
}

int main(int argc, char **argv)
{
	pthread_t t, h;
	void *r;
	if (argc > 1 && !strcmp(argv[1], "loop")) {
		signal(SIGTERM, on_term);
		pthread_create(&t, NULL, looper, NULL);
		looper(NULL);
		pthread_join(t, &r);
		printf("looped\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "spin")) {
		pthread_create(&t, NULL, spinner, NULL);
		long a = k_busy();
		pthread_join(t, &r);
		printf("spun %d\n", a > 0 && (long)r > 0);
		return 0;
	}
	if (pipe(held) || pipe(pipefd) || pipe(ready))
		return 1;
	long a = k_syscalls(100);
	k_sleep();
	pthread_create(&h, NULL, holder, NULL);
	char c;
	if (read(held[0], &c, 1) != 1)
		return 1;
	k_lock();
	if (write(ready[1], &c, 1) != 1)
		return 1;
	int got = k_pipe();
	pthread_join(h, NULL);
	int pages = k_touch();
	int failed = k_fail();
	pthread_create(&t, NULL, second, NULL);
	pthread_join(t, &r);
	int renamed = k_rename();
	printf("syscalls %ld + %ld, pages %d, pipe %d, ENOENT %d, renamed %d\n", a, (long)r, pages, got, failed,
	       renamed);
	return 0;
}
