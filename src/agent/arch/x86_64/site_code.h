/* site_code.h - x86-64's side of arch.h's sites: a site is 5 bytes, the
 * length of a CALL rel32, of a JMP rel32 and of the NOP5 they replace;
 * the breakpoint is int3, one byte, so that writing it is atomic on any
 * alignment and a thread sees the old instruction or the int3, never half
 * of either. */
#ifndef NEEDLE_X86_64_SITE_CODE_H
#define NEEDLE_X86_64_SITE_CODE_H

#include <stdint.h>

#include "agent/arch/x86_64/insn.h"

#define ARCH_SITE_LEN INSN_SITE_LEN
#define ARCH_BREAKPOINT INSN_INT3

static inline int arch_site_call(uint8_t out[ARCH_SITE_LEN], uint64_t at, uint64_t stub)
{
	return insn_encode_call(out, at, stub);
}

static inline int arch_site_jump(uint8_t out[ARCH_SITE_LEN], uint64_t at, uint64_t detour)
{
	return insn_encode_jmp(out, at, detour);
}

#endif
