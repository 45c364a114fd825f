/* args.c - the arguments and return values needle record -A / -R asks
 * for: which functions, which registers, and how each value travels in
 * the trace buffer.
 *
 * A spec names values by register: argN (the N-th integer argument, rdi
 * rsi rdx rcx r8 r9), fpargN (the N-th floating-point one, xmm0-7) and
 * retval (rax, or xmm0 for a float format), each with a format letter
 * (d signed, u unsigned, x hex, c char, p pointer, f float) and a size in
 * bits (8, 16, 32, 64; f: 32 or 64).  A function's values follow its
 * entry (or exit) event as one data block (shm_layout.h, EV_DATA_SITE):
 * per value an item word (ARG_ITEM_*) and one value word.
 *
 * Invariants: the table is built once, before the recorder's link is
 * attached, and never changes while handlers run; a function without a
 * spec costs the recorder one load and a branch; values are copied from
 * the registers the trampoline saved, never dereferenced (no pointer is
 * followed but a string's, read with process_vm_readv: a bad pointer, an
 * unmapped page or a string another thread is writing can never fault. */
#include <errno.h>
#include <fnmatch.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/record/args.h"
#include "common/shm_layout.h"
#include "needle.h"

struct args_table args_table;
static uint32_t max_string = 64;

void args_set_max_string(uint32_t bytes)
{
	max_string = bytes > ARG_STRING_MAX ? ARG_STRING_MAX : bytes < 8 ? 8 : bytes;
}

/* A string argument: its bytes up to the first NUL or max_string, as
 * words after the item word; the item's bits field says 0 (read), 1
 * (NULL) or 2 (unreadable: the pointer follows instead).  The read is a
 * process_vm_readv of the process itself, the one system call a recorded
 * call may make, and only for a function whose spec asks for a string:
 * the kernel copies what it can and reports a fault instead of raising
 * one (a page at a time, so a string that ends before an unmapped page
 * is read whole).  Costs about a microsecond. */
static size_t string_item(const struct arg_item *it, uint64_t ptr, uint64_t *out)
{
	char buf[ARG_STRING_MAX];
	ssize_t got = -1;

	if (ptr) {
		struct iovec local = { buf, max_string }, remote = { (void *)(uintptr_t)ptr, max_string };
		got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (got <= 0) {
			/* The first page may be readable and a later one not:
			 * what is left of the first page alone. */
			size_t first = 4096 - (ptr & 4095);
			local.iov_len = remote.iov_len = first < max_string ? first : max_string;
			got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		}
	}
	if (!ptr || got <= 0) {
		out[0] = arg_item_word(it->kind, it->index, 's', ptr ? 2 : 1, 8);
		out[1] = ptr;
		return 2;
	}
	size_t len = 0;
	while (len < (size_t)got && buf[len])
		len++;
	size_t words = len / 8 + 1; /* room for a NUL */
	out[0] = arg_item_word(it->kind, it->index, 's', 0, (uint32_t)(words * 8));
	for (size_t w = 0; w < words; w++) {
		uint64_t v = 0;
		for (size_t b = 0; b < 8 && w * 8 + b < len; b++)
			v |= (uint64_t)(uint8_t)buf[w * 8 + b] << (8 * b);
		out[1 + w] = v;
	}
	return 1 + words;
}

/* One -A or -R line: "GLOB\tA|R\tITEMS" with ITEMS "kind:index:fmt:bits,...". */
static int parse_items(const char *items, int at_exit, struct arg_spec *spec)
{
	const char *p = items;

	while (*p) {
		unsigned kind, index, bits;
		char fmt;
		int n = 0;
		if (sscanf(p, "%u:%u:%c:%u%n", &kind, &index, &fmt, &bits, &n) != 4 || kind > ARG_KIND_RET_FP ||
		    index > 8 || bits > 64)
			return -EINVAL;
		struct arg_item *it = at_exit ? &spec->exit[spec->exit_cnt] : &spec->entry[spec->entry_cnt];
		if ((at_exit ? spec->exit_cnt : spec->entry_cnt) >= ARG_ITEMS_MAX)
			return -EINVAL;
		*it = (struct arg_item){ (uint8_t)kind, (uint8_t)index, (uint8_t)fmt, (uint8_t)bits };
		if (at_exit)
			spec->exit_cnt++;
		else
			spec->entry_cnt++;
		p += n;
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
	}
	return 0;
}

int args_configure(const char *lines)
{
	char *copy = strdup(lines), *save = NULL;
	int total = needle_site_count(), err = 0, matched = 0;

	if (!copy)
		return -ENOMEM;
	if (total > 0 && !args_table.specs && !(args_table.specs = calloc((size_t)total, sizeof(*args_table.specs)))) {
		free(copy);
		return -ENOMEM;
	}
	args_table.cnt = (uint32_t)total;
	for (char *line = strtok_r(copy, "\n", &save); line && !err; line = strtok_r(NULL, "\n", &save)) {
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		if (!t2) {
			err = -EINVAL;
			break;
		}
		*t1 = *t2 = 0;
		int at_exit = t1[1] == 'R';
		struct arg_spec proto = { 0 };
		if ((err = parse_items(t2 + 1, at_exit, &proto)))
			break;
		for (int id = 0; id < total; id++) {
			struct needle_site_info info = { .sz = sizeof(info) };
			if (needle_site_info((uint32_t)id, &info) || fnmatch(line, info.name, 0))
				continue;
			struct arg_spec *s = args_table.specs[id];
			if (!s && !(s = args_table.specs[id] = calloc(1, sizeof(*s)))) {
				err = -ENOMEM;
				break;
			}
			/* -A and -R for one function add up. */
			const struct arg_item *from = at_exit ? proto.exit : proto.entry;
			uint8_t cnt = at_exit ? proto.exit_cnt : proto.entry_cnt;
			for (uint8_t k = 0; k < cnt; k++) {
				if (at_exit && s->exit_cnt < ARG_ITEMS_MAX)
					s->exit[s->exit_cnt++] = from[k];
				else if (!at_exit && s->entry_cnt < ARG_ITEMS_MAX)
					s->entry[s->entry_cnt++] = from[k];
			}
			matched++;
		}
	}
	free(copy);
	if (!err && !matched)
		err = -ENOENT;
	return err;
}

/* The value of it, from the registers the trampoline saved. */
static uint64_t value_of(const struct arg_item *it, const struct needle_ctx *ctx)
{
	uint64_t v = 0;

	switch (it->kind) {
	case ARG_KIND_INT:
		v = it->index >= 1 && it->index <= 6 ? ctx->regs.args[it->index - 1] : 0;
		break;
	case ARG_KIND_FP:
		if (it->index >= 1 && it->index <= 8)
			memcpy(&v, ctx->regs.xmm[it->index - 1], sizeof(v));
		break;
	case ARG_KIND_RET:
		v = ctx->regs.rax;
		break;
	case ARG_KIND_RET_FP:
		memcpy(&v, ctx->regs.xmm[0], sizeof(v));
		break;
	}
	if (it->bits < 64 && it->fmt != 'f')
		v &= (1ull << it->bits) - 1;
	else if (it->bits == 32 && it->fmt == 'f')
		v &= 0xffffffffull;
	return v;
}

size_t args_payload(const struct arg_spec *s, int at_exit, const struct needle_ctx *ctx, uint64_t *out)
{
	const struct arg_item *items = at_exit ? s->exit : s->entry;
	uint8_t cnt = at_exit ? s->exit_cnt : s->entry_cnt;
	size_t n = 0;

	for (uint8_t k = 0; k < cnt; k++) {
		const struct arg_item *it = &items[k];
		if (it->fmt == 's') {
			n += string_item(it, value_of(it, ctx), out + n);
			continue;
		}
		out[n++] = arg_item_word(it->kind, it->index, it->fmt, it->bits, 8);
		out[n++] = value_of(it, ctx);
	}
	return n;
}
