/* dispatch.h - the C half of the trampolines (dispatch.c): what the
 * assembly calls, and what the rest of the agent asks of dispatch. */
#ifndef NEEDLE_DISPATCH_H
#define NEEDLE_DISPATCH_H

#include <stdint.h>

#include "needle.h"

/* Called by the trampolines with the context they built.  On entry
 * ctx->func is the site; ret_slot points at the traced function's return
 * address.  On exit sp is the stack pointer just after the traced function
 * returned, and needle_dispatch_exit returns where it really returns. */
void needle_dispatch_entry(struct needle_ctx *ctx, uint64_t *ret_slot);
uint64_t needle_dispatch_exit(struct needle_ctx *ctx, uint64_t sp);
/* Called by the exit trampoline: ctx->func is the exit site, sp the stack
 * pointer the function's return (or sibling call's jmp) leaves. */
void needle_dispatch_exit_site(struct needle_ctx *ctx, uint64_t sp);

/* The forced-unwind path through a hijacked return (unwind.c). */
uint64_t needle_unwind_pop(uint64_t sp);

struct thread_state;

/* Once, at start-up, before any stub is made. */
void dispatch_init(void);
/* 0 when return addresses cannot be hijacked (CET shadow stacks). */
int dispatch_returns_hookable(void);

#endif
