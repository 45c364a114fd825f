/* graph_switch.c - a function switched between the recorder's own path
 * and the shared path under load (tests/record/test_direct.sh): run under
 * needle record, it attaches a counting link of its own to sw_target and
 * detaches it again, 1000 times, while 4 threads call sw_target in
 * windows the main thread opens and closes (each window's calls are the
 * link's exact count of the workers' calls: 4 x WINDOW_CALLS entries and
 * exits), and a fifth
 * thread calls it all the time, across every switch.  The recorder must
 * see every call.  stdout: the windows' verdict; stderr: the fifth
 * thread's count (it varies from run to run). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "needle.h"

#define NOINLINE __attribute__((noinline))
#define WORKERS 4
#define SWITCHES 1000
#define WINDOW_CALLS 50

static volatile unsigned long sink;
static _Atomic unsigned long link_entries, link_exits;
static _Atomic int done;
/* The link counts the workers' calls only: those are the windows'. */
static __thread int is_worker;
static pthread_barrier_t open_window, close_window;

NOINLINE void sw_target(unsigned long v)
{
	sink += v;
}

static int count_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *user_data)
{
	(void)ctx, (void)cookie, (void)user_data;
	if (is_worker)
		atomic_fetch_add_explicit(&link_entries, 1, memory_order_relaxed);
	return 0;
}

static void count_exit(const struct needle_ctx *ctx, uint64_t cookie, void *user_data)
{
	(void)ctx, (void)cookie, (void)user_data;
	if (is_worker)
		atomic_fetch_add_explicit(&link_exits, 1, memory_order_relaxed);
}

/* Two windows per switch: one with the link attached, one without. */
NOINLINE void *sw_worker(void *arg)
{
	(void)arg;
	is_worker = 1;
	for (int w = 0; w < 2 * SWITCHES; w++) {
		pthread_barrier_wait(&open_window);
		for (unsigned long i = 0; i < WINDOW_CALLS; i++)
			sw_target(i);
		pthread_barrier_wait(&close_window);
	}
	return NULL;
}

NOINLINE void *sw_runner(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		sw_target(n);
		n++;
	}
	return (void *)n;
}

int main(void)
{
	int (*attach)(const struct needle_attach_opts *, struct needle_link **) =
		(int (*)(const struct needle_attach_opts *, struct needle_link **))dlsym(RTLD_DEFAULT, "needle_attach");
	int (*detach)(struct needle_link *) = (int (*)(struct needle_link *))dlsym(RTLD_DEFAULT, "needle_link_detach");
	pthread_t t[WORKERS], runner;
	int bad = 0;

	if (!attach || !detach) {
		printf("no libneedle in the process\n");
		return 2;
	}
	pthread_barrier_init(&open_window, NULL, WORKERS + 1);
	pthread_barrier_init(&close_window, NULL, WORKERS + 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, sw_worker, NULL);
	pthread_create(&runner, NULL, sw_runner, NULL);
	const char *pattern = "sw_target";
	for (int s = 0; s < SWITCHES; s++) {
		/* The recorder alone. */
		pthread_barrier_wait(&open_window);
		pthread_barrier_wait(&close_window);
		/* Shared with this link. */
		struct needle_attach_opts o = { .sz = sizeof(o), .patterns = &pattern, .pattern_cnt = 1,
						.entry = count_entry, .exit = count_exit };
		struct needle_link *link;
		int err = attach(&o, &link);
		if (err < 0) {
			printf("switch %d: attach: %d\n", s, err);
			bad++;
			break;
		}
		unsigned long e0 = atomic_load(&link_entries), x0 = atomic_load(&link_exits);
		pthread_barrier_wait(&open_window);
		pthread_barrier_wait(&close_window);
		unsigned long e = atomic_load(&link_entries) - e0, x = atomic_load(&link_exits) - x0;
		if (e != WORKERS * WINDOW_CALLS || x != WORKERS * WINDOW_CALLS) {
			if (bad < 5)
				printf("switch %d: the link counted %lu entries and %lu exits, not %d\n", s, e, x,
				       WORKERS * WINDOW_CALLS);
			bad++;
		}
		if ((err = detach(link)) < 0) {
			printf("switch %d: detach: %d\n", s, err);
			bad++;
			break;
		}
	}
	atomic_store(&done, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	void *n;
	pthread_join(runner, &n);
	printf("%d switches, %d windows miscounted\n", SWITCHES, bad);
	fprintf(stderr, "runner_calls %lu\n", (unsigned long)n);
	return bad != 0;
}
