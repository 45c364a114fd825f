/* relocate.h - moving the first instructions of a function that no
 * compiler prepared into a detour, so that its entry can be switched like
 * a NOP5 site (see relocate.c for the rules and docs/design.md,
 * "Relocated sites"). */
#ifndef NEEDLE_RELOCATE_H
#define NEEDLE_RELOCATE_H

#include <stddef.h>
#include <stdint.h>

/* Why a function's entry cannot be relocated; RELOC_OK when it can.  The
 * names (reloc_reason_name) appear in `needle info` and in benchmarks. */
enum reloc_reason {
	RELOC_OK = 0,
	RELOC_TOO_SHORT,      /* the function ends before 5 bytes of whole instructions */
	RELOC_UNDECODABLE,    /* the decoder does not know the bytes */
	RELOC_BRANCH_INTO,    /* a branch lands inside the bytes the patch covers */
	RELOC_JUMP_TABLE,     /* an indirect jump whose targets cannot be bounded */
	RELOC_CALL,           /* a call among the covered instructions (a return into them) */
	RELOC_SYSCALL,        /* a system call among them (a sleeping thread's PC would be inside) */
	RELOC_UNMOVABLE,      /* ret, int3, jrcxz/loop, a rip-relative operand out of reach... */
	RELOC_CHANGED,        /* the bytes in memory differ from the file's */
	RELOC_NO_MEMORY,      /* no detour memory within reach */
	RELOC_REASONS
};

const char *reloc_reason_name(enum reloc_reason r);

#define RELOC_MAX_INSNS 8
#define RELOC_DETOUR_SIZE 64 /* bytes of detour per site */
/* The detour's first bytes: push %r11; call stub; pop %r11 (the stub
 * loads the site into r11, which the function's callers may hold a value
 * in).  The moved instructions start after them. */
#define RELOC_DETOUR_BODY 9

/* What relocating one entry takes: the covered instructions' boundaries. */
struct reloc_plan {
	uint64_t site;                    /* the address the jmp is written at */
	uint8_t covered;                  /* bytes of whole instructions it covers, >= 5 */
	uint8_t insn_cnt;
	uint8_t insn_off[RELOC_MAX_INSNS]; /* offsets of their starts in [site, site + covered) */
};

/* Decide whether the entry at site (in a function spanning [func, end),
 * whose code is readable at those addresses) can be relocated, given
 * every direct branch target of the object (sorted): RELOC_OK and *plan,
 * or the reason it cannot. */
enum reloc_reason reloc_plan_entry(uint64_t func, uint64_t site, uint64_t end, const uint64_t *targets,
				   size_t target_cnt, struct reloc_plan *plan);

/* Direct branch and call targets of the code in [lo, hi), appended to
 * *v (grown with realloc); *indirect_jumps: 1 if an indirect jmp that is
 * not a tail call through a memory slot (a jump table, a computed goto)
 * is found.  Decoding stops at the first byte it cannot decode.  0 or
 * negative errno. */
int reloc_scan_targets(uint64_t lo, uint64_t hi, uint64_t **v, size_t *cnt, size_t *cap, int *indirect_jumps);
/* The same for the targets of direct calls alone (into *v). */
int reloc_scan_calls(uint64_t lo, uint64_t hi, uint64_t **v, size_t *cnt, size_t *cap);

/* Write the detour for plan at detour (RELOC_DETOUR_SIZE bytes, written
 * into out, which will be placed there):
 *   push %r11; call stub; pop %r11;
 *   the covered instructions, re-encoded for their new place;
 *   jmp site + covered.
 * detour_off[i] receives where covered instruction i starts in the
 * detour, for moving a stopped thread's PC.  RELOC_OK or the reason
 * (RELOC_UNMOVABLE: out of reach, or too long). */
enum reloc_reason reloc_emit(const struct reloc_plan *plan, uint64_t detour, uint64_t stub, uint8_t *out,
			     uint8_t detour_off[RELOC_MAX_INSNS]);

#endif
