/* bench_direct_handlers.c - bench_patch's direct handlers (needle.h's
 * needle_direct_entry_fn), built with -mgeneral-regs-only as they must
 * be: a counter of calls and one of returns. */
#include "needle.h"

long direct_counter, direct_exits;

int bench_direct_count(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		       void *thread_data, uint64_t *cookie, void *user_data)
{
	(void)func;
	(void)regs;
	(void)ret_addr;
	(void)thread_data;
	(void)cookie;
	(void)user_data;
	direct_counter++;
	return 0;
}

int bench_direct_exit(const struct needle_func *func, uint64_t cookie, void *thread_data, void *user_data)
{
	(void)func;
	(void)cookie;
	(void)thread_data;
	(void)user_data;
	direct_exits++;
	return 0;
}

/* bench_probe's entry-only handler: nothing at all, so that threads share
 * no line. */
int bench_direct_nop(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		     void *thread_data, uint64_t *cookie, void *user_data)
{
	(void)func;
	(void)regs;
	(void)ret_addr;
	(void)thread_data;
	(void)cookie;
	(void)user_data;
	return 0;
}
