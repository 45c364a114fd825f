/* trampoline.h - the assembly entry and return trampolines and the C
 * functions they call. */
#ifndef NEEDLE_TRAMPOLINE_H
#define NEEDLE_TRAMPOLINE_H

#include <stdint.h>

#include "needle.h"

struct site;

/* Reached from a site's stub with r11 = struct site *.  The code up to
 * needle_entry_trampoline_end is position-independent and is copied into
 * every stub area. */
void needle_entry_trampoline(void);
extern const char needle_entry_trampoline_end[];
extern const char needle_entry_dispatch_slot[];
/* Reached by the ret of a function whose return address was hijacked. */
void needle_return_trampoline(void);

/* Called by the trampolines with the context they built.  On entry
 * ctx->func is the site; ret_slot points at the traced function's return
 * address.  On exit sp is the stack pointer just after the traced function
 * returned, and needle_dispatch_exit returns where it really returns. */
void needle_dispatch_entry(struct needle_ctx *ctx, uint64_t *ret_slot);
uint64_t needle_dispatch_exit(struct needle_ctx *ctx, uint64_t sp);

/* The forced-unwind path through a hijacked return (unwind.c). */
void needle_unwind_landing(void);
uint64_t needle_unwind_pop(uint64_t sp);

/* Hooks the dispatcher needs from the rest of the agent. */
void dispatch_init(void);
/* 0 when return addresses cannot be hijacked (CET shadow stacks). */
int dispatch_returns_hookable(void);

#endif
