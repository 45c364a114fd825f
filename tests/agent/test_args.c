/* test_args - handlers see arguments, return values and cookies exactly,
 * and traced functions with integer, float, varargs and struct-returning
 * signatures return what they return untraced.  Also: several links on
 * one function, entry-only and exit-only links, NEEDLE_SKIP_EXIT, the
 * recursion guard, and exact pairing on a recursive function. */
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

#include "harness.h"
#include "needle.h"

#define NOINLINE __attribute__((noinline))

NOINLINE long six_ints(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

/* Two integer arguments past the registers: on the stack, above the
 * return address. */
NOINLINE long eight_ints(long a, long b, long c, long d, long e, long f, long g, long h)
{
	return a + b + c + d + e + f + 7 * g + 8 * h;
}

NOINLINE double eight_doubles(double a, double b, double c, double d, double e, double f,
			      double g, double h)
{
	return a + b * 2 + c * 3 + d * 4 + e * 5 + f * 6 + g * 7 + h * 8;
}

NOINLINE double mixed(int n, double x, long m, float y)
{
	return n * x + (double)m * y;
}

NOINLINE double sum_varargs(int n, ...)
{
	va_list ap;
	double s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

struct pair {
	long lo, hi;
};

NOINLINE struct pair make_pair(long a, long b)
{
	struct pair p = { a * 3, b * 5 };
	return p;
}

/* Not turned into a loop by the compiler: the count of real calls is known. */
__attribute__((noinline, optimize("no-optimize-sibling-calls"))) long fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

NOINLINE long helper(long x)
{
	__asm__ volatile("");
	return x * 7;
}

static uint64_t seen_args[6];
static double seen_doubles[8];
static double seen_ret_double;
static uint64_t seen_rax, seen_rdx;
static long depth, max_depth, fib_entries, fib_exits, pairs_ok;

static int capture_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)cookie;
	(void)data;
	for (int i = 0; i < 6; i++)
		seen_args[i] = needle_arg(ctx, (unsigned)i);
	for (int i = 0; i < 8; i++)
		seen_doubles[i] = needle_arg_double(ctx, (unsigned)i);
	return 0;
}

static void capture_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)cookie;
	(void)data;
	seen_ret_double = needle_retval_double(ctx);
	seen_rax = ctx->regs.rax;
	seen_rdx = ctx->regs.rdx;
}

static uint64_t seen_sp, seen_exit_sp, seen_return_addr, seen_stack[2];

static int stack_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)cookie;
	(void)data;
	const uint64_t *sp = (const uint64_t *)(uintptr_t)ctx->sp;
	seen_sp = ctx->sp;
	seen_return_addr = sp[0];
	seen_stack[0] = sp[1];
	seen_stack[1] = sp[2];
	return 0;
}

static void stack_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)cookie;
	(void)data;
	seen_exit_sp = ctx->sp;
}

static int fib_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)data;
	fib_entries++;
	*cookie = needle_arg(ctx, 0);
	if (++depth > max_depth)
		max_depth = depth;
	return 0;
}

static long fib_ref(long n)
{
	return n < 2 ? n : fib_ref(n - 1) + fib_ref(n - 2);
}

static void fib_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)data;
	fib_exits++;
	depth--;
	/* The cookie is this call's own argument: check the pairing. */
	if ((long)needle_retval(ctx) == fib_ref((long)cookie))
		pairs_ok++;
}

static struct needle_link *attach(const char *name, needle_entry_fn entry, needle_exit_fn exit, void *data)
{
	struct needle_link *link = NULL;
	const char *pat[] = { name };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = pat, .pattern_cnt = 1,
		.entry = entry, .exit = exit, .user_data = data,
	};
	int n = needle_attach(&opts, &link);
	CHECK_EQ(n, 1, "attach to %s", name);
	return n == 1 ? link : NULL;
}

static void drop(struct needle_link *link)
{
	needle_link_detach(link);
	needle_link_destroy(link);
}

/* Counters by user_data, for the multi-link checks. */
struct counts {
	long entries, exits, skips_requested;
	int skip_every;
};

static int count_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	struct counts *c = data;
	(void)ctx;
	*cookie = (uint64_t)(uintptr_t)c;
	c->entries++;
	if (c->skip_every && c->entries % c->skip_every == 0) {
		c->skips_requested++;
		return NEEDLE_SKIP_EXIT;
	}
	return 0;
}

static void count_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	struct counts *c = data;
	(void)ctx;
	if (cookie == (uint64_t)(uintptr_t)c)
		c->exits++;
}

static long helper_calls_from_handler;
static int recursive_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	struct counts *c = data;
	(void)ctx;
	(void)cookie;
	c->entries++;
	/* helper is traced by this very link: the guard must keep this call
	 * from dispatching (and from recursing forever). */
	helper_calls_from_handler += helper(1) == 7;
	return 0;
}

int main(void)
{
	struct needle_link *link;

	/* Integer arguments and return value. */
	link = attach("six_ints", capture_entry, capture_exit, NULL);
	long r = six_ints(1, 2, 3, 4, 5, 6);
	CHECK_EQ(r, 1 + 4 + 9 + 16 + 25 + 36, "six_ints result unchanged");
	for (int i = 0; i < 6; i++)
		CHECK_EQ(seen_args[i], i + 1, "six_ints argument %d seen", i);
	CHECK_EQ(seen_rax, r, "six_ints return value seen");
	drop(link);

	/* ctx->sp: at the entry it points at the return address, the 7th and
	 * 8th integer arguments above it; at the exit it is 8 higher. */
	link = attach("eight_ints", stack_entry, stack_exit, NULL);
	r = eight_ints(1, 2, 3, 4, 5, 6, 70, 80);
	CHECK_EQ(r, 21 + 490 + 640, "eight_ints result unchanged");
	CHECK(seen_stack[0] == 70 && seen_stack[1] == 80, "ctx->sp at the entry: the 7th and 8th arguments above it "
	      "(%llu, %llu)", (unsigned long long)seen_stack[0], (unsigned long long)seen_stack[1]);
	CHECK(seen_return_addr > (uintptr_t)main && seen_return_addr < (uintptr_t)main + 65536,
	      "ctx->sp at the entry: the return address into main");
	CHECK(seen_sp % 16 == 8 && seen_exit_sp == seen_sp + 8, "ctx->sp at the exit: the caller's, 8 above the entry's");
	drop(link);

	/* Eight double arguments. */
	link = attach("eight_doubles", capture_entry, capture_exit, NULL);
	double d = eight_doubles(1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5);
	CHECK(d == 1.5 + 5.0 + 10.5 + 18.0 + 27.5 + 39.0 + 52.5 + 68.0, "eight_doubles result unchanged (%g)", d);
	int dok = 1;
	for (int i = 0; i < 8; i++)
		dok &= seen_doubles[i] == 1.5 + i;
	CHECK(dok, "eight_doubles arguments seen in xmm0..xmm7");
	CHECK(seen_ret_double == d, "double return value seen");
	drop(link);

	/* Mixed integer and float classes. */
	link = attach("mixed", capture_entry, capture_exit, NULL);
	d = mixed(3, 0.25, 8, 0.5f);
	CHECK(d == 3 * 0.25 + 8 * 0.5, "mixed result unchanged (%g)", d);
	CHECK(seen_args[0] == 3 && seen_args[1] == 8, "mixed integer arguments in rdi, rsi");
	CHECK(seen_doubles[0] == 0.25, "mixed double argument in xmm0");
	drop(link);

	/* Varargs: al holds the vector register count and must survive. */
	link = attach("sum_varargs", capture_entry, capture_exit, NULL);
	d = sum_varargs(5, 1.0, 2.0, 3.0, 4.0, 5.5);
	CHECK(d == 15.5, "varargs result unchanged (%g)", d);
	drop(link);

	/* A struct returned in rax:rdx. */
	link = attach("make_pair", capture_entry, capture_exit, NULL);
	struct pair p = make_pair(7, 11);
	CHECK(p.lo == 21 && p.hi == 55, "struct return unchanged");
	CHECK(seen_rax == 21 && seen_rdx == 55, "exit handler sees rax:rdx");
	drop(link);

	/* Recursion: exact entry/exit pairing and nesting depth. */
	link = attach("fib", fib_entry, fib_exit, NULL);
	long f = fib(20);
	CHECK_EQ(f, 6765, "fib(20) unchanged");
	CHECK_EQ(fib_entries, 21891, "fib(20) makes 21891 calls, all seen");
	CHECK_EQ(fib_exits, 21891, "every fib call's exit seen");
	CHECK_EQ(pairs_ok, 21891, "every exit paired with its own entry's cookie");
	CHECK_EQ(max_depth, 20, "maximum nesting depth is 20");
	CHECK_EQ(depth, 0, "nesting returns to 0");
	drop(link);

	/* Two links on one function: both see every call, in attach order;
	 * removing one leaves the other exact. */
	struct counts a = { 0 }, b = { 0 };
	struct needle_link *la = attach("helper", count_entry, count_exit, &a);
	struct needle_link *lb = attach("helper", count_entry, count_exit, &b);
	for (int i = 0; i < 1000; i++)
		helper(i);
	CHECK(a.entries == 1000 && a.exits == 1000, "first link exact with two links (%ld/%ld)", a.entries, a.exits);
	CHECK(b.entries == 1000 && b.exits == 1000, "second link exact with two links (%ld/%ld)", b.entries, b.exits);
	CHECK_EQ(needle_link_detach(la), 0, "detach first link");
	for (int i = 0; i < 500; i++)
		helper(i);
	CHECK_EQ(a.entries, 1000, "detached link sees nothing more");
	CHECK(b.entries == 1500 && b.exits == 1500, "remaining link still exact (%ld/%ld)", b.entries, b.exits);
	needle_link_destroy(la);
	drop(lb);

	/* Entry-only and exit-only links; skip-exit. */
	struct counts eo = { 0 }, xo = { 0 }, sk = { .skip_every = 4 };
	struct needle_link *le = attach("helper", count_entry, NULL, &eo);
	struct needle_link *lx = attach("helper", NULL, count_exit, &xo);
	struct needle_link *ls = attach("helper", count_entry, count_exit, &sk);
	for (int i = 0; i < 100; i++)
		helper(i);
	CHECK(eo.entries == 100 && eo.exits == 0, "entry-only link: 100 entries, no exits");
	CHECK(xo.entries == 0, "exit-only link: no entries");
	CHECK(sk.entries == 100 && sk.skips_requested == 25 && sk.exits == 75,
	      "NEEDLE_SKIP_EXIT skips exactly the requested exits (%ld)", sk.exits);
	drop(le);
	drop(lx);
	drop(ls);

	/* A handler calling a traced function does not recurse. */
	struct counts rc = { 0 };
	struct needle_stats before = { .sz = sizeof(before) }, after = { .sz = sizeof(after) };
	needle_get_stats(&before);
	link = attach("helper", recursive_entry, NULL, &rc);
	for (int i = 0; i < 10; i++)
		helper(i);
	needle_get_stats(&after);
	CHECK_EQ(rc.entries, 10, "handler ran once per outer call");
	CHECK_EQ(helper_calls_from_handler, 10, "traced call from a handler ran normally");
	CHECK_EQ(after.recursion_skips - before.recursion_skips, 10, "recursion guard counted 10 skips");
	drop(link);
	return harness_exit();
}
