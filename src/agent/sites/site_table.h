/* site_table.h - every patchable function entry known to the process.
 *
 * Sites live in fixed-size chunks that are never freed or moved, so a
 * struct site * stays valid for the life of the process (stubs embed it).
 * A sorted index by address answers the trap handler's binary search; a
 * sorted index by name answers exact-name attach requests.  Both indexes
 * are replaced, never modified, when objects are discovered. */
#ifndef NEEDLE_SITE_TABLE_H
#define NEEDLE_SITE_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/arch/arch.h"
#include "needle.h"

struct module;
struct consumer_list;

/* Exit sites: the compiler's patchable instructions at a function's
 * exits (gcc -minstrument-return=nop5 -mrecord-return: a NOP5 before every
 * ret and every sibling-call jmp; LLVM XRay's exit and tail-call sleds).
 * They are struct sites too (the patcher and the trap handler treat them
 * like entries) but live outside the site table: no id, no name index,
 * never seen by the API.  Their forms follow the public ones.  Before a
 * ret only the return value is live (gcc turns -fipa-ra off under -pg,
 * and XRay's exit sled is known to LLVM's register allocator), so those
 * save little; before a sibling call every register may be. */
enum site_exit_form {
	SITE_EXIT_NOP5_RET = 16,  /* NOP5 right before a ret: call stub, back onto the ret */
	SITE_EXIT_XRAY_RET = 17,  /* XRay exit sled, "ret; 10 bytes of NOPs", rewritten once
				   * (threads stopped) into "NOP5; ret": then as above */
	SITE_EXIT_NOP5_JMP = 18,  /* NOP5 before a sibling call (any other instruction) */
	SITE_EXIT_XRAY_TAIL = 19, /* XRay tail-call sled: "jmp .+11" over NOPs, like an entry sled */
};

struct site {
	struct needle_func func; /* first: the trampoline hands &site->func to handlers */
	/* The direct path declined this site for a reason that holds until
	 * its consumer list or their handlers change (dispatch_direct.c sets
	 * it, link.c clears it when they do): the entry trampoline skips the
	 * try.  Read by the trampoline at SITE_DIRECT_SKIP_OFFSET. */
	_Atomic uint8_t direct_skip;
	/* The recorder's C path took a plain call of this site
	 * (SITE_GRAPH_ASM: the calling trampoline tries the recorder's
	 * assembly path first), or found a reason in the site itself why it
	 * never will (SITE_GRAPH_C: a flag, a spec the assembly does not
	 * write): agent/graph_direct.c sets it, link.c clears it with
	 * direct_skip.  A hint only: the assembly path tests every condition
	 * on every call.  Read at SITE_DIRECT_GRAPH_OFFSET. */
	_Atomic uint8_t direct_graph;
	struct module *module;
	uint64_t func_size; /* bytes, from the symbol or the function's extent (0: unknown) */
	uint64_t stub;      /* this site's stub: the CALL's (or JMP's) target */
	/* An entry that reaches its stub by a JMP, not a CALL (a compiled
	 * entry's own bytes, a relocated entry's detour): the calling
	 * trampoline (trampoline.S) calls the function's code past the site
	 * (or the detour's body), so that its return is predicted.  Set at
	 * discovery, with the stub; NEEDLE_CALLING=0 keeps every entry a
	 * CALL. */
	uint8_t jmp_entry;
	/* A function that finds its caller by its return address (dlopen,
	 * dlsym): its return is never hooked, its entry handlers see
	 * NEEDLE_ENTRY_NO_EXIT | NEEDLE_ENTRY_NO_EXIT_FUNC, and direct_skip
	 * stays set (the direct paths hook returns).  Set at discovery. */
	uint8_t entry_only;
	/* The object's build marked the function for tracing (a compiled
	 * form; relocated: gcc -pg's call of mcount).  Set at discovery. */
	uint8_t compiler_marked;
	_Atomic(struct consumer_list *) consumers; /* read by dispatch under RCU */
	uint8_t form;       /* enum needle_site_form */
	uint8_t load_len;   /* bytes rewritten by normalization (5, or 6 for 6-byte fentry calls) */
	uint8_t off_bytes[ARCH_SITE_LEN];
	uint8_t enabled;    /* the patcher's view: bytes are CALL (1) or NOP (0) */
	uint8_t unusable;   /* its bytes could not be normalized: never patched */
	uint8_t gone;       /* its object was unloaded (dlclose): in no index, never patched */
	_Atomic uint8_t want_call; /* what a thread trapped on this site's int3 emulates */
	/* NEEDLE_FORM_RELOCATED: the function's first instructions, covered
	 * bytes of them, run in the detour (call or jmp stub; the
	 * instructions moved; jmp back), and the site is switched between
	 * those bytes and a jmp to the detour.  insn_off/detour_off: where
	 * each covered instruction starts here and there, for moving a
	 * stopped thread. */
	uint8_t covered;
	uint8_t insn_cnt;
	uint8_t insn_off[RELOC_MAX_INSNS];
	uint8_t detour_off[RELOC_MAX_INSNS];
	uint64_t detour;
	/* An entry site whose function has exit sites: all of them, and
	 * whether they are CALLs now (set by link.c after the batch that
	 * enables them, cleared before the batch that disables them).  While
	 * it is set, an entry pushes a shadow frame but leaves the return
	 * address alone; the exit site pops it (dispatch.c). */
	struct site **exits;
	uint32_t exit_cnt;
	_Atomic uint8_t exits_live;
	/* An exit site: the entry site of its function. */
	struct site *owner;
	/* site_names.c: a C++ function's demangled name without and with
	 * its parameter list, one after the other ("f\0f(int)"); "" when
	 * the symbol is not one; NULL until a pattern first needed it. */
	char *cxx_name;
	/* A calling entry's second stub (0: none), which leads to the probe
	 * path itself rather than to the calling trampoline: the site jumps
	 * there while its only consumer is one live entry-only consumer
	 * (link.c's op_for), saving the calling trampoline's tests.  Both
	 * stubs serve any consumers right (the probe path declines to the
	 * calling trampoline's tests), so which one the bytes name is a
	 * matter of speed. */
	uint64_t probe_stub;
};

_Static_assert(offsetof(struct site, direct_skip) == SITE_DIRECT_SKIP_OFFSET &&
		       offsetof(struct site, direct_graph) == SITE_DIRECT_GRAPH_OFFSET,
	       "trampoline_layout.h");
_Static_assert(offsetof(struct site, detour) == SITE_DETOUR_OFFSET && DETOUR_BODY_OFFSET == RELOC_DETOUR_BODY,
	       "trampoline_layout.h");
_Static_assert(offsetof(struct site, func.site_addr) == SITE_ADDR_OFFSET && SITE_LEN == ARCH_SITE_LEN,
	       "trampoline_layout.h");

#define SITE_GRAPH_C 2
_Static_assert(SITE_PROBE_ASM != SITE_GRAPH_C && SITE_PROBE_ASM != SITE_GRAPH_ASM, "trampoline_layout.h");
_Static_assert(SITE_GRAPH_ASM == 1, "the exit's compare in agent/graph_trampoline.S");

static inline int site_is_exit(const struct site *s)
{
	return s->form >= SITE_EXIT_NOP5_RET;
}

/* Only the return value is live at the exit (see site_exit_form). */
static inline int site_exit_returns(const struct site *s)
{
	return s->form == SITE_EXIT_NOP5_RET || s->form == SITE_EXIT_XRAY_RET;
}

/* Where a thread whose PC is pc, inside site s's covered bytes, continues
 * so that it runs the same instructions: the site's end for NOP forms
 * (the bytes it skips are NOPs), the matching place in the detour for a
 * relocated site.  pc itself if it is not inside. */
static inline uint64_t site_pc_outside(const struct site *s, uint64_t pc)
{
	uint64_t at = s->func.site_addr;
	/* (An exit site's 5 bytes are one instruction, or never run.) */
	if (s->form != NEEDLE_FORM_RELOCATED)
		return pc > at && pc < at + ARCH_SITE_LEN ? at + ARCH_SITE_LEN : pc;
	for (uint8_t i = 1; i < s->insn_cnt; i++)
		if (pc == at + s->insn_off[i])
			return s->detour + s->detour_off[i];
	return pc;
}

/* Append a site; the table assigns its id.  Returns NULL when full. */
struct site *site_table_add(const struct site *proto);
struct site *site_table_get(uint32_t id);
uint32_t site_table_count(void);

/* Forget the sites added since the table held count: only for sites that
 * no index, stub or patch has seen yet (a discovery that failed). */
void site_table_truncate(uint32_t count);

/* Rebuild the address and name indexes after a round of site_table_add. */
int site_table_reindex(void);

/* Exit sites (in no id order and no name index) that the address index
 * must hold, so that the trap handler finds them: v[0..n), for good.
 * Takes effect at the next reindex.  0 or -ENOMEM. */
int site_table_add_exits(struct site *v, uint32_t n);

/* Site (entry or exit) whose 5 bytes start at addr, or NULL.
 * Async-signal-safe. */
struct site *site_table_find_addr(uint64_t addr);
/* Entry site whose function starts at func_ip, or NULL. */
struct site *site_table_find_func(uint64_t func_ip);
/* The sites of functions named exactly name (static functions of several
 * objects may share one): *cnt of them.  Valid until the next reindex. */
struct site *const *site_table_name_range(const char *name, size_t *cnt);

#endif
