/* trampoline_layout.h - what the trampolines read of the structures C
 * defines, as constants the assembler can use (trampoline.S includes this
 * file; the C side asserts each one against its structure). */
#ifndef NEEDLE_X86_64_TRAMPOLINE_LAYOUT_H
#define NEEDLE_X86_64_TRAMPOLINE_LAYOUT_H

/* struct site's direct_skip byte (sites/site_table.h): nonzero, the entry
 * trampoline goes straight to the full path. */
#define SITE_DIRECT_SKIP_OFFSET 32
/* struct site's direct_graph byte: SITE_GRAPH_ASM (site_table.h), the
 * calling trampoline tries the recorder's own path
 * (agent/graph_trampoline.S) first. */
#define SITE_DIRECT_GRAPH_OFFSET 33
#define SITE_GRAPH_ASM 1
/* ... or SITE_PROBE_ASM: the site's only consumer is entry only
 * (NEEDLE_ATTACH_ENTRY_ONLY), and the calling trampoline tries the probe
 * path (dispatch/probe_trampoline.S) first; dispatch_direct.c sets it,
 * link.c clears it with direct_skip. */
#define SITE_PROBE_ASM 3
/* struct site's func.site_addr: where the site's 5 bytes are; the
 * function's own code resumes right after them. */
#define SITE_ADDR_OFFSET 8
#define SITE_LEN 5
/* struct site's detour (a relocated site's moved instructions), and where
 * in it they start (relocate.h's RELOC_DETOUR_BODY): the calling
 * trampoline of a relocated site runs them from there. */
#define SITE_DETOUR_OFFSET 112
#define DETOUR_BODY_OFFSET 9

#endif
