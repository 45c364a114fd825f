/* args.h - argument and return-value capture for needle record -A / -R
 * and value filters for -F 'GLOB@argN>VALUE' (args.c). */
#ifndef NEEDLE_ARGS_H
#define NEEDLE_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "common/shm_layout.h"
#include "common/value_spec.h"
#include "needle.h"

#define ARG_ITEMS_MAX VALUE_ITEMS_MAX
#define ARG_STRING_MAX VALUE_STRING_MAX   /* --max-string's ceiling */

struct arg_item {
	uint8_t kind;   /* ARG_KIND_* (shm_layout.h) */
	uint8_t index;  /* argN / fpargN: N; return registers: 0 */
	uint8_t fmt;    /* d u x c p f s, e (enum), b (bool) */
	uint8_t bits;   /* 8 16 32 64 */
	uint8_t shift;  /* byte offset in the register (a struct's field) */
	uint8_t stack;  /* argN, N > 6: a word of the stack, not a register */
	uint16_t reg;   /* byte offset of the register in struct needle_regs,
			 * or of the stack word above the entry's sp */
	uint64_t mask;  /* the value's bits, after the shift */
	uint64_t word;  /* its item word, the same for every call */
};

enum arg_op { ARG_OP_EQ, ARG_OP_NE, ARG_OP_LT, ARG_OP_LE, ARG_OP_GT, ARG_OP_GE };

/* -F 'GLOB@arg2>1000': a call is recorded only if it holds. */
struct arg_cond {
	struct arg_item item;
	uint8_t op;  /* enum arg_op */
	union {
		int64_t s;
		uint64_t u;
		double f;
	} value;
};

struct arg_spec {
	uint8_t entry_cnt, exit_cnt;
	/* Every item of the side is a register value (no string, no stack
	 * word): the recorder writes the block in place, item words from
	 * the table. */
	uint8_t entry_fixed, exit_fixed;
	/* The entry's items are integer registers only and no filter tests
	 * the call: the direct path (recorder_direct.c) writes them. */
	uint8_t entry_direct;
	/* The most words a side's block can take (strings at --max-string):
	 * the room the recorder makes before it writes the block in place. */
	uint16_t entry_words_max, exit_words_max;
	uint8_t has_cond;
	struct arg_cond cond;
	struct arg_item entry[ARG_ITEMS_MAX], exit[ARG_ITEMS_MAX];
};

/* Specs by site id, for the sites known when the recording began. */
struct args_table {
	struct arg_spec **specs;
	uint32_t cnt;
};
extern struct args_table args_table;

/* Build the table from the lines of NEEDLE_ARGS ("GLOB\tA|R\tITEMS[\tSCOPE]",
 * SCOPE "main" for the program's own functions, "main@OFFSET" for the
 * one at that offset of its file, "=DEV:INO@OFFSET" for one of the
 * library file of that identity)
 * and NEEDLE_ARG_FILTERS ("GLOB\tITEM\tOP\tVALUE"); either may be NULL.
 * 0, -EINVAL (a malformed line), -ENOENT (no function matches), -ENOMEM. */
int args_configure(const char *lines, const char *filters);
/* Drop the table: before a new recording (-p attaches again), when no
 * handler of the last one runs any more. */
void args_reset(void);
/* Bytes of a string argument kept (--max-string), at most ARG_STRING_MAX. */
void args_set_max_string(uint32_t bytes);

/* The spec of site, or NULL: what the recorder's handlers ask per call. */
static inline const struct arg_spec *args_for(uint32_t site)
{
	return args_table.specs && site < args_table.cnt ? args_table.specs[site] : NULL;
}

/* The value of it, from the registers the trampoline saved (not for a
 * stack item: see args_payload). */
static inline uint64_t args_value_in(const struct arg_item *it, const struct needle_regs *regs)
{
	uint64_t v = *(const uint64_t *)((const char *)regs + it->reg);
	return (v >> (8 * it->shift)) & it->mask;
}

static inline uint64_t args_value(const struct arg_item *it, const struct needle_ctx *ctx)
{
	return args_value_in(it, &ctx->regs);
}

/* 1 if the call of ctx passes s's filter (or s has none). */
int args_cond_holds(const struct arg_spec *s, const struct needle_ctx *ctx);

/* The data block's words for s's entry (or exit) values in ctx, written
 * at out: at most entry_words_max (exit_words_max).  Returns how many. */
size_t args_payload(const struct arg_spec *s, int at_exit, const struct needle_ctx *ctx, uint64_t *out);

#endif
