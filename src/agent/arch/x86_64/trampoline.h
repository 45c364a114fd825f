/* trampoline.h - the assembly entry and return trampolines and the C
 * functions they call. */
#ifndef NEEDLE_TRAMPOLINE_H
#define NEEDLE_TRAMPOLINE_H

#include <stdint.h>

#include "needle.h"

struct site;

/* Reached from a site's stub with r11 = struct site *. */
void needle_entry_trampoline(void);
/* Reached by the ret of a function whose return address was hijacked. */
void needle_return_trampoline(void);

/* Called by the trampolines.  ret_slot points at the traced function's
 * return address; sp is the stack pointer just after the traced function
 * returned.  needle_dispatch_exit returns where the function really returns. */
void needle_dispatch_entry(struct site *site, struct needle_regs *regs, uint64_t *ret_slot);
uint64_t needle_dispatch_exit(struct needle_regs *regs, uint64_t sp);

#endif
