/* args.h - argument and return-value capture for needle record -A / -R
 * (args.c). */
#ifndef NEEDLE_ARGS_H
#define NEEDLE_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "common/shm_layout.h"

struct needle_ctx;

#define ARG_ITEMS_MAX 8
#define ARG_STRING_MAX 256   /* --max-string's ceiling */
/* Words a data block may take: per item a word and a value word, or a
 * word and a string's words. */
#define ARG_WORDS_MAX (ARG_ITEMS_MAX * (2 + ARG_STRING_MAX / 8))

struct arg_item {
	uint8_t kind;  /* ARG_KIND_* (shm_layout.h) */
	uint8_t index; /* argN / fpargN: N; retval: 0 */
	uint8_t fmt;   /* d u x c p f */
	uint8_t bits;  /* 8 16 32 64 */
};

struct arg_spec {
	uint8_t entry_cnt, exit_cnt;
	struct arg_item entry[ARG_ITEMS_MAX], exit[ARG_ITEMS_MAX];
};

/* Specs by site id, for the sites known when the recording began. */
struct args_table {
	struct arg_spec **specs;
	uint32_t cnt;
};
extern struct args_table args_table;

/* Build the table from the lines of NEEDLE_ARGS ("GLOB\tA|R\tITEMS").
 * 0, -EINVAL (a malformed line), -ENOENT (no function matches), -ENOMEM. */
int args_configure(const char *lines);
/* Bytes of a string argument kept (--max-string), at most ARG_STRING_MAX. */
void args_set_max_string(uint32_t bytes);

/* The spec of site, or NULL: what the recorder's handlers ask per call. */
static inline const struct arg_spec *args_for(uint32_t site)
{
	return args_table.specs && site < args_table.cnt ? args_table.specs[site] : NULL;
}

/* The data block's words for s's entry (or exit) values in ctx: at most
 * 2 * ARG_ITEMS_MAX.  Returns how many. */
size_t args_payload(const struct arg_spec *s, int at_exit, const struct needle_ctx *ctx, uint64_t *out);

#endif
