/* trap.c - the SIGTRAP handler for threads that hit a site while a patch
 * batch has an int3 on it.
 *
 * Like the kernel's poke_int3_handler, it finds the site by binary search
 * (site_table_find_addr over the sorted, immutable address index) and
 * emulates the instruction the site is becoming: a CALL to the site's stub
 * (push the return address, jump) or a NOP (skip the site: 5 bytes, or
 * the 6 of a `call *__fentry__@GOTPCREL(%rip)` being normalized, whose
 * last byte is still the old instruction's until the batch's tail write
 * makes it a NOP1: skipping 5 would run half an instruction); for a
 * relocated site, the jmp to its detour, or the relocated instructions
 * (the detour past its call); for an XRay exit sled switched off, a
 * ret.  A trap at a door past a sleeping thread's system call
 * (sleeper_door.c) parks the thread until the batch is over.  It writes
 * only the trapped thread's own registers and stack: no counter, no lock,
 * nothing another thread's cache holds.  A trap that is not one of ours
 * goes to whatever SIGTRAP handler the program had, and a program that
 * had none dies of SIGTRAP exactly as it would untraced. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>

#include "agent/arch/arch.h"
#include "agent/base/interpose.h"
#include "agent/patch/sleeper_door.h"
#include "agent/sites/site_table.h"
#include "agent/patch/trap.h"

static struct sigaction program_action;


static void chain_to_program(int sig, siginfo_t *info, void *uc)
{
	struct sigaction act = program_action;

	if (act.sa_flags & SA_SIGINFO) {
		act.sa_sigaction(sig, info, uc);
		return;
	}
	if (act.sa_handler == SIG_IGN && info->si_code != SI_KERNEL)
		return;
	if (act.sa_handler == SIG_DFL || act.sa_handler == SIG_IGN) {
		/* Untraced, this trap would kill the process: let it. */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction_real(SIGTRAP, &dfl, NULL);
		raise(SIGTRAP);
		return;
	}
	act.sa_handler(sig);
}

static void trap_handler(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t at = arch_ucontext_breakpoint(uc);
	struct site *site = info->si_code == SI_KERNEL ? site_table_find_addr(at) : NULL;

	if (!site) {
		if (info->si_code != SI_KERNEL || !door_trap(uc))
			chain_to_program(sig, info, ucv);
		return;
	}
	int want_call = atomic_load_explicit(&site->want_call, memory_order_relaxed);
	if (site->form == NEEDLE_FORM_RELOCATED) {
		/* The detour calls (or jumps to) the stub, and the
		 * instructions the site covers run after; past its head,
		 * they run alone. */
		arch_ucontext_set_pc(uc, want_call ? site->detour : site->detour + RELOC_DETOUR_BODY);
	} else if (site->form == SITE_EXIT_XRAY_RET && !want_call) {
		/* An XRay exit sled is a ret, or becomes "NOP5; ret": either
		 * way, off means return. */
		arch_ucontext_return(uc);
	} else if (want_call && site->jmp_entry) {
		arch_ucontext_set_pc(uc, site->stub);
	} else if (want_call) {
		arch_ucontext_call(uc, site->func.site_addr + ARCH_SITE_LEN, site->stub);
	} else {
		/* load_len: the instruction the site held when discovered (5
		 * or 6 bytes).  The end of the old instruction and of "NOP5;
		 * NOP1" are the same byte, so this is right in every phase. */
		arch_ucontext_set_pc(uc, site->func.site_addr +
					     (site->load_len > ARCH_SITE_LEN ? site->load_len : ARCH_SITE_LEN));
	}
}

int trap_install(void)
{
	struct sigaction cur, act;

	if (sigaction_real(SIGTRAP, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == trap_handler)
		return 0;
	memset(&act, 0, sizeof(act));
	act.sa_sigaction = trap_handler;
	act.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&act.sa_mask);
	program_action = cur;
	if (sigaction_real(SIGTRAP, &act, NULL))
		return -errno;
	return 0;
}
