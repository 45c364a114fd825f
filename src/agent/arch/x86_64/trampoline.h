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

/* Called by the trampolines with the context they built.  On entry
 * ctx->func is the site; ret_slot points at the traced function's return
 * address.  On exit sp is the stack pointer just after the traced function
 * returned, and needle_dispatch_exit returns where it really returns. */
void needle_dispatch_entry(struct needle_ctx *ctx, uint64_t *ret_slot);
uint64_t needle_dispatch_exit(struct needle_ctx *ctx, uint64_t sp);

#endif
