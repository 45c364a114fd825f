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
	RELOC_RETURNS_TWICE,  /* vfork (setjmp and getcontext are entry-only sites) */
	RELOC_READS_CALLER,   /* no longer given (dlopen, dlsym are entry-only sites); kept: the numbers are the API's */
	RELOC_INTERPOSED,     /* libneedle interposes it: its interposer calls it mid-switch or mid-unwind */
	RELOC_RUNTIME_CODE,   /* V8's embedded builtins: copied at run time, walked and left by V8's own rules */
	RELOC_REASONS
};

const char *reloc_reason_name(enum reloc_reason r);

/* Whether a call that ends the covered bytes may be moved (push of the
 * original return address + jmp): not under CET shadow stacks. */
void reloc_set_moved_calls(int on);

#define RELOC_MAX_INSNS 8
#define RELOC_DETOUR_SIZE 64 /* bytes of detour per site */
/* The detour's first bytes: push %r11; call (or jmp) stub; pop %r11 (the stub
 * loads the site into r11, which the function's callers may hold a value
 * in).  The moved instructions start after them. */
#define RELOC_DETOUR_BODY 9

/* What relocating one entry takes: the covered instructions' boundaries. */
struct reloc_plan {
	uint64_t site;                    /* the address the jmp is written at */
	uint8_t covered;                  /* bytes of whole instructions it covers, >= 5 (a door: one) */
	uint8_t insn_cnt;
	uint8_t insn_off[RELOC_MAX_INSNS]; /* offsets of their starts in [site, site + covered) */
};

/* A growing list of code addresses. */
struct reloc_addrs {
	uint64_t *v;
	size_t cnt, cap;
};

int reloc_addrs_add(struct reloc_addrs *a, uint64_t addr);
void reloc_addrs_sort(struct reloc_addrs *a);
/* Index of the first address >= x in a sorted list (cnt if none). */
size_t reloc_addrs_lower_bound(const struct reloc_addrs *a, uint64_t x);
void reloc_addrs_free(struct reloc_addrs *a);

/* Decide whether the entry at site (in a function spanning [func, end),
 * whose code is readable at those addresses) can be relocated, given
 * every branch target of the object (sorted): RELOC_OK and *plan,
 * or the reason it cannot. */
enum reloc_reason reloc_plan_entry(uint64_t func, uint64_t site, uint64_t end, const struct reloc_addrs *targets,
				   struct reloc_plan *plan);

/* The plan to move the one instruction at `at` (code readable up to
 * end), by the rules of an entry's covered instructions, calls refused:
 * for a door past a sleeping thread's system call (sleeper_door.c), run
 * from the detour's body.  RELOC_OK or the reason. */
enum reloc_reason reloc_plan_one(uint64_t at, uint64_t end, struct reloc_plan *plan);

/* Decode the code in [lo, hi) once: the targets of its direct branches
 * and calls go to *targets, those of its direct calls alone to *calls,
 * the addresses of its indirect jmps that are not tail calls through a
 * memory slot (jump tables, computed gotos, jumps through a pointer) to
 * *indirect_jumps.  A byte that does not decode is stepped over.  0 or
 * negative errno. */
int reloc_scan(uint64_t lo, uint64_t hi, struct reloc_addrs *targets, struct reloc_addrs *calls,
	       struct reloc_addrs *indirect_jumps);

/* Where the indirect jmp at jmp (in the function starting at func) reads
 * its target from, found in the instructions just before it:
 *   - a jump table a compiler emits for a switch or a computed goto:
 *     movslq (table, index, 4) added to lea label(%rip), or 8-byte
 *     entries read by mov or by the jmp itself, with the index bounded
 *     by a cmp $N before: RELOC_TABLE_BOUNDED, its N + 1 targets added
 *     to *targets (entries read from memory, as the jmp will, once
 *     readable(ctx, addr, len) says the table lies in mapped memory);
 *   - a table whose base or bound is not found so: RELOC_TABLE_UNBOUNDED;
 *   - a register loaded from a structure or passed in, not a table:
 *     RELOC_TABLE_NONE (a jump through a pointer: a tail call when the
 *     stack is as at entry, which the caller checks).
 * (or negative errno).  The instructions are taken in address
 * order: the compilers emit the bound check and the table load as one
 * straight sequence before the jmp. */
enum reloc_table {
	RELOC_TABLE_NONE,
	RELOC_TABLE_BOUNDED,
	RELOC_TABLE_UNBOUNDED,
};
int reloc_jump_table(uint64_t func, uint64_t jmp, int (*readable)(const void *ctx, uint64_t addr, size_t len),
		     const void *ctx, struct reloc_addrs *targets);

/* Write the detour for plan at detour (RELOC_DETOUR_SIZE bytes, written
 * into out, which will be placed there):
 *   push %r11; call stub (jmp stub, when jump_to_stub); pop %r11;
 *   the covered instructions, re-encoded for their new place;
 *   jmp site + covered.
 * With jump_to_stub the pop is never run: the calling trampoline enters
 * the body itself, with r11 put back (trampoline.S).
 * detour_off[i] receives where covered instruction i starts in the
 * detour, for moving a stopped thread's PC.  RELOC_OK or the reason
 * (RELOC_UNMOVABLE: out of reach, or too long). */
enum reloc_reason reloc_emit(const struct reloc_plan *plan, uint64_t detour, uint64_t stub, int jump_to_stub,
			     uint8_t *out, uint8_t detour_off[RELOC_MAX_INSNS]);

#endif
