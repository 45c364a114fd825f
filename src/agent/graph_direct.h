/* graph_direct.h - the recorder's direct path (graph_direct.c and
 * graph_trampoline.S): what the rest of the top layer calls. */
#ifndef NEEDLE_GRAPH_DIRECT_H
#define NEEDLE_GRAPH_DIRECT_H

#include <stdint.h>

/* 0 (NEEDLE_GRAPH_ASM=0): every call stays in C; set before any site is
 * patched. */
extern int graph_asm_enabled;

/* Nonzero once a site was handed to the assembly path (trampoline.S). */
extern uint8_t needle_graph_live;

/* The calling trampolines' direct path (trampoline.S's CALLING_DIRECT)
 * for a site whose direct_graph byte is 0, in C: the recorder's plain
 * call (which hands its site to the assembly path), else
 * needle_direct_dispatch_entry's answer for a calling site. */
struct site;
struct needle_regs;
int needle_graph_calling_c(struct site *site, uint64_t *ret_slot, const struct needle_regs *regs);

#endif
