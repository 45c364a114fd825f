/* test_sigtrap_blocked - a thread that blocks SIGTRAP would be killed by an
 * in-flight int3.  needle must notice: patch with threads stopped instead
 * (the thread still calls the function, counts exact), or, if the thread
 * blocks every signal, refuse with -EDEADLK and leave the process whole. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "harness.h"
#include "needle.h"

__attribute__((noinline)) long busy_fn(long x)
{
	__asm__ volatile("");
	return x + 1;
}

static _Atomic int phase; /* 0: block SIGTRAP, 1: block all, 2: stop */
static _Atomic int ready;
static _Atomic long calls, wrong;
static _Atomic long entries;

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	entries++;
	return 0;
}

static void *worker(void *arg)
{
	sigset_t set;
	(void)arg;

	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	ready = 1;
	while (atomic_load(&phase) == 0) {
		if (busy_fn(calls) != calls + 1)
			wrong++;
		calls++;
	}
	sigfillset(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	ready = 2;
	while (atomic_load(&phase) == 1)
		if (busy_fn(1) != 2)
			wrong++;
	return NULL;
}

static int quiet(enum needle_print_level level, const char *fmt, va_list ap)
{
	static char last[512];
	(void)level;
	vsnprintf(last, sizeof(last), fmt, ap);
	if (strstr(last, "blocks SIGTRAP"))
		printf("INFO: message was: %s", last);
	return 0;
}

int main(void)
{
	pthread_t t;
	struct needle_link *link = NULL;
	const char *pat[] = { "busy_fn" };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = pat, .pattern_cnt = 1, .entry = on_entry,
	};

	pthread_create(&t, NULL, worker, NULL);
	while (ready != 1)
		;
	CHECK_EQ(needle_attach(&opts, &link), 1, "attach while a thread blocks SIGTRAP (threads stopped instead)");
	long before = calls;
	while (calls < before + 100000)
		;
	CHECK_EQ(needle_link_detach(link), 0, "detach while a thread blocks SIGTRAP");
	needle_link_destroy(link);
	CHECK(entries >= 100000, "calls of the SIGTRAP-blocking thread were traced (%ld)", (long)entries);

	phase = 1;
	while (ready != 2)
		;
	needle_print_fn old = needle_set_print(quiet);
	link = NULL;
	CHECK_EQ(needle_attach(&opts, &link), -EDEADLK, "refused when a thread blocks every signal");
	needle_set_print(old);
	CHECK(link == NULL, "no link returned on failure");
	struct needle_site_info info = { .sz = sizeof(info) };
	needle_site_info((uint32_t)needle_site_find("busy_fn"), &info);
	CHECK(!memcmp((void *)info.addr, info.off_bytes, 5), "site untouched after refusal");
	phase = 2;
	pthread_join(t, NULL);
	CHECK_EQ(wrong, 0, "the blocking thread's calls returned correct results");
	return harness_exit();
}
