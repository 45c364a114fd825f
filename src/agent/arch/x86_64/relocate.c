/* relocate.c - the first instructions of a function, moved into a detour
 * so that a 5-byte jmp can take their place (see relocate.h).
 *
 * Zydis 4 (Debian's libzydis-dev) decodes and re-encodes: it knows every
 * x86-64 encoding, and its absolute encoder recomputes rip-relative
 * displacements and relative branch offsets for an instruction's new
 * address, widening a short jcc when the target moved out of rel8 reach.
 * Writing that by hand (a length decoder, a ModRM walker, branch
 * widening) is what optprobes and Frida's relocator each had to do;
 * nothing measured on the hot path depends on it (it runs once per site,
 * at discovery).
 *
 * Rules (each refusal is counted by its reason):
 *  - the covered bytes are whole instructions, at least 5, inside the
 *    function;
 *  - no direct branch or call of the object lands strictly inside them
 *    (a jump to the entry itself is a call of the function, and is traced
 *    as one);
 *  - none of them is a call (its return would land inside them), a system
 *    call (a sleeping thread's PC would), a ret, an int3, or a branch with
 *    only an 8-bit form (jrcxz, loop);
 *  - every relative operand still reaches its target from the detour, and
 *    the detour fits in RELOC_DETOUR_SIZE bytes.
 * Jump tables are the caller's call (RELOC_JUMP_TABLE): their targets are
 * not in the code. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <Zydis/Zydis.h>

#include "agent/arch/x86_64/relocate.h"

static const char *const reason_names[RELOC_REASONS] = {
	[RELOC_OK] = "relocated",
	[RELOC_TOO_SHORT] = "too short",
	[RELOC_UNDECODABLE] = "undecodable",
	[RELOC_BRANCH_INTO] = "branch into the patch",
	[RELOC_JUMP_TABLE] = "jump table",
	[RELOC_CALL] = "call in the patch",
	[RELOC_SYSCALL] = "syscall in the patch",
	[RELOC_UNMOVABLE] = "instruction not movable",
	[RELOC_CHANGED] = "bytes changed",
	[RELOC_NO_MEMORY] = "no detour memory",
};

const char *reloc_reason_name(enum reloc_reason r)
{
	return r < RELOC_REASONS ? reason_names[r] : "?";
}

static const ZydisDecoder *decoder(void)
{
	static ZydisDecoder d;
	static int ready;

	/* Under the control mutex (discovery), so no race on first use. */
	if (!ready) {
		ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		ready = 1;
	}
	return &d;
}

static int decode(uint64_t at, uint64_t end, ZydisDecodedInstruction *insn, ZydisDecodedOperand *ops)
{
	size_t len = end - at < ZYDIS_MAX_INSTRUCTION_LENGTH ? (size_t)(end - at) : ZYDIS_MAX_INSTRUCTION_LENGTH;
	const void *p = (const void *)(uintptr_t)at;
	if (ops)
		return ZYAN_SUCCESS(ZydisDecoderDecodeFull(decoder(), p, len, insn, ops));
	return ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder(), NULL, p, len, insn));
}

/* A branch or call to an address in its immediate (not through memory:
 * call *slot(%rip) is "relative" too, for its memory operand). */
static int is_direct_branch(const ZydisDecodedInstruction *insn)
{
	return (insn->meta.category == ZYDIS_CATEGORY_COND_BR || insn->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		insn->meta.category == ZYDIS_CATEGORY_CALL) &&
	       insn->raw.imm[0].is_relative;
}

/* A relative branch's target, from the raw immediate. */
static uint64_t branch_target(const ZydisDecodedInstruction *insn, uint64_t at)
{
	return at + insn->length + (uint64_t)insn->raw.imm[0].value.s;
}

int reloc_addrs_add(struct reloc_addrs *a, uint64_t addr)
{
	if (a->cnt == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 4096;
		uint64_t *v = realloc(a->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->cnt++] = addr;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void reloc_addrs_sort(struct reloc_addrs *a)
{
	if (a->cnt > 1)
		qsort(a->v, a->cnt, sizeof(*a->v), u64_cmp);
}

size_t reloc_addrs_lower_bound(const struct reloc_addrs *a, uint64_t x)
{
	size_t lo = 0, hi = a->cnt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void reloc_addrs_free(struct reloc_addrs *a)
{
	free(a->v);
	memset(a, 0, sizeof(*a));
}

int reloc_scan(uint64_t lo, uint64_t hi, struct reloc_addrs *targets, struct reloc_addrs *calls, int *indirect_jumps)
{
	ZydisDecodedInstruction insn;
	int err = 0;

	for (uint64_t at = lo; at < hi && !err;) {
		if (!decode(at, hi, &insn, NULL)) {
			at++; /* padding or data: resynchronize */
			continue;
		}
		if (is_direct_branch(&insn)) {
			err = reloc_addrs_add(targets, branch_target(&insn, at));
			if (!err && insn.meta.category == ZYDIS_CATEGORY_CALL)
				err = reloc_addrs_add(calls, branch_target(&insn, at));
		} else if (insn.mnemonic == ZYDIS_MNEMONIC_JMP && !(insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE)) {
			/* jmp *disp(%rip) is a tail call through a GOT slot;
			 * jmp *%reg or *mem(%reg) reads a table or a computed
			 * label. */
			int rip_slot = insn.raw.modrm.mod == 0 && insn.raw.modrm.rm == 5;
			if (!rip_slot)
				*indirect_jumps = 1;
		}
		at += insn.length;
	}
	return err;
}

enum reloc_reason reloc_plan_entry(uint64_t func, uint64_t site, uint64_t end, const struct reloc_addrs *targets,
				   struct reloc_plan *plan)
{
	ZydisDecodedInstruction insn;
	uint64_t off = 0;

	(void)func;
	memset(plan, 0, sizeof(*plan));
	plan->site = site;
	if (end < site + 5)
		return RELOC_TOO_SHORT;
	while (off < 5) {
		if (site + off >= end || plan->insn_cnt == RELOC_MAX_INSNS)
			return RELOC_TOO_SHORT;
		if (!decode(site + off, end, &insn, NULL))
			return site + off + ZYDIS_MAX_INSTRUCTION_LENGTH > end ? RELOC_TOO_SHORT : RELOC_UNDECODABLE;
		switch (insn.meta.category) {
		case ZYDIS_CATEGORY_CALL:
			return RELOC_CALL;
		case ZYDIS_CATEGORY_SYSCALL:
			return RELOC_SYSCALL;
		case ZYDIS_CATEGORY_RET:
		case ZYDIS_CATEGORY_INTERRUPT:
			return RELOC_UNMOVABLE;
		default:
			break;
		}
		if (insn.mnemonic == ZYDIS_MNEMONIC_SYSENTER || insn.mnemonic == ZYDIS_MNEMONIC_INT)
			return RELOC_SYSCALL;
		if (insn.mnemonic == ZYDIS_MNEMONIC_JRCXZ || insn.mnemonic == ZYDIS_MNEMONIC_JECXZ ||
		    insn.mnemonic == ZYDIS_MNEMONIC_LOOP || insn.mnemonic == ZYDIS_MNEMONIC_LOOPE ||
		    insn.mnemonic == ZYDIS_MNEMONIC_LOOPNE || insn.mnemonic == ZYDIS_MNEMONIC_XBEGIN)
			return RELOC_UNMOVABLE;
		plan->insn_off[plan->insn_cnt++] = (uint8_t)off;
		off += insn.length;
	}
	if (site + off > end)
		return RELOC_TOO_SHORT;
	plan->covered = (uint8_t)off;
	/* The first target past the site, if inside the covered bytes. */
	size_t t = reloc_addrs_lower_bound(targets, site + 1);
	if (t < targets->cnt && targets->v[t] < site + off)
		return RELOC_BRANCH_INTO;
	return RELOC_OK;
}

static int encode_rel32(uint8_t *out, uint8_t opcode, uint64_t at, uint64_t target)
{
	int64_t rel = (int64_t)(target - (at + 5));
	int32_t rel32 = (int32_t)rel;
	if (rel != rel32)
		return 0;
	out[0] = opcode;
	memcpy(out + 1, &rel32, 4);
	return 1;
}

/* Re-encode insn (from `from`) to run at `to`: absolute targets in, Zydis
 * computes the new relative ones.  Its length, or 0. */
static size_t reencode(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops, uint64_t from,
		       uint64_t to, uint8_t *out, size_t room)
{
	ZydisEncoderRequest req;
	uint64_t want = 0;

	if (!ZYAN_SUCCESS(ZydisEncoderDecodedInstructionToEncoderRequest(insn, ops, insn->operand_count_visible,
									  &req)))
		return 0;
	for (uint8_t i = 0; i < insn->operand_count_visible; i++) {
		ZyanU64 abs;
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.base == ZYDIS_REGISTER_RIP) {
			if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, &ops[i], from, &abs)))
				return 0;
			req.operands[i].mem.displacement = (ZyanI64)abs;
			want = abs;
		} else if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative) {
			if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, &ops[i], from, &abs)))
				return 0;
			req.operands[i].imm.u = abs;
			want = abs;
		}
	}
	/* Let the encoder pick the branch width: a jcc rel8 whose target is
	 * now far becomes a jcc rel32. */
	req.branch_type = ZYDIS_BRANCH_TYPE_NONE;
	req.branch_width = ZYDIS_BRANCH_WIDTH_NONE;
	ZyanUSize len = room;
	if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstructionAbsolute(&req, out, &len, to)))
		return 0;
	/* Check by decoding what was written: same mnemonic, same target. */
	ZydisDecodedInstruction back;
	ZydisDecodedOperand back_ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(decoder(), out, len, &back, back_ops)) ||
	    back.mnemonic != insn->mnemonic || back.length != len)
		return 0;
	for (uint8_t i = 0; i < back.operand_count_visible; i++) {
		ZyanU64 abs;
		if (((back_ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && back_ops[i].mem.base == ZYDIS_REGISTER_RIP) ||
		     (back_ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && back_ops[i].imm.is_relative)) &&
		    (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&back, &back_ops[i], to, &abs)) || abs != want))
			return 0;
	}
	return len;
}

enum reloc_reason reloc_emit(const struct reloc_plan *plan, uint64_t detour, uint64_t stub, uint8_t *out,
			     uint8_t detour_off[RELOC_MAX_INSNS])
{
	size_t pos = RELOC_DETOUR_BODY;

	memset(out, 0xcc, RELOC_DETOUR_SIZE);
	out[0] = 0x41; /* push %r11 */
	out[1] = 0x53;
	if (!encode_rel32(out + 2, 0xe8, detour + 2, stub))
		return RELOC_NO_MEMORY;
	out[7] = 0x41; /* pop %r11 */
	out[8] = 0x5b;
	for (uint8_t i = 0; i < plan->insn_cnt; i++) {
		ZydisDecodedInstruction insn;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		uint64_t from = plan->site + plan->insn_off[i];
		size_t room = RELOC_DETOUR_SIZE - 5 - pos;

		if (!decode(from, plan->site + plan->covered, &insn, ops))
			return RELOC_UNDECODABLE;
		detour_off[i] = (uint8_t)pos;
		size_t len;
		if (insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
			len = reencode(&insn, ops, from, detour + pos, out + pos, room);
		} else {
			len = insn.length <= room ? insn.length : 0;
			if (len)
				memcpy(out + pos, (const void *)(uintptr_t)from, len);
		}
		if (!len)
			return RELOC_UNMOVABLE;
		pos += len;
	}
	if (!encode_rel32(out + pos, 0xe9, detour + pos, plan->site + plan->covered))
		return RELOC_NO_MEMORY;
	return RELOC_OK;
}
