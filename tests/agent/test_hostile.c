/* test_hostile - programs that do what a well-behaved program would not,
 * through the C API: each case once killed or confused the traced
 * process, and must now leave it whole with exact counts.
 *
 *   raw_mask      a thread blocks SIGTRAP with a raw rt_sigprocmask
 *   handler_mask  a thread sits in a handler whose sa_mask blocks SIGTRAP
 *   sa_view       the program reads back the sa_mask it gave
 *   altstack      a handler on an alternate stack above the thread's stack
 *   pool_full     a full thread-state pool refuses each thread once
 *   destroy       needle_link_destroy from inside a handler keeps the link
 *   no_dlsym      interposed async-signal-safe functions never call dlsym
 *   shstk         with CET shadow stacks, exit handlers are refused */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31) /* linux/signal.h; not in glibc 2.36 headers */
#endif
#include "needle.h"

__attribute__((noinline)) long hostile_fn(long x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long hostile_leaf(long x)
{
	__asm__ volatile("");
	return x * 2;
}

static _Atomic long entries, exits, unwound;

static int count_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	entries++;
	return 0;
}

static void count_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)cookie;
	(void)data;
	exits++;
	if (ctx->is_exit == NEEDLE_EXIT_UNWOUND)
		unwound++;
}

static struct needle_link *attach(const char *pattern, int with_exit)
{
	const char *pats[] = { pattern };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = count_entry, .exit = with_exit ? count_exit : NULL };
	struct needle_link *link = NULL;
	int r = needle_attach(&o, &link);
	return r > 0 ? link : NULL;
}

static int quiet(enum needle_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

/* raw_mask and handler_mask: a worker calls hostile_fn without pause while
 * the main thread runs patch batches; then, in a known window, exactly
 * 1000 calls are counted. */
static _Atomic int phase, ready;
static _Atomic long wrong;

static void spin_calls(void)
{
	for (long i = 0; atomic_load(&phase) == 0; i++)
		if (hostile_fn(i) != i + 1)
			wrong++;
	ready = 2;
	while (atomic_load(&phase) == 1)
		;
	for (long i = 0; i < 1000; i++)
		if (hostile_fn(i) != i + 1)
			wrong++;
	ready = 3;
}

static void *raw_mask_worker(void *arg)
{
	uint64_t set = 1ull << (SIGTRAP - 1);
	(void)arg;
	/* Not through the C library: no interposition sees this. */
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, sizeof(set));
	ready = 1;
	spin_calls();
	return NULL;
}

static void handler_spinning(int sig)
{
	(void)sig;
	ready = 1;
	spin_calls();
}

static void *handler_mask_worker(void *arg)
{
	struct sigaction act;
	(void)arg;
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler_spinning;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, SIGTRAP);
	sigaction(SIGUSR1, &act, NULL);
	pthread_kill(pthread_self(), SIGUSR1);
	return NULL;
}

static void run_batches_against(const char *name, void *(*worker)(void *))
{
	pthread_t t;

	phase = 0;
	ready = 0;
	wrong = 0;
	pthread_create(&t, NULL, worker, NULL);
	while (!ready)
		;
	int batches = 0;
	for (int i = 0; i < 30; i++) {
		struct needle_link *l = attach("hostile_fn", 1);
		if (!l)
			break;
		needle_link_destroy(l);
		batches++;
	}
	CHECK_EQ(batches, 30, "%s: 30 attach/detach batches while the worker runs", name);
	phase = 1;
	while (ready != 2)
		;
	entries = exits = 0;
	struct needle_link *l = attach("hostile_fn", 1);
	phase = 2;
	while (ready != 3)
		;
	needle_link_destroy(l);
	pthread_join(t, NULL);
	CHECK_EQ(entries, 1000, "%s: the worker's 1000 calls counted at entry", name);
	CHECK_EQ(exits, 1000, "%s: and at exit", name);
	CHECK_EQ(wrong, 0, "%s: every call returned its value", name);
}

/* sa_view: the program sees its own sa_mask; the kernel holds one without
 * SIGTRAP and with needle's stop signal (rt_sigaction read raw). */
static void sa_view(void)
{
	struct sigaction act, back;
	uint64_t kernel[4] = { 0 }; /* handler, flags, restorer, mask */

	memset(&act, 0, sizeof(act));
	act.sa_handler = handler_spinning;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, SIGTRAP);
	sigaddset(&act.sa_mask, SIGUSR2);
	sigaction(SIGURG, &act, NULL);
	sigaction(SIGURG, NULL, &back);
	CHECK(sigismember(&back.sa_mask, SIGTRAP) == 1 && sigismember(&back.sa_mask, SIGUSR2) == 1 &&
		      sigismember(&back.sa_mask, SIGRTMAX - 2) == 0,
	      "sa_view: sigaction reads back the mask the program gave");
	syscall(SYS_rt_sigaction, SIGURG, NULL, kernel, 8);
	CHECK(!(kernel[3] & (1ull << (SIGTRAP - 1))), "sa_view: the kernel's mask leaves SIGTRAP out");
	CHECK(kernel[3] & (1ull << (SIGRTMAX - 2 - 1)), "sa_view: the kernel's mask holds the stop signal");
	CHECK(kernel[3] & (1ull << (SIGUSR2 - 1)), "sa_view: the program's other signals stay masked");
	signal(SIGURG, SIG_DFL);
}

/* longjmp_mask: a handler left with longjmp (no mask restored) must not
 * leave the thread with needle's stop signal blocked. */
static jmp_buf out_of_handler;

static void jumping_handler(int sig)
{
	(void)sig;
	longjmp(out_of_handler, 1);
}

static void longjmp_mask(void)
{
	struct sigaction act;
	sigset_t before, after;

	memset(&act, 0, sizeof(act));
	act.sa_handler = jumping_handler;
	sigemptyset(&act.sa_mask);
	sigaction(SIGUSR2, &act, NULL);
	pthread_sigmask(SIG_BLOCK, NULL, &before);
	if (!setjmp(out_of_handler))
		raise(SIGUSR2);
	pthread_sigmask(SIG_BLOCK, NULL, &after);
	CHECK(sigismember(&after, SIGRTMAX - 2) == sigismember(&before, SIGRTMAX - 2),
	      "longjmp_mask: leaving a handler by longjmp leaves the stop signal as it was");
	/* SIGUSR2 itself stays blocked, as it would untraced (plain longjmp). */
	CHECK(sigismember(&after, SIGUSR2) == 1, "longjmp_mask: the program's own mask is what longjmp leaves");
	sigprocmask(SIG_UNBLOCK, &after, NULL);
	signal(SIGUSR2, SIG_DFL);
}

/* altstack: the handler's stack is mapped above the thread's stack, so
 * the handler's traced calls have stack pointers above the interrupted
 * call's frame; that frame must not be taken for one a longjmp skipped. */
static uint8_t *alt_mem;

static void alt_handler(int sig)
{
	(void)sig;
	for (int i = 0; i < 10; i++)
		hostile_leaf(i);
}

__attribute__((noinline)) long alt_outer(long x)
{
	pthread_kill(pthread_self(), SIGUSR2);
	return hostile_leaf(x) + 1;
}

static void *alt_thread(void *arg)
{
	stack_t ss = { .ss_sp = alt_mem, .ss_size = 1 << 16, .ss_flags = (int)(intptr_t)arg };

	sigaltstack(&ss, NULL);
	char here;
	CHECK((uintptr_t)alt_mem > (uintptr_t)&here, "altstack: the alternate stack lies above the thread's stack");
	wrong += alt_outer(5) != 11;
	return NULL;
}

static void altstack(void)
{
	struct sigaction act;
	pthread_t t;
	pthread_attr_t attr;

	/* The stack mapped last lies lowest (mmap grows down): the alternate
	 * stack first, the thread's own stack after it. */
	alt_mem = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *stack = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, 1 << 20);
	memset(&act, 0, sizeof(act));
	act.sa_handler = alt_handler;
	act.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &act, NULL);
	struct needle_link *l = attach("hostile_leaf", 1);
	const char *pats[] = { "alt_outer" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = count_entry, .exit = count_exit };
	struct needle_link *l2 = NULL;
	needle_attach(&o, &l2);
	for (int autodisarm = 0; autodisarm < 2; autodisarm++) {
		const char *how = autodisarm ? "altstack with SS_AUTODISARM" : "altstack";
		entries = exits = unwound = wrong = 0;
		pthread_create(&t, &attr, alt_thread, (void *)(intptr_t)(autodisarm ? SS_AUTODISARM : 0));
		pthread_join(t, NULL);
		CHECK_EQ(wrong, 0, "%s: alt_outer returned its value", how);
		CHECK_EQ(entries, 12, "%s: 12 entries (alt_outer, 10 in the handler, one after)", how);
		CHECK_EQ(exits, 12, "%s: 12 exits", how);
		CHECK_EQ(unwound, 0, "%s: no call taken for unwound", how);
	}
	needle_link_destroy(l);
	needle_link_destroy(l2);
}

/* destroy: from inside its own handler, destroy cannot wait for itself. */
static struct needle_link *self_link;
static _Atomic int destroy_result = 1;

static int destroying_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	if (destroy_result == 1)
		destroy_result = needle_link_destroy(self_link);
	return NEEDLE_SKIP_EXIT;
}

static void destroy_in_handler(void)
{
	const char *pats[] = { "hostile_leaf" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = destroying_entry };
	CHECK(needle_attach(&o, &self_link) == 1, "destroy: attached");
	hostile_leaf(1);
	CHECK_EQ(destroy_result, -EDEADLK, "destroy: from its own handler, -EDEADLK");
	CHECK_EQ(needle_link_site_count(self_link), 1, "destroy: the link is still there");
	CHECK_EQ(needle_link_destroy(self_link), 0, "destroy: destroyed later from outside");
}

/* pool_full: NEEDLE_MAX_THREADS=64 (set by main before the agent starts);
 * 100 threads alive at once, each makes 11 traced calls. */
static pthread_barrier_t all_alive;

static void *pool_thread(void *arg)
{
	(void)arg;
	hostile_leaf(1);
	pthread_barrier_wait(&all_alive);
	for (int i = 0; i < 10; i++)
		hostile_leaf(i);
	pthread_barrier_wait(&all_alive);
	return NULL;
}

static void *sync_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&phase))
		needle_sync();
	return NULL;
}

static void pool_full(void)
{
	pthread_t t[100], syncer;
	struct needle_stats before = { .sz = sizeof(before) }, after = { .sz = sizeof(after) };

	needle_get_stats(&before);
	struct needle_link *l = attach("hostile_leaf", 1);
	entries = exits = 0;
	phase = 0;
	pthread_create(&syncer, NULL, sync_loop, NULL);
	pthread_barrier_init(&all_alive, NULL, 101);
	for (int i = 0; i < 100; i++)
		pthread_create(&t[i], NULL, pool_thread, NULL);
	pthread_barrier_wait(&all_alive);
	pthread_barrier_wait(&all_alive);
	for (int i = 0; i < 100; i++)
		pthread_join(t[i], NULL);
	phase = 1;
	pthread_join(syncer, NULL);
	needle_link_destroy(l);
	needle_get_stats(&after);
	/* Only the 100 workers make traced calls: 64 get a state. */
	CHECK_EQ(after.threads_refused - before.threads_refused, 100 - 64,
		 "pool_full: each thread without a state is counted once");
	CHECK_EQ(entries, 64 * 11, "pool_full: the 64 threads with a state traced exactly");
	CHECK_EQ(exits, 64 * 11, "pool_full: with their exits");
}

/* no_dlsym: the executable's dlsym comes first in the lookup scope, so it
 * sees every dlsym libneedle makes. */
static _Atomic int dlsym_calls;

void *dlsym(void *handle, const char *name)
{
	static void *(*real)(void *, const char *);
	dlsym_calls++;
	if (!real)
		real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!real)
		real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	return real(handle, name);
}

static void no_dlsym(void)
{
	sigset_t set, old;
	struct sigaction act;

	needle_site_count(); /* the agent is up */
	dlsym_calls = 0;
	sigemptyset(&set);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigaction(SIGUSR1, NULL, &act);
	signal(SIGWINCH, SIG_DFL);
	CHECK_EQ(dlsym_calls, 0, "no_dlsym: signal-safe interposed functions resolved before use");
}

static void shstk(void)
{
	/* Run by the test script as a separate process with
	 * NEEDLE_ASSUME_SHSTK=1: exit handlers must be refused. */
	const char *pats[] = { "hostile_leaf" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = 1,
					 .entry = count_entry, .exit = count_exit };
	struct needle_link *l = NULL;
	entries = exits = 0;
	CHECK_EQ(needle_attach(&o, &l), -EOPNOTSUPP, "shstk: an exit handler is refused");
	o.exit = NULL;
	CHECK_EQ(needle_attach(&o, &l), 1, "shstk: an entry handler is accepted");
	hostile_leaf(3);
	CHECK_EQ(entries, 1, "shstk: and runs");
	needle_link_destroy(l);
}

int main(int argc, char **argv)
{
	needle_set_print(quiet);
	if (argc > 1 && !strcmp(argv[1], "pool")) {
		pool_full();
		return harness_exit();
	}
	if (argc > 1 && !strcmp(argv[1], "shstk")) {
		shstk();
		return harness_exit();
	}
	if (argc == 1) {
		/* The pool and shadow-stack cases need a fresh agent with their
		 * environment: run them as child processes. */
		char *pool_env[] = { "NEEDLE_MAX_THREADS=64", NULL };
		char *shstk_env[] = { "NEEDLE_ASSUME_SHSTK=1", NULL };
		char *const pool_argv[] = { argv[0], "pool", NULL }, *const shstk_argv[] = { argv[0], "shstk", NULL };
		no_dlsym();
		fflush(stdout);
		for (int i = 0; i < 2; i++) {
			pid_t pid = fork();
			if (!pid) {
				execve("/proc/self/exe", i ? shstk_argv : pool_argv, i ? shstk_env : pool_env);
				_exit(127);
			}
			int status;
			waitpid(pid, &status, 0);
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s case exited cleanly",
			      i ? "shstk" : "pool");
		}
	}
	run_batches_against("raw_mask", raw_mask_worker);
	run_batches_against("handler_mask", handler_mask_worker);
	sa_view();
	longjmp_mask();
	altstack();
	destroy_in_handler();
	return harness_exit();
}
