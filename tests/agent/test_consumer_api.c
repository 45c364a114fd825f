/* test_consumer_api - what a consumer gets beside its handlers, as the
 * recorder uses it: per-thread storage, per-call storage, thread-exit,
 * fork and context-switch callbacks, needle_link_update and
 * needle_link_set_handlers.  Exact counts throughout. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "harness.h"
#include "needle.h"

__attribute__((noinline)) long c_leaf(long x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long c_other(long x)
{
	__asm__ volatile("");
	return x + 2;
}

__attribute__((noinline)) long c_fib(long n)
{
	return n < 2 ? n : c_fib(n - 1) + c_fib(n - 2);
}

/* ---- per-thread storage and thread exit ---- */
struct per_thread {
	long calls;
	long magic;
};
static _Atomic long exit_sum, exit_seen, exit_bad;

static int count_in_thread(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	struct per_thread *pt = ctx->thread_data;
	(void)cookie;
	(void)data;
	if (!pt->magic)
		pt->magic = 0x5eed;
	pt->calls++;
	return NEEDLE_SKIP_EXIT;
}

static void thread_gone(void *thread_data, void *user_data)
{
	struct per_thread *pt = thread_data;
	(void)user_data;
	exit_sum += pt->calls;
	exit_seen++;
	exit_bad += pt->magic != 0x5eed;
}

static void *caller(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++)
		c_leaf(i);
	return NULL;
}

static void thread_storage(void)
{
	const char *pats[] = { "c_leaf" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = count_in_thread, .thread_data_size = sizeof(struct per_thread),
					 .thread_exit = thread_gone };
	struct needle_link *l;
	pthread_t t[4];

	CHECK_EQ(needle_attach(&o, &l), 1, "thread storage: attached");
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, caller, (void *)(1000 * (i + 1)));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(exit_seen, 4, "thread storage: four threads ended, each told once");
	CHECK_EQ(exit_sum, 1000 + 2000 + 3000 + 4000, "thread storage: each counted its own calls");
	CHECK_EQ(exit_bad, 0, "thread storage: zeroed before first use, kept between calls");
	/* A second round: the states are reused, the storage starts at zero. */
	exit_sum = exit_seen = 0;
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, caller, (void *)7);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(exit_sum, 28, "thread storage: a reused thread state starts with zeroed storage");
	CHECK_EQ(needle_link_destroy(l), 0, "thread storage: destroyed");
}

/* ---- per-call storage across recursion ---- */
static _Atomic long call_mismatch, call_exits, call_entries;

static int save_arg(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)cookie;
	(void)data;
	call_entries++;
	if (ctx->call_data) {
		long v[3] = { (long)needle_arg(ctx, 0), ~(long)needle_arg(ctx, 0), 42 };
		memcpy(ctx->call_data, v, sizeof(v));
	}
	return 0;
}

static void check_arg(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	long v[3];
	(void)cookie;
	(void)data;
	memcpy(v, ctx->call_data, sizeof(v));
	long n = v[0];
	long expect = n < 2 ? n : 0;
	call_exits++;
	call_mismatch += v[1] != ~n || v[2] != 42 || (n < 2 && (long)needle_retval(ctx) != expect);
}

static void call_storage(void)
{
	const char *pats[] = { "c_fib" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = save_arg, .exit = check_arg, .call_data_size = 24 };
	struct needle_link *l;

	CHECK_EQ(needle_attach(&o, &l), 1, "call storage: attached");
	CHECK_EQ(c_fib(15), 610, "call storage: fib(15) unchanged");
	/* The compiler turns part of the recursion into a loop: count the
	 * calls that remain. */
	CHECK(call_entries > 500, "call storage: %ld recursive calls traced", (long)call_entries);
	CHECK_EQ(call_exits, call_entries, "call storage: one exit per call");
	CHECK_EQ(call_mismatch, 0, "call storage: each exit reads what its own entry wrote");
	needle_link_destroy(l);
	o.call_data_size = 257;
	CHECK_EQ(needle_attach(&o, &l), -EINVAL, "call storage: more than 256 bytes refused");
}

/* ---- context switches ---- */
static _Atomic long switches, switch_with_data;
static ucontext_t main_uc, co_uc;

static void switched(const void *from, const void *to, void *thread_data, void *user_data)
{
	(void)from;
	(void)to;
	(void)user_data;
	switches++;
	switch_with_data += thread_data != NULL;
}

static void coroutine(void)
{
	for (int i = 0; i < 5; i++) {
		c_leaf(i);
		swapcontext(&co_uc, &main_uc);
	}
}

static void context_switches(void)
{
	static char stack[65536];
	const char *pats[] = { "c_leaf" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = count_in_thread, .thread_data_size = 16,
					 .context_switch = switched };
	struct needle_link *l;

	CHECK_EQ(needle_attach(&o, &l), 1, "context switch: attached");
	getcontext(&co_uc);
	co_uc.uc_stack.ss_sp = stack;
	co_uc.uc_stack.ss_size = sizeof(stack);
	co_uc.uc_link = &main_uc;
	makecontext(&co_uc, coroutine, 0);
	for (int i = 0; i < 5; i++)
		swapcontext(&main_uc, &co_uc);
	CHECK_EQ(switches, 10, "context switch: 10 swapcontext calls, 10 callbacks");
	CHECK_EQ(switch_with_data, 10, "context switch: each with the thread's storage");
	needle_link_destroy(l);
}

/* ---- fork ---- */
static _Atomic int forked_calls;

static void in_child(void *thread_data, void *user_data)
{
	struct per_thread *pt = thread_data;
	(void)user_data;
	forked_calls++;
	pt->magic = 0xc41d;
}

static void fork_callback(void)
{
	const char *pats[] = { "c_leaf" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = count_in_thread, .thread_data_size = sizeof(struct per_thread),
					 .thread_fork = in_child };
	struct needle_link *l;
	int status;

	CHECK_EQ(needle_attach(&o, &l), 1, "fork: attached");
	c_leaf(1); /* the storage is in use before the fork */
	fflush(stdout);
	pid_t pid = fork();
	if (!pid)
		_exit(forked_calls == 1 ? 0 : 1);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork: the child heard of the fork once");
	CHECK_EQ(forked_calls, 0, "fork: the parent did not");
	needle_link_destroy(l);
}

/* ---- needle_link_update and needle_link_set_handlers ---- */
static _Atomic long ent_a, ext_a, ent_b, ext_b;
static struct needle_link *swap_link;

static int entry_a(const struct needle_ctx *c, uint64_t *k, void *d)
{
	(void)c, (void)k, (void)d;
	ent_a++;
	return 0;
}
static void exit_a(const struct needle_ctx *c, uint64_t k, void *d)
{
	(void)c, (void)k, (void)d;
	ext_a++;
}
static int entry_b(const struct needle_ctx *c, uint64_t *k, void *d)
{
	(void)c, (void)k, (void)d;
	ent_b++;
	return 0;
}
static void exit_b(const struct needle_ctx *c, uint64_t k, void *d)
{
	(void)c, (void)k, (void)d;
	ext_b++;
}

__attribute__((noinline)) long c_swapper(long x)
{
	/* In the middle of a traced call (not in a handler): the call keeps
	 * the exit handler it was entered with. */
	needle_link_set_handlers(swap_link, entry_b, exit_b);
	return x + 3;
}

static void update_and_swap(void)
{
	const char *pats[] = { "c_leaf" }, *pats2[] = { "c_other", "c_swapper" }, *none[] = { "c_nothing" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = entry_a, .exit = exit_a };

	CHECK_EQ(needle_attach(&o, &swap_link), 1, "update: attached to c_leaf");
	c_leaf(1);
	c_other(1);
	CHECK(ent_a == 1 && ext_a == 1, "update: c_leaf counted, c_other not");
	struct needle_attach_opts u = { .sz = sizeof(u), .patterns = pats2, .pattern_cnt = 2 };
	CHECK_EQ(needle_link_update(swap_link, &u), 2, "update: now c_other and c_swapper");
	c_leaf(1);
	c_other(1);
	CHECK(ent_a == 2 && ext_a == 2, "update: c_other counted, c_leaf not");
	u.patterns = none;
	u.pattern_cnt = 1;
	CHECK_EQ(needle_link_update(swap_link, &u), -ENOENT, "update: a pattern matching nothing changes nothing");
	c_other(1);
	CHECK(ent_a == 3 && ext_a == 3, "update: still on c_other");
	CHECK_EQ(c_swapper(1), 4, "set_handlers: called from inside a traced call");
	CHECK(ent_a == 4 && ext_a == 4 && ext_b == 0, "set_handlers: the call in flight got its old exit");
	c_other(1);
	CHECK(ent_b == 1 && ext_b == 1 && ent_a == 4, "set_handlers: the next call runs the new pair");
	CHECK_EQ(needle_link_set_handlers(swap_link, NULL, NULL), -EINVAL, "set_handlers: no handler refused");
	needle_link_destroy(swap_link);
}

int main(void)
{
	thread_storage();
	call_storage();
	context_switches();
	fork_callback();
	update_and_swap();
	return harness_exit();
}
