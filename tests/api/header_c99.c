/* header_c99.c - include/needle.h compiles as strict C99 (-pedantic), and
 * the named argument registers alias args[]. */
#include <stddef.h>

#include "needle.h"

int header_c99_regs_ok(void)
{
	struct needle_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.regs.args[3] = 33;
	ctx.regs.r9 = 99;
	return sizeof(struct needle_regs) == 192 && offsetof(struct needle_regs, args) == 0 &&
	       ctx.regs.rcx == 33 && ctx.regs.args[5] == 99 && needle_arg(&ctx, 3) == 33 &&
	       needle_arg(&ctx, 5) == 99 && needle_arg(&ctx, 6) == 0;
}
