/* insn.h - the few x86-64 instruction encodings the patcher reads and
 * writes at function entry sites.  Code outside src/agent/arch reaches
 * them through arch.h: the site forms discovery matches, and the bytes
 * normalization writes; a site's call or jmp and the batch's int3 it
 * takes from site_code.h's arch_ names. */
#ifndef NEEDLE_INSN_H
#define NEEDLE_INSN_H

#include <stdint.h>
#include <string.h>

#define INSN_SITE_LEN 5         /* every site is switched as 5 bytes */
#define INSN_INT3 0xcc
#define INSN_CALL_REL32 0xe8
#define INSN_JMP_REL32 0xe9
#define INSN_NOP1 0x90
#define INSN_RET 0xc3

/* nopl 0x0(%rax,%rax,1): the canonical 5-byte NOP */
static const uint8_t __attribute__((unused)) insn_nop5[INSN_SITE_LEN] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const uint8_t __attribute__((unused)) insn_endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

/* Any 5-byte "nopl disp8(%rax,%rax,1)": clang writes a non-zero disp8. */
static inline int insn_is_nop5(const uint8_t *p)
{
	return p[0] == 0x0f && p[1] == 0x1f && p[2] == 0x44 && p[3] == 0x00;
}

/* LLVM XRay's entry sled, 11 bytes: "jmp .+11" over a 9-byte nopw whose
 * displacement carries the sled version.  needle rewrites the 9 bytes
 * (never executed while the jmp is there) into a 3-byte and a 6-byte NOP,
 * so that the first 5 bytes switch like a NOP5 site: off, "jmp .+11;
 * nopl (%rax)"; on, "call stub", returning onto the 6-byte NOP. */
#define INSN_XRAY_SLED_LEN 11
static const uint8_t __attribute__((unused)) insn_xray_off[INSN_SITE_LEN] = { 0xeb, 0x09, 0x0f, 0x1f, 0x00 };
static const uint8_t __attribute__((unused)) insn_nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };

static inline int insn_is_xray_sled(const uint8_t *p)
{
	/* As clang emits it, or as needle left it. */
	return p[0] == 0xeb && p[1] == 0x09 &&
	       ((p[2] == 0x66 && p[3] == 0x0f && p[4] == 0x1f && p[5] == 0x84 && p[6] == 0x00) ||
		(!memcmp(p, insn_xray_off, INSN_SITE_LEN) && !memcmp(p + 5, insn_nop6, 6)));
}

static inline int insn_is_gcc_nops(const uint8_t *p)
{
	return p[0] == INSN_NOP1 && p[1] == INSN_NOP1 && p[2] == INSN_NOP1 &&
	       p[3] == INSN_NOP1 && p[4] == INSN_NOP1;
}

static inline int insn_is_endbr64(const uint8_t *p)
{
	return memcmp(p, insn_endbr64, sizeof(insn_endbr64)) == 0;
}

static inline int32_t insn_read_rel32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int insn_encode_rel32(uint8_t out[INSN_SITE_LEN], uint8_t opcode, uint64_t at, uint64_t target)
{
	int64_t rel = (int64_t)(target - (at + INSN_SITE_LEN));
	int32_t rel32 = (int32_t)rel;

	if (rel != rel32)
		return 0;
	out[0] = opcode;
	memcpy(out + 1, &rel32, sizeof(rel32));
	return 1;
}

/* Encode "call target" placed at address at; 0 if out of rel32 reach. */
static inline int insn_encode_call(uint8_t out[INSN_SITE_LEN], uint64_t at, uint64_t target)
{
	return insn_encode_rel32(out, INSN_CALL_REL32, at, target);
}

/* Encode "jmp target" (a relocated site's way to its detour). */
static inline int insn_encode_jmp(uint8_t out[INSN_SITE_LEN], uint64_t at, uint64_t target)
{
	return insn_encode_rel32(out, INSN_JMP_REL32, at, target);
}

#endif
