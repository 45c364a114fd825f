/* direct_handlers.c - test_api_direct's direct handlers, built as
 * needle.h asks (-mgeneral-regs-only, api.mk).  Each one writes a junk
 * value into every general-purpose register the ABI lets a function
 * clobber, so that a trampoline that failed to put one back hands the
 * traced function or its caller a changed argument or return value; and
 * declines when told to (the full handlers then run). */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "needle.h"

_Atomic uint64_t direct_entries, direct_exits, direct_exit_cookie_bad;
/* The integer argument registers of the last call the direct entry took:
 * the test compares them with what it passed. */
_Atomic uint64_t direct_last_args[6];
/* Decline every Nth entry and exit (0: never). */
_Atomic uint32_t decline_entry_every, decline_exit_every;

static void clobber(void)
{
	__asm__ volatile("movq $-1, %%rax\n\tmovq $-1, %%rcx\n\tmovq $-1, %%rdx\n\tmovq $-1, %%rsi\n\t"
			 "movq $-1, %%rdi\n\tmovq $-1, %%r8\n\tmovq $-1, %%r9\n\tmovq $-1, %%r10\n\t"
			 "movq $-1, %%r11"
			 :
			 :
			 : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
}

int test_direct_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		      void *thread_data, uint64_t *cookie, void *user_data)
{
	(void)func;
	(void)ret_addr;
	(void)user_data;
	uint64_t *seen = thread_data; /* this thread's calls, for the per-thread count */
	uint32_t every = atomic_load(&decline_entry_every);
	clobber();
	if (!seen)
		return NEEDLE_DIRECT_DECLINE; /* claimed by the full path first */
	if (every && ++seen[1] % every == 0)
		return NEEDLE_DIRECT_DECLINE;
	seen[0]++;
	for (int k = 0; k < 6; k++)
		atomic_store_explicit(&direct_last_args[k], regs->args[k], memory_order_relaxed);
	atomic_fetch_add(&direct_entries, 1);
	*cookie = 0xd1ec7;
	return 0;
}

int test_direct_exit(const struct needle_func *func, uint64_t cookie, void *thread_data, void *user_data)
{
	(void)func;
	(void)user_data;
	uint64_t *seen = thread_data;
	uint32_t every = atomic_load(&decline_exit_every);
	clobber();
	if (every && ++seen[2] % every == 0)
		return NEEDLE_DIRECT_DECLINE;
	if (cookie != 0xd1ec7 && cookie != 0xf011)
		atomic_fetch_add(&direct_exit_cookie_bad, 1);
	atomic_fetch_add(&direct_exits, 1);
	return 0;
}

/* test_api_probe's entry-only handler (NEEDLE_ATTACH_ENTRY_ONLY): user_data
 * is the counter it adds to; it keeps the last call's function and
 * integer arguments, counts calls that came with thread data (there must
 * be none), and clobbers every register it may. */
_Atomic uint64_t probe_with_thread_data, probe_regs_misaligned;
_Atomic uint64_t probe_last_args[6];
_Atomic uint64_t probe_last_ret;
const struct needle_func *_Atomic probe_last_func;

int test_probe_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		     void *thread_data, uint64_t *cookie, void *user_data)
{
	clobber();
	if (thread_data)
		atomic_fetch_add(&probe_with_thread_data, 1);
	if ((uintptr_t)regs & 15) /* struct needle_regs is 16-byte aligned */
		atomic_fetch_add(&probe_regs_misaligned, 1);
	for (int k = 0; k < 6; k++)
		atomic_store_explicit(&probe_last_args[k], regs->args[k], memory_order_relaxed);
	atomic_store_explicit(&probe_last_ret, ret_addr, memory_order_relaxed);
	atomic_store_explicit(&probe_last_func, func, memory_order_relaxed);
	atomic_fetch_add_explicit((_Atomic uint64_t *)user_data, 1, memory_order_relaxed);
	*cookie = 1;
	return NEEDLE_DIRECT_DECLINE; /* ignored: entry only */
}

/* test_api_probe's jump out of a handler: the next call raises this
 * signal (then 0) from inside the handler, whose handler in the program
 * leaves with siglongjmp; every call counts in user_data. */
_Atomic int probe_raise_signal;
int test_probe_raise_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
			   void *thread_data, uint64_t *cookie, void *user_data)
{
	(void)func;
	(void)regs;
	(void)ret_addr;
	(void)thread_data;
	(void)cookie;
	atomic_fetch_add_explicit((_Atomic uint64_t *)user_data, 1, memory_order_relaxed);
	int sig = atomic_exchange(&probe_raise_signal, 0);
	if (sig)
		raise(sig);
	return 0;
}
