/* test_api_handlers - handlers where docs/api.md says they run, written
 * the way it says they must be (atomic counters, results read once the
 * link is destroyed):
 *   - the argument registers by name, as regs.args[] and with needle_arg;
 *   - the example handlers of docs/api.md, on calls that return, a thread
 *     that ends with pthread_exit inside a traced call (NEEDLE_EXIT_UNWOUND)
 *     and a traced call from a thread_local destructor (registered the way
 *     C++ registers them, with __cxa_thread_atexit_impl);
 *   - a traced call from a signal handler, and in a forked child;
 *   - needle_link_detach from a handler: -EDEADLK, the link detached;
 *   - needle.h compiles as C99, C++11 and (clang) C11 with -pedantic. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "needle.h"

int header_c99_regs_ok(void);
int header_cxx_regs_ok(void);
int header_clang_regs_ok(void);

/* noipa: no clone with a suffixed name, no argument dropped. */
#define TRACED __attribute__((noipa))

TRACED uint64_t args_six(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f)
{
	return a + b + c + d + e + f;
}

TRACED uint64_t work_step(uint64_t x)
{
	return x * 2;
}

TRACED void work_exit_thread(uint64_t x)
{
	pthread_exit((void *)(uintptr_t)x);
}

TRACED int probe_in_signal(int x)
{
	return x + 1;
}

TRACED int probe_in_child(int x)
{
	return x + 2;
}

TRACED int probe_detach(int x)
{
	return x + 3;
}

/* Registers, seen three ways. */
static uint64_t by_args[6], by_name[6], by_accessor[7];

static int regs_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	const struct needle_regs *r = &ctx->regs;
	uint64_t named[6] = { r->rdi, r->rsi, r->rdx, r->rcx, r->r8, r->r9 };

	(void)cookie;
	(void)data;
	for (int i = 0; i < 6; i++) {
		by_args[i] = r->args[i];
		by_name[i] = named[i];
	}
	for (unsigned i = 0; i < 7; i++)
		by_accessor[i] = needle_arg(ctx, i);
	return NEEDLE_SKIP_EXIT;
}

/* docs/api.md's example handlers, as printed there. */
struct totals {                            /* shared by every thread's handlers */
	_Atomic uint64_t calls, unwound, arg_sum;
};

static int on_call(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)data;
	*cookie = needle_arg(ctx, 0);      /* first argument (rdi), for the exit */
	return 0;                          /* or NEEDLE_SKIP_EXIT */
}

static void on_return(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	struct totals *t = data;           /* no printf here: see "Where handlers run" */

	if (ctx->is_exit == NEEDLE_EXIT_UNWOUND) {
		atomic_fetch_add_explicit(&t->unwound, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&t->calls, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->arg_sum, cookie, memory_order_relaxed);
}

/* Probes: where a handler ran. */
static volatile sig_atomic_t in_signal_handler;
static _Atomic int seen_in_signal, seen_outside_signal, seen_in_child;
static struct needle_link *detach_link;
static _Atomic int detach_result = 1, detach_calls;

static int probe_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)cookie;
	(void)data;
	if (ctx->func->ip == (uint64_t)(uintptr_t)probe_in_signal)
		atomic_fetch_add(in_signal_handler ? &seen_in_signal : &seen_outside_signal, 1);
	else if (ctx->func->ip == (uint64_t)(uintptr_t)probe_in_child)
		atomic_fetch_add(&seen_in_child, 1);
	return NEEDLE_SKIP_EXIT;
}

static int detach_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	atomic_fetch_add(&detach_calls, 1);
	atomic_store(&detach_result, needle_link_detach(detach_link));
	return NEEDLE_SKIP_EXIT;
}

static void on_usr1(int sig)
{
	(void)sig;
	in_signal_handler = 1;
	probe_in_signal(1);
	in_signal_handler = 0;
}

int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso_symbol);
extern void *__dso_handle;

static void tls_destructor(void *p)
{
	work_step((uint64_t)(uintptr_t)p);
}

static void *exiting_thread(void *arg)
{
	(void)arg;
	__cxa_thread_atexit_impl(tls_destructor, (void *)(uintptr_t)1000, &__dso_handle);
	work_exit_thread(5);
	return NULL;
}

static int attach(const char *pattern, needle_entry_fn entry, needle_exit_fn exit, void *data,
		  struct needle_link **link)
{
	const char *patterns[] = { pattern };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = patterns, .pattern_cnt = 1,
		.entry = entry, .exit = exit, .user_data = data,
	};
	return needle_attach(&opts, link);
}

int main(void)
{
	struct needle_link *regs_link, *doc_link, *probe_link;
	static struct totals totals;

	CHECK(header_c99_regs_ok(), "needle.h as C99: args[] and the named registers alias");
	CHECK(header_cxx_regs_ok(), "needle.h as C++11: same layout");
	CHECK(header_clang_regs_ok(), "needle.h as C11 under clang: same layout");

	/* Argument registers. */
	CHECK_EQ(attach("args_six", regs_entry, NULL, NULL, &regs_link), 1, "attach args_six");
	CHECK_EQ(args_six(11, 22, 33, 44, 55, 66), 231, "args_six runs");
	int same = 1;
	for (int i = 0; i < 6; i++)
		same &= by_args[i] == (uint64_t)(11 * (i + 1)) && by_name[i] == by_args[i] && by_accessor[i] == by_args[i];
	CHECK(same, "regs.args[i], regs.rdi..r9 and needle_arg(ctx, i) agree: 11 22 33 44 55 66");
	CHECK_EQ(by_accessor[6], 0, "needle_arg(ctx, 6) is 0");
	CHECK_EQ(needle_link_destroy(regs_link), 0, "destroy");

	/* The example handlers: returns, pthread_exit, a TLS destructor. */
	CHECK_EQ(attach("work_*", on_call, on_return, &totals, &doc_link), 2, "attach the example to work_*");
	uint64_t sum = 0;
	for (uint64_t i = 1; i <= 100; i++)
		sum += work_step(i);
	CHECK_EQ(sum, 10100, "work_step runs");
	pthread_t t;
	void *ret = NULL;
	CHECK(pthread_create(&t, NULL, exiting_thread, NULL) == 0 && pthread_join(t, &ret) == 0 && ret == (void *)5,
	      "a thread ends with pthread_exit inside work_exit_thread");
	CHECK_EQ(needle_link_destroy(doc_link), 0, "destroy: no handler runs any more");
	work_step(1);
	CHECK_EQ(totals.calls, 101, "exit handler ran once per return: 100 calls and the TLS destructor's");
	CHECK_EQ(totals.arg_sum, 5050 + 1000, "cookies carried the first arguments to the exit handlers");
	CHECK_EQ(totals.unwound, 1, "the call pthread_exit left got NEEDLE_EXIT_UNWOUND");

	/* A signal handler, a forked child. */
	CHECK_EQ(attach("probe_in_*", probe_entry, NULL, NULL, &probe_link), 2, "attach probe_in_*");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	probe_in_signal(2);
	CHECK(seen_in_signal == 1 && seen_outside_signal == 1,
	      "a traced call from a signal handler runs its handler there (%d in, %d outside)",
	      (int)seen_in_signal, (int)seen_outside_signal);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		probe_in_child(1);
		_exit(seen_in_child == 1 ? 0 : 1);
	}
	int status = -1;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a forked child runs the handler");
	CHECK_EQ(seen_in_child, 0, "in the child's memory, not the parent's");
	CHECK_EQ(needle_link_destroy(probe_link), 0, "destroy");

	/* Detach from a handler. */
	CHECK_EQ(attach("probe_detach", detach_entry, NULL, NULL, &detach_link), 1, "attach probe_detach");
	probe_detach(1);
	CHECK_EQ(detach_result, -EDEADLK, "needle_link_detach from a handler returns -EDEADLK");
	probe_detach(2);
	CHECK_EQ(detach_calls, 1, "the link was detached all the same");
	CHECK_EQ(needle_link_destroy(detach_link), 0, "needle_link_destroy afterwards frees it");
	return harness_exit();
}
