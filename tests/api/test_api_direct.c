/* test_api_direct - direct handlers (needle_attach_opts.direct_entry and
 * direct_exit) as needle.h describes them:
 *   - only both, and only beside an entry and an exit handler;
 *   - the direct entry reads the integer arguments from regs;
 *   - a function's arguments (six integer, eight double) and return
 *     values (rax:rdx, xmm0) reach it and its caller unchanged, though
 *     the direct handlers (direct_handlers.c) write junk into every
 *     register the ABI lets them;
 *   - exact counts: the thread's first call takes the full path (its
 *     thread data is claimed there), every other call the direct one,
 *     and a declined entry or exit runs the full handler instead, with
 *     the cookie of whichever entry took the call;
 *   - a second link on the function, or needle_link_set_handlers with
 *     another pair, sends calls to the full path; undoing either brings
 *     the direct path back;
 *   - four threads calling while a second link comes and goes 1,000 times:
 *     every call counted once by the first link, every result right;
 *   - a longjmp out of a traced call closes it with the full exit handler
 *     (NEEDLE_EXIT_UNWOUND); a traced call in a signal handler that
 *     interrupted one is counted like any other. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "abi_funcs.h"
#include "harness.h"
#include "needle.h"

int test_direct_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		      void *thread_data, uint64_t *cookie, void *user_data);
int test_direct_exit(const struct needle_func *func, uint64_t cookie, void *thread_data, void *user_data);
extern _Atomic uint64_t direct_entries, direct_exits, direct_exit_cookie_bad;
extern _Atomic uint64_t direct_last_args[6];
extern _Atomic uint32_t decline_entry_every, decline_exit_every;


static jmp_buf jump;

TRACED void d_jump(int x)
{
	if (x)
		longjmp(jump, 1);
}

static _Atomic uint64_t full_entries, full_exits, full_unwound, full_cookie_bad;

static int full_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)data;
	atomic_fetch_add(&full_entries, 1);
	*cookie = 0xf011;
	return 0;
}

static void full_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)data;
	if (cookie != 0xf011 && cookie != 0xd1ec7)
		atomic_fetch_add(&full_cookie_bad, 1);
	if (ctx->is_exit == NEEDLE_EXIT_UNWOUND)
		atomic_fetch_add(&full_unwound, 1);
	atomic_fetch_add(&full_exits, 1);
}

static _Atomic uint64_t other_calls;

static int other_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	atomic_fetch_add(&other_calls, 1);
	return 0;
}

static void other_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
}

static const char *const all_funcs[] = { "d_int", "d_fp", "d_pair", "d_fret", "d_jump" };

static int attach_main(const char *const *pats, size_t n, struct needle_link **link)
{
	struct needle_attach_opts o = {
		.sz = sizeof(o),
		.patterns = pats,
		.pattern_cnt = n,
		.entry = full_entry,
		.exit = full_exit,
		.thread_data_size = 32,
		.direct_entry = test_direct_entry,
		.direct_exit = test_direct_exit,
	};
	return needle_attach(&o, link);
}

static void reset(void)
{
	atomic_store(&direct_entries, 0);
	atomic_store(&direct_exits, 0);
	atomic_store(&full_entries, 0);
	atomic_store(&full_exits, 0);
	atomic_store(&full_unwound, 0);
	atomic_store(&other_calls, 0);
}

/* n calls of each, checked: the number of wrong results. */
static int call_all(long n, long seed)
{
	int bad = 0;
	for (long i = 0; i < n; i++) {
		uint64_t x = (uint64_t)(i + seed);
		bad += d_int(x, x + 1, x + 2, x + 3, x + 4, x + 5) != 40 * x + 3 + 10 + 21 + 44 + 65;
		double y = (double)x;
		bad += d_fp(y, y + 1, y + 2, y + 3, y + 4, y + 5, y + 6, y + 7) != 36 * y + 2 + 6 + 12 + 20 + 30 + 42 + 56;
		struct pair p = d_pair((long)x);
		bad += p.a != (long)x * 3 || p.b != (long)x - 7;
		bad += d_fret(y) != y * 0.5;
	}
	return bad;
}

static volatile int workers_stop;

static _Atomic uint64_t worker_calls;
static _Atomic int workers_started;

/* Calls until told to stop (so that every switch happens while all four
 * call); the number of wrong results. */
static void *worker(void *arg)
{
	long seed = (long)arg, bad = 0;
	uint64_t i = 0;
	atomic_fetch_add(&workers_started, 1);
	while (!workers_stop) {
		bad += d_int(i, (uint64_t)seed, 2, 3, 4, 5) != i + 3 * (uint64_t)seed + 10 + 21 + 44 + 65;
		i++;
	}
	atomic_fetch_add(&worker_calls, i);
	return (void *)bad;
}

static void on_usr1(int sig)
{
	(void)sig;
	call_all(1, 5);
}

TRACED long d_outer_signal(long x)
{
	raise(SIGUSR1);
	return x + 1;
}

int main(void)
{
	struct needle_link *link = NULL, *second = NULL;
	const long n = 1000;

	/* Options. */
	struct needle_attach_opts bad = { .sz = sizeof(bad), .patterns = all_funcs, .pattern_cnt = 1,
					  .entry = full_entry, .exit = full_exit, .direct_entry = test_direct_entry };
	bad.entry = NULL;
	CHECK_EQ(needle_attach(&bad, &link), -EINVAL, "a direct entry without an entry handler: -EINVAL");
	bad.entry = full_entry;
	bad.direct_entry = NULL;
	bad.direct_exit = test_direct_exit;
	CHECK_EQ(needle_attach(&bad, &link), -EINVAL, "a direct exit without a direct entry: -EINVAL");
	bad.direct_entry = test_direct_entry;
	bad.exit = NULL;
	CHECK_EQ(needle_attach(&bad, &link), -EINVAL, "a direct exit without an exit handler: -EINVAL");

	/* An entry-only link with a direct entry: calls counted, no frame. */
	bad.direct_exit = NULL;
	bad.thread_data_size = 32;
	CHECK_EQ(needle_attach(&bad, &link), 1, "an entry-only link with a direct entry alone");
	reset();
	for (long i = 0; i < n; i++)
		d_int(1, 2, 3, 4, 5, (uint64_t)i);
	CHECK_EQ(atomic_load(&direct_entries) + atomic_load(&full_entries), n, "entry only: every call counted once");
	CHECK_EQ(atomic_load(&direct_entries), n - 1, "entry only: direct but for the first call (its thread data claimed)");
	CHECK_EQ(atomic_load(&direct_exits) + atomic_load(&full_exits), 0, "entry only: no exit of any kind");
	/* The registers the direct entry reads (regs): the last call's
	 * arguments, six integers. */
	d_int(0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666);
	uint64_t seen_args = 0;
	for (int k = 0; k < 6; k++)
		seen_args += atomic_load(&direct_last_args[k]) == 0x1111u * (uint64_t)(k + 1);
	CHECK_EQ(seen_args, 6, "the direct entry reads the six integer arguments from regs");
	CHECK_EQ(needle_link_destroy(link), 0, "destroy the entry-only link");

	CHECK_EQ(attach_main(all_funcs, 5, &link), 5, "attach the five functions with direct handlers");
	reset();
	CHECK_EQ(call_all(n, 0), 0, "every argument and return value unchanged (integers, doubles, rax:rdx, xmm0)");
	CHECK_EQ(atomic_load(&full_entries), 1, "the thread's first call on the full path (it claims the thread data)");
	CHECK_EQ(atomic_load(&direct_entries), 4 * n - 1, "every other call on the direct one");
	CHECK_EQ(atomic_load(&direct_exits), 4 * n, "every return through the direct exit, the first call's too");
	CHECK_EQ(atomic_load(&full_exits), 0, "no full exit");
	CHECK_EQ(atomic_load(&direct_exit_cookie_bad) + atomic_load(&full_cookie_bad), 0,
		 "each exit got the cookie of the entry that took its call");

	/* Declines. */
	reset();
	atomic_store(&decline_entry_every, 3);
	atomic_store(&decline_exit_every, 5);
	CHECK_EQ(call_all(n, 7), 0, "with declines: results unchanged");
	CHECK_EQ(atomic_load(&full_entries), 4 * n / 3, "a declined entry runs the full entry handler (every 3rd)");
	CHECK_EQ(atomic_load(&direct_entries), 4 * n - 4 * n / 3, "the others the direct one");
	CHECK_EQ(atomic_load(&full_exits), 4 * n / 5, "a declined exit runs the full exit handler (every 5th)");
	CHECK_EQ(atomic_load(&direct_exits), 4 * n - 4 * n / 5, "the others the direct one");
	CHECK_EQ(atomic_load(&direct_exit_cookie_bad) + atomic_load(&full_cookie_bad), 0, "cookies follow their calls");
	atomic_store(&decline_entry_every, 0);
	atomic_store(&decline_exit_every, 0);

	/* A second link on d_int: the full path for both. */
	struct needle_attach_opts o2 = { .sz = sizeof(o2), .patterns = all_funcs, .pattern_cnt = 1,
					 .entry = other_entry, .exit = other_exit };
	CHECK_EQ(needle_attach(&o2, &second), 1, "a second link on d_int");
	reset();
	for (long i = 0; i < n; i++)
		d_int(1, 2, 3, 4, 5, (uint64_t)i);
	CHECK_EQ(atomic_load(&direct_entries), 0, "shared: no direct call");
	CHECK_EQ(atomic_load(&full_entries), n, "shared: the first link's full entry, every call");
	CHECK_EQ(atomic_load(&other_calls), n, "shared: the second link's, every call");
	CHECK_EQ(needle_link_destroy(second), 0, "the second link gone");
	reset();
	for (long i = 0; i < n; i++)
		d_int(1, 2, 3, 4, 5, (uint64_t)i);
	CHECK_EQ(atomic_load(&direct_entries), n, "alone again: every call direct");

	/* Other handlers: no direct path; the same pair back: direct again. */
	CHECK_EQ(needle_link_set_handlers(link, other_entry, other_exit), 0, "set other handlers");
	reset();
	for (long i = 0; i < n; i++)
		d_int(1, 2, 3, 4, 5, (uint64_t)i);
	CHECK(atomic_load(&direct_entries) == 0 && atomic_load(&other_calls) == (uint64_t)n,
	      "other handlers: every call to them, none direct");
	CHECK_EQ(needle_link_set_handlers(link, full_entry, full_exit), 0, "the first pair back");
	reset();
	for (long i = 0; i < n; i++)
		d_int(1, 2, 3, 4, 5, (uint64_t)i);
	CHECK_EQ(atomic_load(&direct_entries), n, "the pair the direct handlers came with: direct again");

	/* Threads while a second link comes and goes. */
	reset();
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	while (atomic_load(&workers_started) < 4)
		;
	int cycles_ok = 1;
	for (int i = 0; i < 1000; i++) {
		cycles_ok &= needle_attach(&o2, &second) == 1;
		cycles_ok &= needle_link_destroy(second) == 0;
	}
	workers_stop = 1;
	long wrong = 0;
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		wrong += (long)r;
	}
	CHECK(cycles_ok, "1,000 attach/destroy cycles of a second link while 4 threads call");
	CHECK_EQ(wrong, 0, "every result right");
	CHECK_EQ(atomic_load(&direct_entries) + atomic_load(&full_entries), atomic_load(&worker_calls),
		 "every call counted once by the first link, direct or not (%llu calls)",
		 (unsigned long long)atomic_load(&worker_calls));
	CHECK_EQ(atomic_load(&direct_exits) + atomic_load(&full_exits), atomic_load(&worker_calls),
		 "and its return once");
	CHECK(atomic_load(&direct_entries) > 0 && atomic_load(&full_entries) > 4,
	      "both paths took calls while the second link came and went (%llu direct, %llu full)",
	      (unsigned long long)atomic_load(&direct_entries), (unsigned long long)atomic_load(&full_entries));

	/* longjmp out of a traced call. */
	reset();
	if (!setjmp(jump))
		d_jump(1);
	d_jump(0);
	CHECK_EQ(atomic_load(&full_unwound), 1, "a call left by longjmp: the full exit handler, unwound");
	CHECK_EQ(atomic_load(&direct_exits), 1, "the next call's return, direct");

	/* A signal handler's traced calls inside a traced call. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	const char *outer[] = { "d_outer_signal" };
	struct needle_link *outer_link = NULL;
	CHECK_EQ(attach_main(outer, 1, &outer_link), 1, "attach d_outer_signal");
	reset();
	CHECK_EQ(d_outer_signal(41), 42, "d_outer_signal returns its value");
	CHECK_EQ(atomic_load(&direct_entries) + atomic_load(&full_entries), 5, "it and the handler's 4 calls entered");
	CHECK_EQ(atomic_load(&direct_exits) + atomic_load(&full_exits), 5, "and returned");
	CHECK_EQ(needle_link_destroy(outer_link), 0, "destroy");
	CHECK_EQ(needle_link_destroy(link), 0, "destroy the first link");
	return harness_exit();
}
