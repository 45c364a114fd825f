/* dispatch_direct.h - the direct path's two entry points, called by the
 * trampolines before their full path (dispatch_direct.c). */
#ifndef NEEDLE_DISPATCH_DIRECT_H
#define NEEDLE_DISPATCH_DIRECT_H

#include <stdint.h>

struct site;
struct needle_regs;

/* A compiled entry site's call: 1 when the site's only consumer's direct
 * entry handler took it (the frame, if the exit is wanted, pushed and the
 * return hijacked as the full path would), 0 to go the full path.  From
 * the calling trampoline (calling = 1), a call whose return would be
 * hijacked returns 2 instead, with the frame pushed and the slot left
 * alone: the trampoline calls the function.  ret_slot points at the
 * traced function's return address; regs at the argument registers as
 * the trampoline saved them (struct needle_regs's integer part only). */
int needle_direct_dispatch_entry(struct site *site, uint64_t *ret_slot, const struct needle_regs *regs, int calling);
/* A hijacked return at sp: where the function really returns, once the
 * direct exit handler took it and the frame is popped; 0 to go the full
 * path. */
uint64_t needle_direct_dispatch_exit(uint64_t sp);
/* An exit site right before a ret (x, the exit site), sp the stack
 * pointer the return leaves: 1 when the direct exit handler took it and
 * the frame is popped, 0 to go the full path. */
int needle_direct_dispatch_exit_site(const struct site *x, uint64_t sp);

/* 0: sites are not handed to the probe path's assembly (agent.c). */
extern int dispatch_probe_asm_enabled __attribute__((visibility("hidden")));
/* The probe path's entry from a calling site (probe_trampoline.S): what
 * a site's probe stub leads to. */
void needle_probe_calling(void) __attribute__((visibility("hidden")));

/* CET shadow stacks are on: no return is hijacked (dispatch.c). */
extern int dispatch_shadow_stack_enabled __attribute__((visibility("hidden")));

#endif
