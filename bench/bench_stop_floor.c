/* bench_stop_floor.c - the floor under every hold of a stop: how long a
 * running thread takes to enter a signal handler after tgkill, with no
 * needle at all, on an idle machine and with the CPUs saturated by
 * busy threads (as a closed-loop load saturates them in the servers
 * bench).  Prints "key value" lines (microseconds).
 *
 * The target thread runs a busy loop (a server thread working); the
 * sender sleeps between samples and waits on a futex, so that it takes
 * no CPU from the target; the handler stores the time and wakes it. */
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint64_t entered_ns;
static _Atomic uint32_t entered_word;
static _Atomic int quit, spin_quit;
static pid_t target_tid;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&entered_ns, now_ns());
	atomic_fetch_add(&entered_word, 1);
	syscall(SYS_futex, &entered_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *target(void *arg)
{
	(void)arg;
	target_tid = (pid_t)syscall(SYS_gettid);
	volatile uint64_t x = 0;
	while (!atomic_load_explicit(&quit, memory_order_relaxed))
		x++;
	return NULL;
}

static void *spinner(void *arg)
{
	(void)arg;
	volatile uint64_t x = 0;
	while (!atomic_load_explicit(&spin_quit, memory_order_relaxed))
		x++;
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void run(const char *name, int spinners, int samples)
{
	pthread_t sp[64];
	uint64_t *lat = calloc((size_t)samples, sizeof(*lat));

	atomic_store(&spin_quit, 0);
	for (int i = 0; i < spinners && i < 64; i++)
		pthread_create(&sp[i], NULL, spinner, NULL);
	usleep(100000);
	for (int i = 0; i < samples; i++) {
		uint32_t w = atomic_load(&entered_word);
		uint64_t t0 = now_ns();
		syscall(SYS_tgkill, getpid(), target_tid, SIGUSR1);
		while (atomic_load(&entered_word) == w) {
			struct timespec to = { 1, 0 };
			syscall(SYS_futex, &entered_word, FUTEX_WAIT_PRIVATE, w, &to, NULL, 0);
		}
		lat[i] = atomic_load(&entered_ns) - t0;
		usleep(2000);
	}
	atomic_store(&spin_quit, 1);
	for (int i = 0; i < spinners && i < 64; i++)
		pthread_join(sp[i], NULL);
	qsort(lat, (size_t)samples, sizeof(*lat), cmp);
	printf("stop_floor_%s_us_p50 %.1f\n", name, lat[samples / 2] / 1e3);
	printf("stop_floor_%s_us_p99 %.1f\n", name, lat[samples * 99 / 100] / 1e3);
	printf("stop_floor_%s_us_max %.1f\n", name, lat[samples - 1] / 1e3);
	free(lat);
}

int main(int argc, char **argv)
{
	int samples = argc > 1 ? atoi(argv[1]) : 500;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t t;

	signal(SIGUSR1, on_signal);
	pthread_create(&t, NULL, target, NULL);
	while (!target_tid)
		usleep(1000);
	run("idle", 0, samples);
	/* Two busy threads per CPU: the run queues a closed-loop load makes. */
	run("loaded", (int)(cpus > 0 ? cpus : 2) * 2, samples);
	atomic_store(&quit, 1);
	pthread_join(t, NULL);
	return 0;
}
