/* ucontext.h - x86-64's side of arch.h's signal contexts: the kernel's
 * saved registers in uc_mcontext.gregs, which a handler may change and
 * sigreturn then loads.
 *
 * Invariants:
 *   - the PC is REG_RIP; after an int3 the kernel reports the byte past
 *     it, so the breakpoint is at RIP - 1;
 *   - a call pushes its return address 8 bytes below RSP, a return pops
 *     it: the emulations write only the interrupted thread's own stack,
 *     and only the word a real call would;
 *   - a system call is "syscall" (0f 05), its number in RAX going in and
 *     its result coming out; the kernel keeps RDI, RSI, RDX, R10, R8 and
 *     R9 across it, so putting the number back in RAX and RIP on the
 *     instruction makes the same call again. */
#ifndef NEEDLE_X86_64_UCONTEXT_H
#define NEEDLE_X86_64_UCONTEXT_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#define X86_SYSCALL_LEN 2 /* 0f 05 */
#define X86_MOV_EAX_LEN 5 /* b8 imm32: mov $imm32, %eax */

static inline uint64_t arch_ucontext_pc(const ucontext_t *uc)
{
	return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
}

static inline void arch_ucontext_set_pc(ucontext_t *uc, uint64_t pc)
{
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
}

static inline uint64_t arch_ucontext_breakpoint(const ucontext_t *uc)
{
	return (uint64_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
}

static inline void arch_ucontext_call(ucontext_t *uc, uint64_t ret, uint64_t target)
{
	greg_t *gregs = uc->uc_mcontext.gregs;
	uint64_t *sp = (uint64_t *)gregs[REG_RSP] - 1;

	*sp = ret;
	gregs[REG_RSP] = (greg_t)sp;
	gregs[REG_RIP] = (greg_t)target;
}

static inline void arch_ucontext_return(ucontext_t *uc)
{
	greg_t *gregs = uc->uc_mcontext.gregs;
	uint64_t *sp = (uint64_t *)gregs[REG_RSP];

	gregs[REG_RIP] = (greg_t)*sp;
	gregs[REG_RSP] = (greg_t)(sp + 1);
}

static inline uint64_t arch_ucontext_eintr_syscall(const ucontext_t *uc)
{
	const greg_t *gregs = uc->uc_mcontext.gregs;
	uint64_t pc = (uint64_t)gregs[REG_RIP];
	const uint8_t *insn = (const uint8_t *)(uintptr_t)(pc - X86_SYSCALL_LEN);

	/* The page test first: pc - 2 may lie on an unmapped page. */
	if (gregs[REG_RAX] != -EINTR || (pc & 0xfff) < X86_SYSCALL_LEN || insn[0] != 0x0f || insn[1] != 0x05)
		return 0;
	return pc;
}

static inline void arch_ucontext_restart_syscall(ucontext_t *uc, uint64_t pc, long nr)
{
	greg_t *gregs = uc->uc_mcontext.gregs;

	gregs[REG_RAX] = (greg_t)nr;
	gregs[REG_RIP] = (greg_t)(pc - X86_SYSCALL_LEN);
}

static inline long arch_syscall_nr_before(uint64_t pc)
{
	uint64_t at = pc - X86_SYSCALL_LEN - X86_MOV_EAX_LEN;
	const uint8_t *mov = (const uint8_t *)(uintptr_t)at;

	if (at >> 12 == (pc - 1) >> 12 && mov[0] == 0xb8) {
		uint32_t nr;
		memcpy(&nr, mov + 1, sizeof(nr));
		return nr < 1024 ? (long)nr : -1;
	}
	return -1;
}

#endif
