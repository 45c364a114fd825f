/* args_views_prog - known arguments and return values for the views that
 * group and filter by them (needle report --by-arg, replay --ret-ne and
 * --ret-eq).  It calls
 *  - lookup(key) for each key k in 0..9, k + 1 times, in a shuffled but
 *    fixed order: -1 for an odd key, 0 for an even one;
 *  - kv_get(name) with strings a CSV field must quote;
 *  - spread(v) once for each v in 0..SPREAD-1 (more distinct values than
 *    report keeps rows for);
 *  - co_step(key), which returns key + 1: co_step(100) in a coroutine
 *    yields to main before it returns, and main calls co_step(200) at the
 *    same depth meanwhile, so a view that kept the calls' values by depth
 *    alone would give co_step(100)'s exit co_step(200)'s arguments.
 * It prints what it did, one line per distinct call, so that a test
 * derives what the views must show:
 *   pid PID
 *   call FUNCTION VALUE CALLS RETURN     (RETURN "-" without one)
 *   spread SPREAD */
#include <stdio.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEYS 10
#define SPREAD 10005

NOINLINE int lookup(int key)
{
	__asm__ volatile("");
	return key % 2 ? -1 : 0;
}

NOINLINE long kv_get(const char *name)
{
	__asm__ volatile("" : : "r"(name));
	return 1;
}

NOINLINE int spread(int v)
{
	__asm__ volatile("");
	return v;
}

static ucontext_t main_ctx, co_ctx;
static int co_ret;

NOINLINE int co_step(int key)
{
	if (key == 100)
		swapcontext(&co_ctx, &main_ctx);
	__asm__ volatile("");
	return key + 1;
}

NOINLINE void co_entry(void)
{
	co_ret = co_step(100);
}

int main(void)
{
	static char stack[65536];
	int calls[KEYS] = { 0 }, user42 = 0, quoted = 0;

	/* Every key k + 1 times: the pairs (k, i) in an order that is not
	 * sorted by key, the same in every run. */
	for (unsigned n = 0, j = 0; n < KEYS * KEYS; n++, j = (j + 37) % (KEYS * KEYS)) {
		int k = (int)(j / KEYS), i = (int)(j % KEYS);
		if (i <= k) {
			lookup(k);
			calls[k]++;
		}
	}
	user42 += (int)kv_get("user:42");
	quoted += (int)kv_get("a,b\"c");
	user42 += (int)kv_get("user:42");
	for (int v = 0; v < SPREAD; v++)
		spread(v);

	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = sizeof(stack);
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co_entry, 0);
	swapcontext(&main_ctx, &co_ctx); /* co_step(100) yields back here */
	int ret200 = co_step(200);
	swapcontext(&main_ctx, &co_ctx); /* co_step(100) returns, co_entry ends */

	printf("pid %d\n", (int)getpid());
	for (int k = 0; k < KEYS; k++)
		printf("call lookup %d %d %d\n", k, calls[k], k % 2 ? -1 : 0);
	printf("call kv_get \"user:42\" %d -\n", user42);
	printf("call kv_get \"a,b\\\"c\" %d -\n", quoted);
	printf("call co_step 100 1 %d\n", co_ret);
	printf("call co_step 200 1 %d\n", ret200);
	printf("spread %d\n", SPREAD);
	return 0;
}
