/* test_dlclose - a traced object unloaded and loaded again, with links
 * attached across the dlclose or detached before it, while another thread
 * keeps calling traced functions of the executable.  Counts are exact in
 * every round; a link whose object is gone detaches without touching the
 * unmapped bytes; the object loaded again, or another one loaded where it
 * was, is discovered afresh. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "harness.h"
#include "needle.h"

struct counts {
	_Atomic long entries, exits;
};
static struct counts exe_counts, dl_counts;
static _Atomic int stop;

__attribute__((noinline)) long exe_fn(long x)
{
	__asm__ volatile("");
	return x + 1;
}

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	((struct counts *)data)->entries++;
	return 0;
}

static void on_exit_(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	((struct counts *)data)->exits++;
}

static _Atomic long exe_calls;

static void *caller(void *arg)
{
	long s = 0;
	(void)arg;
	while (!stop) {
		s += exe_fn(s) & 1;
		exe_calls++;
	}
	return NULL;
}

static struct needle_link *attach(const char *glob, struct counts *c)
{
	const char *pats[] = { glob };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = on_entry, .exit = on_exit_, .user_data = c };
	struct needle_link *l = NULL;
	return needle_attach(&o, &l) > 0 ? l : NULL;
}

int main(void)
{
	pthread_t t;
	struct needle_link *exe = attach("exe_fn", &exe_counts);
	int bad_counts = 0, bad_attach = 0, bad_destroy = 0, bad_value = 0;

	CHECK(exe != NULL, "the executable's function attached");
	pthread_create(&t, NULL, caller, NULL);
	for (int round = 0; round < 200; round++) {
		void *h = dlopen(round % 3 == 2 ? DL_LIB_B : DL_LIB, RTLD_NOW);
		if (!h) {
			printf("FAIL: dlopen: %s\n", dlerror());
			return 1;
		}
		int (*entry)(int) = (int (*)(int))dlsym(h, "dl_entry");
		dl_counts.entries = dl_counts.exits = 0;
		struct needle_link *l = attach("dl_*", &dl_counts);
		if (!l) {
			bad_attach++;
			dlclose(h);
			continue;
		}
		for (int i = 0; i < 100; i++)
			bad_value += entry(i) != (i + 7) * 2;
		bad_counts += dl_counts.entries != 200 || dl_counts.exits != 200;
		if (round % 3 == 2) {
			int (*pad)(int) = (int (*)(int))dlsym(h, "dl_pad");
			bad_value += !pad || pad(2) != 13;
		}
		/* Odd rounds: the link outlives its object. */
		if (round % 2 == 0 && needle_link_destroy(l))
			bad_destroy++;
		dlclose(h);
		if (round % 2 == 1 && needle_link_destroy(l))
			bad_destroy++;
	}
	long before_detach = exe_calls;
	(void)before_detach;
	stop = 1;
	pthread_join(t, NULL);
	needle_link_destroy(exe);
	CHECK_EQ(exe_counts.entries, exe_calls, "the executable's calls all counted through 200 unloads");
	CHECK_EQ(exe_counts.exits, exe_calls, "with their exits");
	CHECK_EQ(bad_counts, 0, "every round: 100 dl_entry and 100 dl_leaf calls, entries and exits");
	CHECK_EQ(bad_attach, 0, "200 rounds: the object loaded again is found and attached each time");
	CHECK_EQ(bad_value, 0, "every call returned its value");
	CHECK_EQ(bad_destroy, 0, "every link destroyed, whether its object was loaded or gone");
	return harness_exit();
}
