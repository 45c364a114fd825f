/* module.h - loaded objects (the main executable and shared objects) that
 * hold sites, found through dl_iterate_phdr. */
#ifndef NEEDLE_MODULE_H
#define NEEDLE_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/arch/arch.h"

#define MODULE_MAX_EXEC 4
#define MODULE_MAX_LOAD 8

struct module_span {
	uint64_t lo, hi; /* runtime addresses, page aligned */
	int prot;        /* PROT_* of the segment as loaded */
};

struct module {
	char *path;
	uint64_t bias;
	struct module_span exec[MODULE_MAX_EXEC]; /* executable PT_LOAD segments */
	int exec_cnt;
	struct module_span load[MODULE_MAX_LOAD]; /* every PT_LOAD segment (data that code reaches, tables) */
	int load_cnt;
	char *strings;        /* symbol names of this module's sites */
	uint32_t first_site, site_cnt;
	struct stub_span stubs;
	struct stub_span detours;     /* relocated sites' detours */
	struct site *exit_sites;      /* the compiler's exits (exit_sites.c), never freed */
	uint32_t exit_cnt;
	/* Relocation: functions tried (those without a compiled site), sites
	 * made, and the refusals by reason (enum reloc_reason). */
	uint32_t reloc_found, reloc_sites;
	uint32_t reloc_refused[RELOC_REASONS];
	/* Code in the object that a runtime copies and runs by its own
	 * rules (V8's embedded builtins), [foreign_lo, foreign_hi), empty
	 * when none: never patched, and a return into it is never hooked
	 * (code_map.h). */
	uint64_t foreign_lo, foreign_hi;
	struct module *next;
	/* Its file's build id, build_id_len bytes (0: none), set by
	 * discovery (last: the direct paths' assembly knows the fields
	 * above by offset). */
	uint8_t build_id[32];
	uint8_t build_id_len;
};

struct discovery;
struct site;

/* Does [addr, addr + len) lie in one of m's executable segments? */
static inline int module_in_exec(const struct module *m, uint64_t addr, size_t len)
{
	for (int i = 0; i < m->exec_cnt; i++)
		if (addr >= m->exec[i].lo && addr + len <= m->exec[i].hi)
			return 1;
	return 0;
}

/* What one round of discovery found, one entry per new object. */
struct discovery_set {
	struct discovery *v;
	size_t cnt;
};

/* Find objects loaded since the last call, discover their sites and add
 * them to the indexes.  Sites that need rewriting before use (gcc NOPs,
 * fentry calls) are listed in *set for the patching layer to prepare
 * (link/refresh.c); free it with discovery_set_free.  Returns the number
 * of new sites or a negative errno (the objects found before the error
 * are in *set all the same).  Caller holds the control mutex. */
int module_discover_new(struct discovery_set *set);
void discovery_set_free(struct discovery_set *set);

/* Which of the new objects module_discover_new takes (the others are
 * left for a later call): all of them; only the program and the C
 * library (an attach whose first events should not wait for every
 * library's functions to be decoded, 0.3 s and more in a server that
 * maps twenty); one, the first in the loader's order, after which the
 * policy turns to none (so that the refresh inside a link update that
 * follows takes nothing more); or none. */
enum module_take { MODULE_TAKE_ALL, MODULE_TAKE_PROGRAM_AND_LIBC, MODULE_TAKE_ONE, MODULE_TAKE_NONE };
void module_discover_take(enum module_take take);
/* How many new objects the last module_discover_new left for later. */
size_t module_left_for_later(void);

/* Executable span of a known module holding addr, or NULL. */
const struct module_span *module_exec_span(uint64_t addr);

struct module *module_list(void);

/* Forget objects that are no longer loaded (after dlclose): their sites
 * are marked gone and leave the indexes, so that an object loaded at the
 * same addresses is discovered afresh.  Returns how many were forgotten,
 * or a negative errno (then the old indexes stay).  Caller holds the
 * control mutex. */
int module_forget_unloaded(void);

#endif
