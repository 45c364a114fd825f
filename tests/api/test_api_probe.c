/* test_api_probe - entry-only links (NEEDLE_ATTACH_ENTRY_ONLY) as needle.h
 * describes them:
 *   - only a direct entry, with no other handler, thread or call data;
 *   - every call runs it exactly once, on the probe path where the link
 *     is alone on a function (the C paths take a site's first calls
 *     only), on the full path where it shares one; its return value is
 *     ignored (the handler returns NEEDLE_DIRECT_DECLINE, and no call is
 *     counted twice);
 *   - it gets the function, the six integer arguments, the return
 *     address into the caller, user_data, no thread data;
 *   - a function's arguments (six integer, eight double, and rax and r10,
 *     which a C function cannot read: an assembly function gives them
 *     back) and return values reach it and its caller unchanged, though
 *     the handler writes junk into every register the ABI lets it; regs
 *     is 16-byte aligned;
 *   - needle_link_set_handlers to a ctx handler and back with (NULL, NULL);
 *   - where it is alone, a function's entry jumps to the site's probe
 *     stub (16 bytes past its calling stub: the probe path, no calling
 *     trampoline); with a ctx handler, or shared, to the calling stub;
 *   - four threads calling while a second link comes and goes 500
 *     times (1000 retargets of the site): every call counted once by
 *     the entry-only link, and after each detach the second's handler
 *     never again;
 *   - four threads calling while the link's handlers switch 600 times
 *     between its direct entry and a ctx handler: every call runs one of
 *     them, and between a switch's return and the next only the new one;
 *   - once needle_link_destroy returns, the handler never runs again,
 *     with threads still calling;
 *   - an attach whose batch fails (mprotect failing once) on the
 *     entry-only link's function and a new one: the new one is off
 *     again, the entry-only link's site still on its stub, counting;
 *   - a signal that lands in a handler (an entry-only one, or a ctx
 *     handler) and leaves with siglongjmp leaves no read section open:
 *     the thread's next calls run the handler, and a destroy returns,
 *     from that thread or another.
 * Then the same again with NEEDLE_GRAPH_ASM=0 (the probe path in C
 * only): the same counts. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "abi_funcs.h"
#include "harness.h"
#include "needle.h"

int test_probe_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		     void *thread_data, uint64_t *cookie, void *user_data);
int test_probe_raise_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
			   void *thread_data, uint64_t *cookie, void *user_data);
extern _Atomic int probe_raise_signal;
extern _Atomic uint64_t probe_with_thread_data, probe_regs_misaligned;
extern _Atomic uint64_t probe_last_args[6];
extern _Atomic uint64_t probe_last_ret;
extern const struct needle_func *_Atomic probe_last_func;
extern char **environ;

/* p_regs: rax and r10 as they came, back in rax and rdx; its entry is a
 * patchable NOP5 with its __patchable_function_entries record, as the
 * compiler writes them. */
__asm__(".text\n"
	".globl p_regs\n"
	".type p_regs, @function\n"
	".p2align 4\n"
	"p_regs:\n"
	"1:\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"\tmovq %r10, %rdx\n"
	"\tret\n"
	".size p_regs, .-p_regs\n"
	".pushsection __patchable_function_entries, \"awo\", @progbits, p_regs\n"
	".p2align 3\n"
	".quad 1b\n"
	".popsection\n");

/* p_regs with rax = a and r10 = b: 1 when both came back. */
static __attribute__((noinline)) int regs_round_trip(uint64_t a, uint64_t b)
{
	register uint64_t rax __asm__("rax") = a;
	register uint64_t r10 __asm__("r10") = b;
	register uint64_t rdx __asm__("rdx");
	/* Below the red zone, the stack 16-byte aligned at the call as the
	 * ABI wants (this function makes no call the compiler sees). */
	__asm__ volatile("movq %%rsp, %%rbx\n\tsubq $128, %%rsp\n\tandq $-16, %%rsp\n\t"
			 "call p_regs\n\tmovq %%rbx, %%rsp"
			 : "+r"(rax), "+r"(r10), "=r"(rdx)
			 :
			 : "rbx", "rcx", "rsi", "rdi", "r8", "r9", "r11", "memory", "cc");
	return rax == a && rdx == b;
}

static const char *const funcs[] = { "d_int", "d_fp", "d_pair", "d_fret", "p_regs" };

static _Atomic uint64_t probes;

static int attach_probe(const char *const *pats, size_t n, struct needle_link **link)
{
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pats, .pattern_cnt = n,
					.direct_entry = test_probe_entry, .user_data = (void *)&probes,
					.flags = NEEDLE_ATTACH_ENTRY_ONLY };
	return needle_attach(&o, link);
}

/* n calls of each function, results checked: the number that came back
 * wrong. */
static long call_all(long n, long seed)
{
	long bad = 0;
	for (long i = 0; i < n; i++) {
		uint64_t x = (uint64_t)(i + seed);
		bad += d_int(x, x + 1, x + 2, x + 3, x + 4, x + 5) != 40 * x + 1 * 3 + 2 * 5 + 3 * 7 + 4 * 11 + 5 * 13;
		double d = (double)(i + seed);
		bad += d_fp(d, d, d, d, d, d, d, d) != 36 * d;
		struct pair p = d_pair((long)x);
		bad += p.a != (long)x * 3 || p.b != (long)x - 7;
		bad += d_fret(d) != d * 0.5;
	}
	return bad;
}

static _Atomic uint64_t ctx_calls;
static int ctx_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	atomic_fetch_add(&ctx_calls, 1);
	return 0;
}

static _Atomic int workers_stop;
static _Atomic long worker_bad;
struct worker {
	pthread_t t;
	_Atomic long calls; /* written by the worker alone */
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	long bad = 0;
	while (!atomic_load_explicit(&workers_stop, memory_order_relaxed)) {
		long n = atomic_load_explicit(&w->calls, memory_order_relaxed);
		uint64_t x = (uint64_t)n;
		bad += d_int(x, 1, 2, 3, 4, 5) != x + 3 + 10 + 21 + 44 + 65;
		atomic_store_explicit(&w->calls, n + 1, memory_order_relaxed);
	}
	atomic_fetch_add(&worker_bad, bad);
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&t, NULL);
}

/* Start four workers and return once each has made a call: on a loaded
 * machine what follows would otherwise run before any of them did. */
static void workers_start(struct worker *w)
{
	memset(w, 0, 4 * sizeof(*w));
	atomic_store(&workers_stop, 0);
	for (int i = 0; i < 4; i++)
		pthread_create(&w[i].t, NULL, worker, &w[i]);
	for (int i = 0; i < 4; i++)
		while (!atomic_load(&w[i].calls))
			sleep_ms(1);
}

/* A signal that interrupts a handler and leaves with siglongjmp: the
 * program's own way out of a slow call (a timeout's SIGALRM), which must
 * leave no read section open behind it. */
static sigjmp_buf jump_env;
static void jump_out(int sig)
{
	(void)sig;
	siglongjmp(jump_env, 1);
}

static _Atomic uint64_t raise_calls;
static int ctx_raise_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	atomic_fetch_add((_Atomic uint64_t *)data, 1);
	int sig = atomic_exchange(&probe_raise_signal, 0);
	if (sig)
		raise(sig);
	return 0;
}

static void *destroy_thread(void *link)
{
	return (void *)(intptr_t)needle_link_destroy(link);
}

/* Attach link (an entry-only one, or an ordinary one with ctx_raise_entry)
 * to p_jump, make its handler raise SIGUSR1, whose handler jumps out; then
 * 1000 calls, each must run the handler, and a destroy, from this thread
 * or another, must return 0 within 10 s. */
static __attribute__((noinline)) long p_jump(long x)
{
	__asm__ volatile("");
	return x * 5 + 1;
}
static void jump_case(int entry_only, int destroy_here)
{
	static const char *const pat[] = { "p_jump" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pat, .pattern_cnt = 1, .user_data = (void *)&raise_calls };
	struct needle_link *link = NULL;
	const char *what = entry_only ? "entry-only link" : "ctx handler";

	if (entry_only) {
		o.direct_entry = test_probe_raise_entry;
		o.flags = NEEDLE_ATTACH_ENTRY_ONLY;
	} else {
		o.entry = ctx_raise_entry;
	}
	atomic_store(&raise_calls, 0);
	CHECK_EQ(needle_attach(&o, &link), 1, "%s: attach to p_jump", what);
	struct sigaction sa = { .sa_handler = jump_out }, old;
	sigaction(SIGUSR1, &sa, &old);
	volatile int jumped = 0;
	if (!sigsetjmp(jump_env, 1)) {
		atomic_store(&probe_raise_signal, SIGUSR1);
		p_jump(1);
	} else {
		jumped = 1;
	}
	sigaction(SIGUSR1, &old, NULL);
	CHECK(jumped, "%s: the signal handler left the handler with siglongjmp", what);
	long bad = 0;
	for (long i = 0; i < 1000; i++)
		bad += p_jump(i) != i * 5 + 1;
	CHECK_EQ(atomic_load(&raise_calls), 1001, "%s: after the jump, every call ran the handler (1 + 1000)", what);
	CHECK_EQ(bad, 0, "%s: every result right", what);
	if (destroy_here) {
		CHECK_EQ(needle_link_destroy(link), 0, "%s: destroyed from the thread that jumped", what);
		return;
	}
	pthread_t t;
	void *rv = NULL;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_create(&t, NULL, destroy_thread, link);
	int e = pthread_timedjoin_np(t, &rv, &until);
	CHECK(!e && rv == NULL, "%s: destroyed from another thread within 10 s (%s)", what,
	      e ? "still waiting: a read section left open" : "returned");
	if (e) {
		fflush(stdout);
		_exit(1); /* the destroy never returns */
	}
}

/* A signal on the alternate stack lands in a ctx handler, jumps inside
 * its own handler (sigsetjmp, then siglongjmp to it) and returns: the
 * interrupted handler's read section is still open, so the traced call
 * it makes next is not dispatched (the recursion guard). */
static sigjmp_buf inner_env;
static _Atomic int inner_jumps;
static void jump_inside(int sig)
{
	(void)sig;
	if (!sigsetjmp(inner_env, 0))
		siglongjmp(inner_env, 1);
	atomic_fetch_add(&inner_jumps, 1);
}
static _Atomic uint64_t inner_calls, inner_nested;
static _Atomic int inner_raise;
static int ctx_inner_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	atomic_fetch_add(&inner_calls, 1);
	if (atomic_exchange(&inner_raise, 0)) {
		raise(SIGUSR2);
		/* Inside the section still: p_jump's call is not dispatched. */
		if (p_jump(7) != 36)
			atomic_fetch_add(&inner_nested, 1000);
	}
	return 0;
}
static void jump_inside_case(void)
{
	static const char *const pat[] = { "p_jump" };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pat, .pattern_cnt = 1, .entry = ctx_inner_entry };
	struct needle_link *link = NULL;
	/* On this thread's stack, above the frames the call will use: an
	 * address comparison across the two stacks would take the handler's
	 * inner jump for one out of the section. */
	char alt[1 << 16];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) }, old_ss;
	struct sigaction sa = { .sa_handler = jump_inside, .sa_flags = SA_ONSTACK }, old;
	struct needle_stats st0 = { .sz = sizeof(st0) }, st1 = { .sz = sizeof(st1) };

	CHECK_EQ(needle_attach(&o, &link), 1, "alternate stack: attach a ctx handler to p_jump");
	sigaltstack(&ss, &old_ss);
	sigaction(SIGUSR2, &sa, &old);
	needle_get_stats(&st0);
	atomic_store(&inner_raise, 1);
	CHECK_EQ(p_jump(2), 11, "alternate stack: the call's result");
	needle_get_stats(&st1);
	sigaction(SIGUSR2, &old, NULL);
	sigaltstack(&old_ss, NULL);
	CHECK_EQ(atomic_load(&inner_jumps), 1, "alternate stack: the signal's handler jumped inside itself and returned");
	CHECK_EQ(atomic_load(&inner_calls), 1, "alternate stack: the handler's own traced call was not dispatched");
	CHECK_EQ(st1.recursion_skips - st0.recursion_skips, 1, "alternate stack: it was counted as a recursion skip");
	CHECK_EQ(atomic_load(&inner_nested), 0, "alternate stack: its result right");
	long bad = 0;
	for (long i = 0; i < 100; i++)
		bad += p_jump(i) != i * 5 + 1;
	CHECK_EQ(atomic_load(&inner_calls), 101, "alternate stack: then every call ran the handler (1 + 100)");
	CHECK_EQ(bad, 0, "alternate stack: every result right");
	CHECK_EQ(needle_link_detach(link), 0, "alternate stack: detached");
	CHECK_EQ(needle_link_set_handlers(link, NULL, NULL), -ENOENT, "a detached link takes no handlers (-ENOENT)");
	CHECK_EQ(needle_link_set_handlers(link, ctx_inner_entry, NULL), -ENOENT, "nor ordinary ones (-ENOENT)");
	CHECK_EQ(needle_link_destroy(link), 0, "alternate stack: destroyed");
}

static uint64_t paths_c(void)
{
	struct needle_stats st = { .sz = sizeof(st) };
	needle_get_stats(&st);
	return st.direct_c_entries + st.full_path_entries;
}

/* mprotect failing once, when asked: a patch batch that cannot make
 * code writable fails part way, as on a system out of memory. */
static _Atomic int fail_next_mprotect;
int mprotect(void *addr, size_t len, int prot)
{
	if ((prot & PROT_WRITE) && atomic_exchange(&fail_next_mprotect, 0)) {
		errno = ENOMEM;
		return -1;
	}
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

/* Where the entry of f jumps (a JMP rel32 at its first byte), or 0. */
static uint64_t entry_target(const void *f)
{
	const uint8_t *p = f;
	int32_t rel;

	if (p[0] != 0xe9)
		return 0;
	memcpy(&rel, p + 1, 4);
	return (uint64_t)(uintptr_t)p + 5 + (uint64_t)(int64_t)rel;
}

/* An attach that fails, where one of its functions is the entry-only
 * link's (whose site the attach's batch retargets) and another is new
 * (which it switches on): the undo switches the new one off and leaves
 * the entry-only link's site on, on its probe stub, counting. */
static void failed_attach_case(void)
{
	const char *lo_name = "d_int", *hi_name = "d_pair";
	struct needle_link *alone = NULL, *second = NULL;

	/* The entry-only link's function first in address order: the
	 * patcher sorts a batch's operations by address. */
	if ((uintptr_t)d_pair < (uintptr_t)d_int)
		lo_name = "d_pair", hi_name = "d_int";
	const char *pa[] = { lo_name }, *pb[] = { lo_name, hi_name };
	CHECK_EQ(attach_probe(pa, 1, &alone), 1, "failed attach: the entry-only link on %s", lo_name);
	const void *lo_fn = !strcmp(lo_name, "d_int") ? (const void *)d_int : (const void *)d_pair;
	const void *hi_fn = lo_fn == (const void *)d_int ? (const void *)d_pair : (const void *)d_int;
	uint8_t hi_off[5];
	memcpy(hi_off, hi_fn, 5);
	for (int i = 0; i < 3; i++) /* the C path's first calls, then the probe path */
		lo_fn == (const void *)d_int ? (void)d_int(1, 2, 3, 4, 5, 6) : (void)d_pair(1);
	uint64_t target = entry_target(lo_fn);
	struct needle_attach_opts o2 = { .sz = sizeof(o2), .patterns = pb, .pattern_cnt = 2, .entry = ctx_entry };
	atomic_store(&fail_next_mprotect, 1);
	int err = needle_attach(&o2, &second);
	atomic_store(&fail_next_mprotect, 0);
	CHECK(err < 0, "failed attach: a second link on both, its batch failing, is refused (%d)", err);
	CHECK_EQ(entry_target(lo_fn), target, "failed attach: the entry-only link's site still jumps to the same stub");
	CHECK(!memcmp(hi_fn, hi_off, 5), "failed attach: the function it would have switched on is off again");
	atomic_store(&probes, 0);
	for (int i = 0; i < 1000; i++)
		lo_fn == (const void *)d_int ? (void)d_int(1, 2, 3, 4, 5, (uint64_t)i) : (void)d_pair(i);
	CHECK_EQ(atomic_load(&probes), 1000, "failed attach: the entry-only link still counts every call");
	CHECK_EQ(needle_link_destroy(alone), 0, "failed attach: the entry-only link destroyed");
}

int main(int argc, char **argv)
{
	struct needle_link *link = NULL, *second = NULL;
	const long n = 10000;
	int asm_path = !getenv("NEEDLE_GRAPH_ASM");

	(void)argc;
	printf("      %s\n", asm_path ? "the probe path in assembly" : "NEEDLE_GRAPH_ASM=0: the probe path in C");
	/* Options. */
	struct needle_attach_opts bad = { .sz = sizeof(bad), .patterns = funcs, .pattern_cnt = 1,
					  .direct_entry = test_probe_entry, .flags = NEEDLE_ATTACH_ENTRY_ONLY };
	bad.entry = ctx_entry;
	CHECK_EQ(needle_attach(&bad, &link), -EINVAL, "entry only with an entry handler: -EINVAL");
	bad.entry = NULL;
	bad.thread_data_size = 16;
	CHECK_EQ(needle_attach(&bad, &link), -EINVAL, "entry only with thread data: -EINVAL");
	bad.thread_data_size = 0;
	bad.call_data_size = 16;
	CHECK_EQ(needle_attach(&bad, &link), -EINVAL, "entry only with call data: -EINVAL");
	bad.call_data_size = 0;
	bad.context_switch = (void (*)(const void *, const void *, void *, void *))(uintptr_t)ctx_entry;
	CHECK_EQ(needle_attach(&bad, &link), -EINVAL, "entry only with a context_switch callback: -EINVAL");
	bad.context_switch = NULL;
	bad.direct_entry = NULL;
	CHECK_EQ(needle_attach(&bad, &link), -EINVAL, "entry only without a direct entry: -EINVAL");

	/* Alone on five functions. */
	CHECK_EQ(attach_probe(funcs, 5, &link), 5, "attach the entry-only link to five functions");
	uint64_t c0 = paths_c();
	CHECK_EQ(call_all(n, 0), 0, "every argument and return value unchanged (integers, doubles, rax:rdx, xmm0)");
	long regs_ok = 0;
	for (long i = 0; i < n; i++)
		regs_ok += regs_round_trip(0x1000 + (uint64_t)i, 0xabc00000 + (uint64_t)i);
	CHECK_EQ(regs_ok, n, "rax and r10 reach the function unchanged");
	CHECK_EQ(atomic_load(&probes), 5 * n, "every call counted once (the handler's NEEDLE_DIRECT_DECLINE ignored)");
	uint64_t in_c = paths_c() - c0;
	if (asm_path)
		CHECK(in_c <= 10, "the C paths took at most two calls a function, the probe path the rest (%llu in C)",
		      (unsigned long long)in_c);
	else
		CHECK(in_c >= 5 * n - 10, "NEEDLE_GRAPH_ASM=0: the C paths took the calls (%llu in C)",
		      (unsigned long long)in_c);
	CHECK_EQ(atomic_load(&probe_with_thread_data), 0, "no thread data");
	CHECK_EQ(atomic_load(&probe_regs_misaligned), 0, "regs 16-byte aligned, every call");
	/* The stub the entry names: the probe stub where the link is alone
	 * and entry only (the probe path in assembly), else the calling
	 * stub, 16 bytes before it. */
	const uint64_t alone_at = entry_target(d_int);
	CHECK(alone_at != 0, "d_int's entry is a jmp to its stub (%#llx)", (unsigned long long)alone_at);

	/* To a ctx handler and back. */
	CHECK_EQ(needle_link_set_handlers(link, ctx_entry, NULL), 0, "set_handlers: an ordinary entry handler");
	const uint64_t shared_at = entry_target(d_int);
	if (asm_path)
		CHECK_EQ(alone_at - shared_at, 16,
			 "with a ctx handler the entry jumps to the calling stub, 16 bytes before the probe stub");
	else
		CHECK_EQ(alone_at - shared_at, 0, "NEEDLE_GRAPH_ASM=0: the entry stays on the calling stub");
	atomic_store(&probes, 0);
	atomic_store(&ctx_calls, 0);
	CHECK_EQ(call_all(100, 3), 0, "results unchanged");
	CHECK_EQ(atomic_load(&probes) * 1000 + atomic_load(&ctx_calls), 400,
		 "the ordinary handler ran instead (probe calls, times 1000, plus ctx calls)");
	CHECK_EQ(needle_link_set_handlers(link, NULL, NULL), 0, "set_handlers (NULL, NULL): entry only again");
	CHECK_EQ(entry_target(d_int), alone_at, "entry only again: back on the probe stub");
	atomic_store(&probes, 0);
	atomic_store(&ctx_calls, 0);
	CHECK_EQ(call_all(100, 5), 0, "results unchanged");
	CHECK_EQ(atomic_load(&probes) + atomic_load(&ctx_calls) * 1000, 400,
		 "the direct entry runs again (probe calls, plus ctx calls times 1000)");
	uint64_t ret = 0;
	uint64_t r = d_int(0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666);
	__asm__ volatile("leaq (%%rip), %0" : "=r"(ret));
	int args_ok = 0;
	for (int k = 0; k < 6; k++)
		args_ok += atomic_load(&probe_last_args[k]) == 0x1111u * (uint64_t)(k + 1);
	CHECK_EQ(args_ok, 6, "the handler reads the six integer arguments from regs");
	const struct needle_func *f = atomic_load(&probe_last_func);
	CHECK(f && !strcmp(f->name, "d_int") && f->ip == (uint64_t)(uintptr_t)d_int, "it gets the function (%s)",
	      f ? f->name : "none");
	uint64_t ra = atomic_load(&probe_last_ret);
	CHECK(ra > (uint64_t)(uintptr_t)main && ra < ret, "it gets the return address into its caller (main+%#llx)",
	      (unsigned long long)(ra - (uint64_t)(uintptr_t)main));
	CHECK(r == 0x1111 + 3 * 0x2222 + 5 * 0x3333 + 7 * 0x4444 + 11 * 0x5555 + 13 * 0x6666, "and its result");

	/* Shared with a ctx link: the full path, both counted. */
	struct needle_attach_opts o2 = { .sz = sizeof(o2), .patterns = funcs, .pattern_cnt = 1, .entry = ctx_entry };
	CHECK_EQ(needle_attach(&o2, &second), 1, "a second link on d_int");
	CHECK_EQ(entry_target(d_int), shared_at, "shared: the entry jumps to the calling stub");
	CHECK_EQ(needle_link_set_handlers(second, NULL, NULL), -EINVAL,
		 "set_handlers (NULL, NULL) on a link that is not entry only: -EINVAL");
	atomic_store(&probes, 0);
	for (long i = 0; i < n; i++)
		d_int(1, 2, 3, 4, 5, (uint64_t)i);
	CHECK_EQ(atomic_load(&probes), n, "shared: the entry-only handler, every call, from the full path");
	CHECK_EQ(atomic_load(&ctx_calls), n, "shared: the second link's, every call");
	CHECK_EQ(needle_link_destroy(second), 0, "the second link gone");
	CHECK_EQ(entry_target(d_int), alone_at, "alone again: the probe stub");
	atomic_store(&probes, 0);
	c0 = paths_c();
	for (long i = 0; i < n; i++)
		d_int(1, 2, 3, 4, 5, (uint64_t)i);
	CHECK_EQ(atomic_load(&probes), n, "alone again: every call counted");
	in_c = paths_c() - c0;
	if (asm_path)
		CHECK(in_c <= 2, "alone again: back on the probe path (%llu in C)", (unsigned long long)in_c);

	/* Four threads, while a second link comes and goes. */
	struct worker w[4];
	atomic_store(&probes, 0);
	workers_start(w);
	int churn_ok = 0, after_detach_wrong = 0;
	atomic_store(&ctx_calls, 0);
	for (int i = 0; i < 500; i++) {
		churn_ok += needle_attach(&o2, &second) == 1;
		churn_ok += needle_link_destroy(second) == 0;
		/* A stable window: the second link's handler is gone. */
		uint64_t c0 = atomic_load(&ctx_calls);
		for (long spin = 0; spin < 20000; spin++)
			__asm__ volatile("pause");
		after_detach_wrong += atomic_load(&ctx_calls) != c0;
	}
	atomic_store(&workers_stop, 1);
	long total = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].calls;
	}
	CHECK_EQ(churn_ok, 1000, "500 attaches and detaches of a second link while four threads call");
	CHECK_EQ(after_detach_wrong, 0, "after each detach returned, the second link's handler never ran");
	CHECK(atomic_load(&ctx_calls) > 0, "the second link's handler ran while it was attached (%llu calls)",
	      (unsigned long long)atomic_load(&ctx_calls));
	CHECK_EQ(entry_target(d_int), alone_at, "after the churn: the probe stub");
	CHECK(total >= 4, "the threads called (%ld calls)", total);
	CHECK_EQ(atomic_load(&probes), (uint64_t)total, "every call of the four threads counted once");
	CHECK_EQ(atomic_load(&worker_bad), 0, "every result right");

	/* Four threads, while the link's handlers go from its direct entry to
	 * an ordinary one and back, 300 times each way: every call runs
	 * exactly one of them, and between a set_handlers' return and the
	 * next call of it (a stable window) only the handler it set. */
	atomic_store(&probes, 0);
	atomic_store(&ctx_calls, 0);
	workers_start(w);
	int flips_ok = 0, windows_wrong = 0;
	for (int i = 0; i < 600; i++) {
		int to_ctx = !(i & 1);
		flips_ok += (to_ctx ? needle_link_set_handlers(link, ctx_entry, NULL)
				    : needle_link_set_handlers(link, NULL, NULL)) == 0;
		uint64_t p0 = atomic_load(&probes), c0 = atomic_load(&ctx_calls);
		/* A window long enough for the workers to call in it. */
		for (long spin = 0; spin < 20000; spin++)
			__asm__ volatile("pause");
		uint64_t p1 = atomic_load(&probes), c1 = atomic_load(&ctx_calls);
		windows_wrong += to_ctx ? p1 != p0 : c1 != c0;
	}
	atomic_store(&workers_stop, 1);
	total = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].calls;
	}
	CHECK_EQ(flips_ok, 600, "600 needle_link_set_handlers while four threads call");
	CHECK_EQ(windows_wrong, 0, "in each stable window only the handler just set ran");
	CHECK_EQ(atomic_load(&probes) + atomic_load(&ctx_calls), (uint64_t)total,
		 "every call of the four threads ran exactly one handler");
	CHECK(atomic_load(&probes) > 0 && atomic_load(&ctx_calls) > 0, "both handlers ran (%llu direct, %llu ctx)",
	      (unsigned long long)atomic_load(&probes), (unsigned long long)atomic_load(&ctx_calls));
	CHECK_EQ(atomic_load(&worker_bad), 0, "every result right");

	/* Destroyed while threads call: never again after it returns. */
	workers_start(w);
	CHECK_EQ(needle_link_destroy(link), 0, "destroy the entry-only link while four threads call");
	uint64_t after = atomic_load(&probes);
	sleep_ms(50);
	CHECK_EQ(atomic_load(&probes), after, "no call counted after needle_link_destroy returned");
	atomic_store(&workers_stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(w[i].t, NULL);
	CHECK_EQ(atomic_load(&worker_bad), 0, "every result right");

	/* A signal handler leaves a handler with siglongjmp. */
	jump_case(1, 0);
	jump_case(1, 1);
	jump_case(0, 0);
	jump_case(0, 1);
	jump_inside_case();
	failed_attach_case();

	/* The same with the probe path in C only. */
	if (asm_path) {
		char *args[] = { argv[0], NULL };
		pid_t pid;
		int status = -1;
		setenv("NEEDLE_GRAPH_ASM", "0", 1);
		fflush(stdout);
		int err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ);
		CHECK_EQ(err, 0, "start this test again with NEEDLE_GRAPH_ASM=0");
		if (!err)
			waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "with NEEDLE_GRAPH_ASM=0 every check passed (status %#x)", status);
	}
	return harness_exit();
}
