/* arch.h - what the agent needs from the machine: the one header of the
 * arch layer that code outside src/agent/arch includes.
 *
 * The interface owns:
 *   - a site's bytes: how long a site is, the breakpoint byte the patch
 *     batch puts on its first byte, and the instruction that switches it
 *     on (a call of its stub, or a jump to a relocated entry's detour);
 *   - a signal handler's view of the interrupted thread: its PC, the
 *     breakpoint it trapped on, a call or a return emulated on its
 *     registers and stack, a system call made again;
 *   - the entry, exit and return trampolines and the unwind landing pad
 *     (x86_64/trampoline.h);
 *   - the stub areas and detour pages within reach of code, and their
 *     span (x86_64/stub_area.h);
 *   - moving a function's first instructions into a detour: plans,
 *     reasons for refusing, the detour's layout (x86_64/relocate.h);
 *   - the encodings site discovery recognizes and normalization writes:
 *     the forms the compilers leave at entries and exits (x86_64/insn.h).
 *     They are the toolchains' forms for this machine, not a protocol:
 *     sites/ and patch/prepare.c match and write them by their insn_
 *     names.
 *
 * Invariants:
 *   - nothing outside src/agent/arch names a register, an opcode, a
 *     ucontext field or a header under arch/x86_64: it includes this
 *     file, and the machine's headers come with it;
 *   - the functions below that signal handlers run (the trap handler,
 *     the stop handler, the fault handler of safe_copy) are static inline
 *     and async-signal-safe: they touch only the context they are given
 *     and, for a call or a return, the interrupted thread's stack;
 *   - the arch layer is the lowest of the agent's: it includes nothing of
 *     the agent's outside src/agent/arch, so that base may use it too. */
#ifndef NEEDLE_ARCH_H
#define NEEDLE_ARCH_H

#include <stdint.h>
#include <ucontext.h>

#include "agent/arch/x86_64/insn.h"
#include "agent/arch/x86_64/trampoline_layout.h"
#include "agent/arch/x86_64/relocate.h"
#include "agent/arch/x86_64/stub_area.h"
#include "agent/arch/x86_64/trampoline.h"
#include "agent/arch/x86_64/site_code.h"
#include "agent/arch/x86_64/ucontext.h"

/* The functions below are defined in those headers; here is what each
 * promises.
 *
 * Sites (x86_64/site_code.h).
 *
 * ARCH_SITE_LEN      bytes every site is switched as (a patch op's length)
 * ARCH_BREAKPOINT    the one byte written on a site's first byte while a
 *                    batch rewrites the rest; its trap is resolved by
 *                    patch/trap.c
 */

/* Encode, into out, the instruction at address at that calls stub: an
 * enabled compiled site, whose return address lands past the site.  0 if
 * stub is out of reach (never, for a stub from stub_area_create). */
static inline int arch_site_call(uint8_t out[ARCH_SITE_LEN], uint64_t at, uint64_t stub);
/* Encode the instruction at at that jumps to detour: an enabled
 * relocated entry (the detour makes the call itself).  0 if out of
 * reach. */
static inline int arch_site_jump(uint8_t out[ARCH_SITE_LEN], uint64_t at, uint64_t detour);

/* Signal contexts (x86_64/ucontext.h). */

/* The interrupted thread's PC, and moving it. */
static inline uint64_t arch_ucontext_pc(const ucontext_t *uc);
static inline void arch_ucontext_set_pc(ucontext_t *uc, uint64_t pc);
/* For a SIGTRAP the kernel raised at an ARCH_BREAKPOINT: the address of
 * that byte (the PC has already gone past it). */
static inline uint64_t arch_ucontext_breakpoint(const ucontext_t *uc);
/* Emulate a call at the thread's PC: ret pushed as its return address,
 * the thread continuing at target. */
static inline void arch_ucontext_call(ucontext_t *uc, uint64_t ret, uint64_t target);
/* Emulate a return: the thread continues at the address on top of its
 * stack, popped. */
static inline void arch_ucontext_return(ucontext_t *uc);

/* For a thread whose system call a signal has just ended with EINTR: the
 * PC past its system call instruction, or 0 if the thread is not right
 * past one with EINTR as the call's result (the bytes before the PC are
 * read only when they lie on the PC's page). */
static inline uint64_t arch_ucontext_eintr_syscall(const ucontext_t *uc);
/* Make such a thread, whose PC is pc (as arch_ucontext_eintr_syscall
 * gave it), make system call nr again when the handler returns: the
 * kernel kept its arguments in their registers. */
static inline void arch_ucontext_restart_syscall(ucontext_t *uc, uint64_t pc, long nr);
/* The number of the system call whose instruction ends at pc, when the C
 * library's usual wrapper loaded it as a constant just before (and those
 * bytes lie on the page of the instruction); -1 if not found so. */
static inline long arch_syscall_nr_before(uint64_t pc);

#endif
