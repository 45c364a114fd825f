// header_cxx.cpp - include/needle.h compiles as C++11 (-pedantic), with the
// same layout as in C.
#include <cstddef>

#include "needle.h"

extern "C" int header_cxx_regs_ok(void)
{
	struct needle_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.regs.args[0] = 7;
	ctx.regs.rsi = 8;
	return sizeof(struct needle_ctx) == 240 && offsetof(struct needle_ctx, is_exit) == 200 &&
	       ctx.regs.rdi == 7 && ctx.regs.args[1] == 8 && needle_arg(&ctx, 0) == 7 &&
	       needle_arg(&ctx, 1) == 8 && NEEDLE_VERSION >= NEEDLE_VERSION_CODE(1, 0, 0);
}
