/* fault_api - a program that uses the C API while allocations fail
 * (fault_shim.c): attach to a glob with entry and exit handlers, call the
 * functions from four threads, switch handlers, detach.  Whatever the
 * API returns, the program's own output is the same. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "needle.h"

__attribute__((noinline)) long f_leaf(long x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long f_mid(long x)
{
	return f_leaf(x) * 2;
}

static _Atomic long entries, exits;

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	entries++;
	return 0;
}

static void on_exit_(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	exits++;
}

static void *worker(void *arg)
{
	long s = 0;
	for (long i = 0; i < 20000; i++)
		s += f_mid(i);
	*(long *)arg = s;
	return NULL;
}

int main(void)
{
	const char *pats[] = { "f_*" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = on_entry, .exit = on_exit_ };
	struct needle_link *link = NULL;
	int attached = needle_attach(&o, &link);
	pthread_t t[4];
	long sums[4], total = 0;

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, &sums[i]);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		total += sums[i];
	}
	int detached = attached > 0 ? needle_link_destroy(link) : 0;
	printf("total %ld\n", total);
	/* What the API did goes to stderr: it varies with the fault. */
	fprintf(stderr, "attach %d destroy %d entries %ld exits %ld\n", attached, detached, (long)entries,
		(long)exits);
	if (attached > 0 && !detached && entries != exits)
		return 3; /* every entry seen by a working link has its exit */
	return 0;
}
