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
 *  - none of them is a system call (a sleeping thread's PC would be
 *    inside), a ret, an int3, or a branch with only an 8-bit form (jrcxz,
 *    loop); a call only as the last of them, so that its return address,
 *    the original one, lies past the patch: the detour pushes it and jumps
 *    to the callee, and the callee returns into the function, never into
 *    the detour (which may be freed by then);
 *  - every relative operand still reaches its target from the detour, and
 *    the detour fits in RELOC_DETOUR_SIZE bytes.
 * Indirect jumps (reloc_jump_table): a jump table recognized with its
 * bound gives its targets; any other indirect jump is the caller's call
 * (a tail call through a pointer when the stack is as at entry, else
 * refused as RELOC_JUMP_TABLE). */
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
	[RELOC_RETURNS_TWICE] = "returns twice",
	[RELOC_READS_CALLER] = "reads its return address",
	[RELOC_INTERPOSED] = "interposed by needle",
	[RELOC_RUNTIME_CODE] = "V8 embedded builtin",
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

int reloc_scan(uint64_t lo, uint64_t hi, struct reloc_addrs *targets, struct reloc_addrs *calls,
	       struct reloc_addrs *indirect_jumps)
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
				err = reloc_addrs_add(indirect_jumps, at);
		}
		at += insn.length;
	}
	return err;
}

/* Off when the process runs with CET shadow stacks: a call moved as push +
 * jmp pushes nothing on the shadow stack, and the callee's ret would
 * fault. */
static int moved_calls = 1;

void reloc_set_moved_calls(int on)
{
	moved_calls = on;
}

static int uses_rsp(const ZydisDecodedOperand *op)
{
	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
		return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op->reg.value) == ZYDIS_REGISTER_RSP;
	return op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       (op->mem.base == ZYDIS_REGISTER_RSP || op->mem.index == ZYDIS_REGISTER_RSP);
}

/* A near call, direct or through a register or memory that does not
 * depend on rsp. */
static int call_movable(const ZydisDecodedInstruction *insn, uint64_t at, uint64_t end)
{
	ZydisDecodedInstruction full;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	if (insn->mnemonic != ZYDIS_MNEMONIC_CALL || !decode(at, end, &full, ops) || full.operand_count_visible != 1)
		return 0;
	if (ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return ops[0].imm.is_relative;
	return ops[0].size == 64 && !uses_rsp(&ops[0]);
}

/* Why insn (not a call) cannot run elsewhere, or RELOC_OK. */
static enum reloc_reason insn_unmovable(const ZydisDecodedInstruction *insn)
{
	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_SYSCALL:
		return RELOC_SYSCALL;
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_INTERRUPT:
		return RELOC_UNMOVABLE;
	default:
		break;
	}
	if (insn->mnemonic == ZYDIS_MNEMONIC_SYSENTER || insn->mnemonic == ZYDIS_MNEMONIC_INT)
		return RELOC_SYSCALL;
	if (insn->mnemonic == ZYDIS_MNEMONIC_JRCXZ || insn->mnemonic == ZYDIS_MNEMONIC_JECXZ ||
	    insn->mnemonic == ZYDIS_MNEMONIC_LOOP || insn->mnemonic == ZYDIS_MNEMONIC_LOOPE ||
	    insn->mnemonic == ZYDIS_MNEMONIC_LOOPNE || insn->mnemonic == ZYDIS_MNEMONIC_XBEGIN)
		return RELOC_UNMOVABLE;
	return RELOC_OK;
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
		if (insn.meta.category == ZYDIS_CATEGORY_CALL) {
			/* Only as the last covered instruction (see the top),
			 * and not through the stack pointer, which the pushed
			 * return address moves. */
			if (!moved_calls || off + insn.length < 5 || !call_movable(&insn, site + off, end))
				return RELOC_CALL;
		} else {
			enum reloc_reason r = insn_unmovable(&insn);
			if (r != RELOC_OK)
				return r;
		}
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

enum reloc_reason reloc_plan_one(uint64_t at, uint64_t end, struct reloc_plan *plan)
{
	ZydisDecodedInstruction insn;

	memset(plan, 0, sizeof(*plan));
	plan->site = at;
	if (!decode(at, end, &insn, NULL))
		return RELOC_UNDECODABLE;
	if (insn.meta.category == ZYDIS_CATEGORY_CALL)
		return RELOC_CALL;
	enum reloc_reason r = insn_unmovable(&insn);
	if (r != RELOC_OK)
		return r;
	plan->insn_cnt = 1;
	plan->covered = insn.length;
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

/* Re-encode insn (from `from`) to run at `to`, as mnemonic `as` (its own,
 * or jmp for a call): absolute targets in, Zydis computes the new
 * relative ones.  Its length, or 0. */
static size_t reencode(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops, uint64_t from,
		       uint64_t to, uint8_t *out, size_t room, ZydisMnemonic as)
{
	ZydisEncoderRequest req;
	uint64_t want = 0;

	if (!ZYAN_SUCCESS(ZydisEncoderDecodedInstructionToEncoderRequest(insn, ops, insn->operand_count_visible,
									  &req)))
		return 0;
	req.mnemonic = as;
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
	    back.mnemonic != as || back.length != len)
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

enum reloc_reason reloc_emit(const struct reloc_plan *plan, uint64_t detour, uint64_t stub, int jump_to_stub,
			     uint8_t *out, uint8_t detour_off[RELOC_MAX_INSNS])
{
	size_t pos = RELOC_DETOUR_BODY;

	memset(out, 0xcc, RELOC_DETOUR_SIZE);
	out[0] = 0x41; /* push %r11 */
	out[1] = 0x53;
	if (!encode_rel32(out + 2, jump_to_stub ? 0xe9 : 0xe8, detour + 2, stub))
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
		if (insn.meta.category == ZYDIS_CATEGORY_CALL) {
			/* push the original return address (push imm32
			 * sign-extends: the high half is written after), then
			 * jump where the call went. */
			uint64_t ret = from + insn.length;
			uint32_t lo = (uint32_t)ret, hi = (uint32_t)(ret >> 32);
			if (room < 13)
				return RELOC_UNMOVABLE;
			out[pos] = 0x68;
			memcpy(out + pos + 1, &lo, 4);
			memcpy(out + pos + 5, "\xc7\x44\x24\x04", 4); /* movl $imm32, 4(%rsp) */
			memcpy(out + pos + 9, &hi, 4);
			pos += 13;
			len = reencode(&insn, ops, from, detour + pos, out + pos, room - 13, ZYDIS_MNEMONIC_JMP);
		} else if (insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
			len = reencode(&insn, ops, from, detour + pos, out + pos, room, insn.mnemonic);
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

/* The instructions decoded before an indirect jmp, newest last. */
#define TABLE_WINDOW 24

struct window_insn {
	uint64_t at;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

static ZydisRegister family(ZydisRegister r)
{
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
}

static int writes_reg(const struct window_insn *w, ZydisRegister fam)
{
	for (uint8_t i = 0; i < w->insn.operand_count; i++)
		if (w->ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && (w->ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    family(w->ops[i].reg.value) == fam)
			return 1;
	return 0;
}

/* The nearest instruction before w[from] that writes fam, or -1. */
static int def_of(const struct window_insn *w, int from, ZydisRegister fam)
{
	for (int i = from - 1; i >= 0; i--)
		if (writes_reg(&w[i], fam))
			return i;
	return -1;
}

/* The value of a register set by lea disp(%rip) at w[i] (no instruction
 * between it and w[from] writes it), or 0. */
static uint64_t rip_lea_value(const struct window_insn *w, int from, ZydisRegister reg)
{
	int d = def_of(w, from, family(reg));
	uint64_t abs;
	if (d < 0 || w[d].insn.mnemonic != ZYDIS_MNEMONIC_LEA || w[d].ops[1].mem.base != ZYDIS_REGISTER_RIP ||
	    w[d].ops[1].mem.index != ZYDIS_REGISTER_NONE ||
	    !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&w[d].insn, &w[d].ops[1], w[d].at, &abs)))
		return 0;
	return abs;
}

/* The bound of the index a table load at w[load] uses: the immediate of
 * the nearest cmp of that register (or of the one it was copied from),
 * provided nothing else writes it in between.  -1 if none. */
static int64_t index_bound(const struct window_insn *w, int load, ZydisRegister index)
{
	ZydisRegister cur = family(index);
	for (int i = load - 1; i >= 0; i--) {
		const ZydisDecodedInstruction *in = &w[i].insn;
		const ZydisDecodedOperand *o = w[i].ops;
		/* The bound check: cmp $N, %index, then at once an unsigned
		 * ja/jbe (or jae/jb) away from the table: a cmp feeding any
		 * other branch bounds nothing. */
		if (in->mnemonic == ZYDIS_MNEMONIC_CMP && o[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    family(o[0].reg.value) == cur && o[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
			ZydisMnemonic next = i + 1 < load ? w[i + 1].insn.mnemonic : ZYDIS_MNEMONIC_INVALID;
			if (next != ZYDIS_MNEMONIC_JNBE && next != ZYDIS_MNEMONIC_JBE && next != ZYDIS_MNEMONIC_JNB &&
			    next != ZYDIS_MNEMONIC_JB)
				return -1;
			return o[1].imm.is_signed && o[1].imm.value.s < 0 ? -1 : (int64_t)o[1].imm.value.u;
		}
		if (!writes_reg(&w[i], cur))
			continue;
		/* A copy (mov %edx,%eax zero-extends an index compared as
		 * %edx): follow the source. */
		if ((in->mnemonic == ZYDIS_MNEMONIC_MOV || in->mnemonic == ZYDIS_MNEMONIC_MOVSXD ||
		     in->mnemonic == ZYDIS_MNEMONIC_MOVZX) &&
		    o[1].type == ZYDIS_OPERAND_TYPE_REGISTER) {
			cur = family(o[1].reg.value);
			continue;
		}
		return -1;
	}
	return -1;
}

int reloc_jump_table(uint64_t func, uint64_t jmp, int (*readable)(const void *ctx, uint64_t addr, size_t len),
		     const void *ctx, struct reloc_addrs *targets)
{
	/* Static, not on the stack (about 30 KiB) nor allocated per jump:
	 * discovery runs under the control mutex, one caller at a time. */
	static struct window_insn w[TABLE_WINDOW];
	int ret = RELOC_TABLE_UNBOUNDED;
	int n = 0;
	/* Decode from the function's start, as reloc_scan did, keeping the
	 * newest TABLE_WINDOW instructions. */
	int window_has_start = 1; /* w[0] is the function's first instruction */
	for (uint64_t at = func; at <= jmp;) {
		struct window_insn *slot;
		if (n == TABLE_WINDOW) {
			memmove(w, w + 1, (TABLE_WINDOW - 1) * sizeof(*w));
			n--;
			window_has_start = 0;
		}
		slot = &w[n];
		if (!decode(at, jmp + ZYDIS_MAX_INSTRUCTION_LENGTH, &slot->insn, slot->ops)) {
			at++;
			continue;
		}
		slot->at = at;
		n++;
		at += slot->insn.length;
		if (slot->at == jmp)
			break;
	}
	if (!n || w[n - 1].at != jmp)
		goto out;

	/* Where the target comes from: the jmp's own memory operand, or the
	 * instruction that last wrote its register. */
	int k = n - 1, load = -1, relative = 0;
	const ZydisDecodedOperand *mem = NULL;
	uint64_t base = 0;
	const ZydisDecodedOperand *op = &w[k].ops[0];
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
		load = k;
		mem = op;
	} else if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
		int d = def_of(w, k, family(op->reg.value));
		if (d < 0) {
			/* Not written since the function's start: a pointer
			 * passed in.  (A window that lost the start proves
			 * nothing.) */
			if (!window_has_start)
				goto out;
			ret = RELOC_TABLE_NONE;
			goto out;
		}
		const ZydisDecodedInstruction *in = &w[d].insn;
		const ZydisDecodedOperand *o = w[d].ops;
		if (in->mnemonic == ZYDIS_MNEMONIC_ADD && o[1].type == ZYDIS_OPERAND_TYPE_REGISTER) {
			/* add %base, %entry (or the other way round): one of
			 * the two came from movslq (table, index, 4), the other
			 * from lea label(%rip). */
			ZydisRegister a = o[0].reg.value, b = o[1].reg.value;
			for (int swap = 0; swap < 2 && load < 0; swap++) {
				ZydisRegister entry = swap ? b : a, other = swap ? a : b;
				int e = def_of(w, d, family(entry));
				if (e >= 0 && w[e].insn.mnemonic == ZYDIS_MNEMONIC_MOVSXD &&
				    w[e].ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY && w[e].ops[1].size == 32) {
					base = rip_lea_value(w, d, other);
					load = e;
					mem = &w[e].ops[1];
					relative = 1;
				}
			}
			if (load < 0 || !base)
				goto out;
		} else if (in->mnemonic == ZYDIS_MNEMONIC_MOV && o[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
			   o[1].mem.index != ZYDIS_REGISTER_NONE) {
			load = d;
			mem = &o[1];
		} else if (in->mnemonic == ZYDIS_MNEMONIC_MOV && o[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
			   o[1].mem.index == ZYDIS_REGISTER_NONE) {
			/* Loaded from a structure or a variable: a jump through
			 * a pointer, not a table. */
			ret = RELOC_TABLE_NONE;
			goto out;
		} else if (in->mnemonic == ZYDIS_MNEMONIC_MOV && o[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
			   def_of(w, d, family(o[1].reg.value)) < 0 && window_has_start) {
			/* A copy of a pointer passed in. */
			ret = RELOC_TABLE_NONE;
			goto out;
		} else {
			/* Computed some other way (lea base+offset, an add from
			 * memory...): it might be a table's entry. */
			goto out;
		}
	} else {
		goto out;
	}
	if (mem->mem.index == ZYDIS_REGISTER_NONE || mem->mem.scale != (relative ? 4 : 8) ||
	    mem->mem.base == ZYDIS_REGISTER_RIP)
		goto out;
	uint64_t table = (uint64_t)mem->mem.disp.value;
	if (mem->mem.base != ZYDIS_REGISTER_NONE) {
		uint64_t t = rip_lea_value(w, load, mem->mem.base);
		if (!t)
			goto out;
		table += t;
	}
	int64_t bound = index_bound(w, load, mem->mem.index);
	if (bound < 0 || bound >= 65536)
		goto out;
	size_t cnt = (size_t)bound + 1, esize = relative ? 4 : 8;
	/* Read in place (no system call a sandboxed process might forbid),
	 * once the caller says the whole table is mapped readable. */
	if (!readable(ctx, table, cnt * esize))
		goto out;
	ret = RELOC_TABLE_BOUNDED;
	for (size_t i = 0; i < cnt && ret == RELOC_TABLE_BOUNDED; i++) {
		int32_t r;
		uint64_t a;
		if (relative) {
			memcpy(&r, (const void *)(uintptr_t)(table + i * 4), 4);
			a = base + (uint64_t)(int64_t)r;
		} else {
			memcpy(&a, (const void *)(uintptr_t)(table + i * 8), 8);
		}
		if (reloc_addrs_add(targets, a))
			ret = -ENOMEM;
	}
out:
	return ret;
}
