/* args.c - the arguments and return values needle record -A / -R asks
 * for, and the value filters of -F 'GLOB@arg2>1000': which functions,
 * which registers, and how each value travels in the trace buffer.
 *
 * A spec names values by register: argN (the N-th integer argument, rdi
 * rsi rdx rcx r8 r9; N > 6: the (N-6)-th 8-byte word above the return
 * address, where the ABI passes what does not fit in registers),
 * fpargN (the N-th floating-point one, xmm0-7) and,
 * at the exit, rax, rdx, xmm0 and xmm1 (a return value, or the halves of
 * a small struct returned in two), each with a format letter (d signed,
 * u unsigned, x hex, c char, p pointer, f float, e enum, b bool, s the
 * string it points to), a size in bits and, for a field of a struct
 * passed in registers (--auto-args), its byte offset in the register.
 * A function's values follow its entry (or exit) event as one data block
 * (shm_layout.h, EV_DATA_SITE): per value an item word and one value
 * word, or a string's words.
 *
 * Invariants: the table is built once, before the recorder's link is
 * attached, and never changes while handlers run; a function without a
 * spec costs the recorder one load and a branch; an item's register
 * offset, mask and item word are computed here, so a value costs a load,
 * a shift and a mask per call; values are copied from the registers the
 * trampoline saved, never dereferenced (no pointer is followed but a
 * string's, read with safe_copy_str: a bad pointer, an unmapped page or a
 * string another thread is writing can never crash the program).  A
 * stack word is read with safe_copy_word: the words a function's
 * parameters occupy are its caller's, but argN on a function that has
 * no such parameter may name a word past the top of a thread's stack;
 * one that cannot be read is left out of the block. */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/base/log.h"
#include "agent/base/raw_syscall.h"
#include "agent/base/safe_copy.h"
#include "agent/record/args.h"
#include "common/pattern.h"
#include "common/shm_layout.h"
#include "needle.h"

struct args_table args_table;
static uint32_t max_string = 64;
static uint64_t page_kb = 4; /* read= statm's page size, set by args_configure (away from the hot path) */

/* s: a char * (the string it points to is kept); S: a std::string's
 * address (the string its first word points to). */
static inline int is_string_fmt(unsigned fmt)
{
	return fmt == 's' || fmt == 'S';
}

void args_set_max_string(uint32_t bytes)
{
	max_string = bytes > ARG_STRING_MAX ? ARG_STRING_MAX : bytes < VALUE_STRING_MIN ? VALUE_STRING_MIN : bytes;
}

/* A string argument: its bytes up to the first NUL or max_string, as
 * words after the item word; the item's bits field says 0 (read), 1
 * (NULL), 2 (unreadable: the pointer follows instead) or 3 (read, but
 * cut: no NUL within max_string, or an unreadable byte before one).  safe_copy_str
 * reads it with plain loads, a fault resumed at its fixup (a bad pointer,
 * an unmapped page), about 3.5 ns for 16 bytes; the bytes of a string
 * another thread writes meanwhile are each one it held. */
static size_t string_item(const struct arg_item *it, uint64_t ptr, uint64_t *out)
{
	/* Straight into the value words after the item word: out has room
	 * for 1 + max_string / 8 + 1 words (entry_words_max). */
	char *dst = (char *)(out + 1);
	int faulted = 0;
	size_t got = ptr ? safe_copy_str(dst, (const void *)(uintptr_t)ptr, max_string, &faulted) : 0;

	if (!ptr || (faulted && !got)) {
		out[0] = arg_item_word(it->kind, it->index, it->fmt, ptr ? 2 : 1, 8, 0);
		out[1] = ptr;
		return 2;
	}
	int whole = got && !faulted && dst[got - 1] == 0;
	size_t len = whole ? got - 1 : got;
	size_t words = len / 8 + 1; /* room for a NUL */
	/* NUL-pad the last word: the copy leaves what follows unspecified. */
	for (size_t b = len; b < words * 8; b++)
		dst[b] = 0;
	/* bits 3: no NUL within --max-string bytes, or before an unreadable
	 * byte: the views mark it cut ("..."...). */
	out[0] = arg_item_word(it->kind, it->index, it->fmt, whole ? 0 : 3, (uint32_t)(words * 8), 0);
	return 1 + words;
}

/* Where its value is in struct needle_regs, and which of its bits. */
static int item_finish(struct arg_item *it)
{
	size_t reg;

	switch (it->kind) {
	case ARG_KIND_INT:
		if (it->index < 1)
			return -EINVAL;
		it->stack = it->index > 6;
		reg = it->stack ? 8u * (it->index - 6u) : offsetof(struct needle_regs, args) + 8u * (it->index - 1u);
		break;
	case ARG_KIND_FP:
		if (it->index < 1 || it->index > 8)
			return -EINVAL;
		reg = offsetof(struct needle_regs, xmm) + 16u * (it->index - 1u);
		break;
	case ARG_KIND_RET:
		reg = offsetof(struct needle_regs, rax);
		break;
	case ARG_KIND_RET_RDX:
		reg = offsetof(struct needle_regs, rdx);
		break;
	case ARG_KIND_RET_FP:
		reg = offsetof(struct needle_regs, xmm);
		break;
	case ARG_KIND_RET_XMM1:
		reg = offsetof(struct needle_regs, xmm) + 16u;
		break;
	case ARG_KIND_RET_ST0:
		reg = 0; /* not in needle_regs: long_double_st0 reads it */
		break;
	case ARG_KIND_READ:
		if (it->index < 1 || it->index > ARG_READ_LAST || it->fmt != 'u' || it->bits != 64 || it->shift)
			return -EINVAL;
		reg = 0; /* read_process reads it */
		break;
	default:
		return -EINVAL;
	}
	/* A long double: two stack words at the entry, or st0 at the exit. */
	int long_double = it->bits == ARG_BITS_LONG_DOUBLE;
	if (long_double != (it->kind == ARG_KIND_RET_ST0) && !(long_double && it->stack))
		return -EINVAL;
	if (long_double && (it->fmt != 'f' || it->shift))
		return -EINVAL;
	if (!strchr("duxcpfsebaS", it->fmt) || !it->fmt || it->bits < 8 || (it->bits > 64 && !long_double) ||
	    it->bits % 8 || (!long_double && it->shift * 8 + (is_string_fmt(it->fmt) ? 64 : it->bits) > 64))
		return -EINVAL;
	it->reg = (uint16_t)reg;
	it->mask = it->bits >= 64 || is_string_fmt(it->fmt) ? ~0ull : (1ull << it->bits) - 1;
	it->word = arg_item_word(it->kind, it->index, it->fmt, it->bits, long_double ? 16 : 8, it->shift);
	return 0;
}

/* "kind:index:fmt:bits[:shift]" at *p; advances past it. */
static int parse_item(const char **p, struct arg_item *it)
{
	unsigned kind, index, bits, shift = 0;
	char fmt;
	int n = 0;

	if (sscanf(*p, "%u:%u:%c:%u%n", &kind, &index, &fmt, &bits, &n) != 4 || kind > ARG_KIND_LAST ||
	    index > (kind == ARG_KIND_INT ? 255u : 8u) || (bits > 64 && bits != ARG_BITS_LONG_DOUBLE))
		return -EINVAL;
	*p += n;
	if (**p == ':') {
		n = 0;
		if (sscanf(*p, ":%u%n", &shift, &n) != 1 || shift > 7)
			return -EINVAL;
		*p += n;
	}
	*it = (struct arg_item){ .kind = (uint8_t)kind, .index = (uint8_t)index, .fmt = (uint8_t)fmt,
				 .bits = (uint8_t)bits, .shift = (uint8_t)shift };
	return item_finish(it);
}

/* The ITEMS of one -A or -R line, added to spec; *weak gets a bit per
 * item whose format the user did not give ("~" after it): one that a
 * function already has a value for keeps that value's format. */
static int parse_items(const char *items, int at_exit, struct arg_spec *spec, uint32_t *weak)
{
	const char *p = items;

	*weak = 0;
	while (*p) {
		uint8_t *cnt = at_exit ? &spec->exit_cnt : &spec->entry_cnt;
		struct arg_item it;
		if (parse_item(&p, &it) || *cnt >= ARG_ITEMS_MAX || (at_exit && it.stack))
			return -EINVAL;
		if (*p == '~') {
			*weak |= 1u << *cnt;
			p++;
		}
		(at_exit ? spec->exit : spec->entry)[(*cnt)++] = it;
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
	}
	return 0;
}

/* "OP VALUE" of a filter: == != < <= > >=, then an integer (decimal,
 * 0x hex, negative) or, for an f item, a number. */
static int parse_cond(const char *op, const char *value, struct arg_cond *c)
{
	static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=" };
	char *end;

	for (c->op = 0; c->op < 6 && strcmp(op, ops[c->op]); c->op++)
		;
	if (c->op == 6)
		return -EINVAL;
	errno = 0;
	if (c->item.fmt == 'f')
		c->value.f = strtod(value, &end);
	else if (*value == '-')
		c->value.s = strtoll(value, &end, 0);
	else
		c->value.u = strtoull(value, &end, 0);
	return errno || end == value || *end ? -EINVAL : 0;
}

static int compare(int cmp, uint8_t op)
{
	switch (op) {
	case ARG_OP_EQ: return cmp == 0;
	case ARG_OP_NE: return cmp != 0;
	case ARG_OP_LT: return cmp < 0;
	case ARG_OP_LE: return cmp <= 0;
	case ARG_OP_GT: return cmp > 0;
	default: return cmp >= 0;
	}
}

/* The value of it in the call of ctx: 0, or -1 for a stack word that
 * cannot be read. */
static int item_value(const struct arg_item *it, const struct needle_ctx *ctx, uint64_t *v)
{
	uint64_t w;

	if (!it->stack) {
		*v = args_value(it, ctx);
		return 0;
	}
	if (!ctx->sp || safe_copy_word(&w, (const void *)(uintptr_t)(ctx->sp + it->reg)))
		return -1;
	*v = (w >> (8 * it->shift)) & it->mask;
	return 0;
}

int args_cond_holds(const struct arg_spec *s, const struct needle_ctx *ctx)
{
	if (!s->has_cond)
		return 1;
	const struct arg_cond *c = &s->cond;
	uint64_t v;
	int cmp;

	if (item_value(&c->item, ctx, &v))
		return 0; /* a stack word that cannot be read compares with nothing */

	if (c->item.fmt == 'f') {
		double d;
		if (c->item.bits == 32) {
			float f;
			uint32_t w = (uint32_t)v;
			memcpy(&f, &w, sizeof(f));
			d = f;
		} else {
			memcpy(&d, &v, sizeof(d));
		}
		cmp = d < c->value.f ? -1 : d > c->value.f ? 1 : d == c->value.f ? 0 : 2; /* NaN: only != */
		return cmp == 2 ? c->op == ARG_OP_NE : compare(cmp, c->op);
	}
	if (strchr("uxp", c->item.fmt)) { /* c: a char, signed on x86-64 */
		cmp = v < c->value.u ? -1 : v > c->value.u;
	} else {
		unsigned sh = 64u - c->item.bits;
		int64_t sv = (int64_t)(v << sh) >> sh;
		cmp = sv < c->value.s ? -1 : sv > c->value.s;
	}
	return compare(cmp, c->op);
}

/* Site ids sorted by name: lines that name a function exactly (as
 * --auto-args writes them, one per function) are looked up, not matched
 * against every site. */
struct named_site {
	const char *name;
	uint32_t id;
};
static struct named_site *by_name;
static uint32_t by_name_cnt;

static int named_cmp(const void *a, const void *b)
{
	const struct named_site *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int by_name_build(uint32_t total)
{
	if (by_name)
		return 0;
	if (!(by_name = calloc(total ? total : 1, sizeof(*by_name))))
		return -ENOMEM;
	for (uint32_t id = 0; id < total; id++) {
		struct needle_site_info info = { .sz = sizeof(info) };
		if (!needle_site_info(id, &info))
			by_name[by_name_cnt++] = (struct named_site){ info.name, id };
	}
	qsort(by_name, by_name_cnt, sizeof(*by_name), named_cmp);
	return 0;
}

static char main_path[4096];

/* The process's file mappings, read from /proc/self/maps when a
 * session's lines are read: which file (device and inode) and where in
 * it a site's function lies, what a line's scope ("=DEV:INO@OFFSET",
 * "main@OFFSET") is compared with.  A path would say less: a library
 * named by a relative path, or a file replaced since it was mapped. */
struct mapping {
	uint64_t lo, hi, off, dev, ino;
};
static struct mapping *mappings;
static size_t mapping_cnt;

static void mappings_reset(void)
{
	free(mappings);
	mappings = NULL;
	mapping_cnt = 0;
}

static int mappings_read(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4352];
	size_t cap = 0;

	mappings_reset();
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		unsigned maj, min;
		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &lo, &hi, &off, &maj, &min, &ino) != 6 || !ino)
			continue;
		if (mapping_cnt == cap) {
			size_t ncap = cap ? 2 * cap : 128;
			struct mapping *v = realloc(mappings, ncap * sizeof(*v));
			if (!v) {
				fclose(f);
				return -ENOMEM;
			}
			mappings = v;
			cap = ncap;
		}
		mappings[mapping_cnt++] = (struct mapping){ lo, hi, off, makedev(maj, min), ino };
	}
	fclose(f);
	return 0;
}

/* The mapping that holds addr (maps lists them in address order). */
static const struct mapping *mapping_at(uint64_t addr)
{
	size_t lo = 0, hi = mapping_cnt;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (mappings[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < mapping_cnt && mappings[lo].lo <= addr ? &mappings[lo] : NULL;
}

/* Whether site id is the function a line's scope names: NULL, anywhere;
 * "main", in the program; "!main", in any other object; "main@OFFSET", the program's function at that
 * offset of its file; "=DEV:INO@OFFSET", the one at that offset of the
 * file of that identity (a library's); "=DEV:INO", any of that file's (an
 * IFUNC's name: the implementation its resolver picked, wherever it is). */
static int in_scope(uint32_t id, const char *scope)
{
	struct needle_site_info info = { .sz = sizeof(info) };
	unsigned long long dev = 0, ino = 0, off = 0;

	if (!scope)
		return 1;
	if (needle_site_info(id, &info))
		return 0;
	/* "!main": any object but the program (uftrace's FUNC@plt). */
	if (!strcmp(scope, "!main"))
		return strcmp(info.module, main_path) != 0;
	int main_scope = !strncmp(scope, "main", 4);
	if (main_scope && strcmp(info.module, main_path))
		return 0;
	if (!strcmp(scope, "main"))
		return 1;
	int fields = main_scope ? sscanf(scope, "main@%llu", &off) : sscanf(scope, "=%llu:%llu@%llu", &dev, &ino, &off);
	int any_offset = !main_scope && fields == 2 && !strchr(scope, '@');
	if (fields != (main_scope ? 1 : 3) && !any_offset)
		return 0;
	const struct mapping *m = mapping_at(info.func_ip);
	/* An interposer of libneedle's (NEEDLE_INTERPOSER_SITE) takes the
	 * place of the C library's function of its name, which is what the
	 * debug info the line was resolved by describes. */
	const struct mapping *self = mapping_at((uint64_t)(uintptr_t)&in_scope);
	if (m && self && !main_scope && m->dev == self->dev && m->ino == self->ino)
		return 1;
	return m && (main_scope || (m->dev == dev && m->ino == ino)) &&
	       (any_offset || info.func_ip - m->lo + m->off == off);
}

/* Calls fn for every site that glob names within scope (see in_scope);
 * returns how many. */
static int each_site(const char *glob, const char *scope, int (*fn)(uint32_t id, void *arg), void *arg)
{
	int matched = 0, err;

	if (!strpbrk(glob, "*?[\\") && !pattern_is_regex(glob)) {
		size_t lo = 0, hi = by_name_cnt;
		while (lo < hi) { /* the first entry of that name */
			size_t mid = (lo + hi) / 2;
			if (strcmp(by_name[mid].name, glob) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < by_name_cnt && !strcmp(by_name[lo].name, glob); lo++) {
			if (!in_scope(by_name[lo].id, scope))
				continue;
			if ((err = fn(by_name[lo].id, arg)))
				return err;
			matched++;
		}
		/* No symbol of that name: a C++ function's demangled one.
		 * A scoped line (--auto-args, a spec DWARF resolved) names
		 * its symbol. */
		if (matched || scope)
			return matched;
	}
	for (uint32_t id = 0; id < args_table.cnt; id++) {
		if (needle_site_match(id, glob) != 1 || !in_scope(id, scope))
			continue;
		if ((err = fn(id, arg)))
			return err;
		matched++;
	}
	return matched;
}

static struct arg_spec *spec_of(uint32_t id)
{
	struct arg_spec *s = args_table.specs[id];
	if (!s && (s = args_table.specs[id] = calloc(1, sizeof(*s))))
		s->entry_fixed = s->exit_fixed = 1;
	return s;
}

/* The fault handler, installed once, and only when a string or a stack
 * word is asked for: without it each read is a system call. */
static void fault_handler_once(void)
{
	static int tried;

	if (tried)
		return;
	tried = 1;
	int err = safe_copy_init();
	if (err)
		pr_warn("strings and stack values are read with a system call each: no fault handler (%d)\n", err);
}

struct add_items {
	const struct arg_spec *proto;
	int at_exit;
	uint32_t weak; /* by item of proto: its format was not given */
};

/* The item of to[0..cnt) for the same value as it, or NULL. */
static struct arg_item *same_value(struct arg_item *to, uint8_t cnt, const struct arg_item *it)
{
	for (uint8_t k = 0; k < cnt; k++)
		if (to[k].kind == it->kind && to[k].index == it->index && to[k].shift == it->shift)
			return &to[k];
	return NULL;
}

/* -A and -R for one function add up, as uftrace's do: a value asked for
 * again stays where it was first asked for, with the format the later
 * spec gives, or its own when that spec gives none
 * (-A 'f@arg2/x' -A 'f*@arg1,arg2' shows arg2 in hex, then arg1). */
static int add_items(uint32_t id, void *arg)
{
	const struct add_items *a = arg;
	struct arg_spec *s = spec_of(id);
	if (!s)
		return -ENOMEM;
	const struct arg_item *from = a->at_exit ? a->proto->exit : a->proto->entry;
	uint8_t cnt = a->at_exit ? a->proto->exit_cnt : a->proto->entry_cnt;
	uint8_t *to_cnt = a->at_exit ? &s->exit_cnt : &s->entry_cnt;
	struct arg_item *to = a->at_exit ? s->exit : s->entry;
	uint16_t *words_max = a->at_exit ? &s->exit_words_max : &s->entry_words_max;
	for (uint8_t k = 0; k < cnt; k++) {
		struct arg_item *had = same_value(to, *to_cnt, &from[k]);
		if (had && (a->weak >> k & 1))
			continue;
		if (!had && *to_cnt >= ARG_ITEMS_MAX)
			break;
		/* words_max only grows: a bound on the block, never short. */
		*(had ? had : &to[(*to_cnt)++]) = from[k];
		*words_max += is_string_fmt(from[k].fmt) ? (uint16_t)(2 + max_string / 8)
			      : from[k].bits == ARG_BITS_LONG_DOUBLE ? 3 : 2;
		if (from[k].kind == ARG_KIND_READ) {
			*(a->at_exit ? &s->exit_fixed : &s->entry_fixed) = 0;
			continue;
		}
		if (is_string_fmt(from[k].fmt) || from[k].stack || from[k].bits == ARG_BITS_LONG_DOUBLE) {
			*(a->at_exit ? &s->exit_fixed : &s->entry_fixed) = 0;
			fault_handler_once();
		}
	}
	return 0;
}

static int add_cond(uint32_t id, void *arg)
{
	struct arg_spec *s = spec_of(id);
	if (!s)
		return -ENOMEM;
	s->cond = *(const struct arg_cond *)arg;
	s->has_cond = 1;
	return 0;
}

/* Splits line at tabs into at most max fields; returns how many. */
static int split_tabs(char *line, char **field, int max)
{
	int n = 0;
	field[n++] = line;
	for (char *t = strchr(line, '\t'); t && n < max; t = strchr(t + 1, '\t')) {
		*t = 0;
		field[n++] = t + 1;
	}
	return n;
}

static int configure_lines(const char *lines, int filters)
{
	char *copy = strdup(lines), *save = NULL;
	int err = 0, matched = 0;

	if (!copy)
		return -ENOMEM;
	for (char *line = strtok_r(copy, "\n", &save); line && !err; line = strtok_r(NULL, "\n", &save)) {
		char *f[5];
		int n = split_tabs(line, f, 5), r;
		if (filters) {
			struct arg_cond c = { 0 };
			const char *p = f[1];
			if (n != 4 || parse_item(&p, &c.item) || *p || is_string_fmt(c.item.fmt) ||
			    c.item.bits == ARG_BITS_LONG_DOUBLE || c.item.kind == ARG_KIND_READ ||
			    arg_kind_is_ret(c.item.kind) || parse_cond(f[2], f[3], &c)) {
				err = -EINVAL;
				break;
			}
			if (c.item.stack)
				fault_handler_once();
			r = each_site(f[0], NULL, add_cond, &c);
		} else {
			struct arg_spec proto = { 0 };
			int at_exit = n >= 3 && f[1][0] == 'R';
			uint32_t weak;
			if (n < 3 || n > 4 || (err = parse_items(f[2], at_exit, &proto, &weak)))
				return free(copy), -EINVAL;
			struct add_items a = { &proto, at_exit, weak };
			r = each_site(f[0], n == 4 ? f[3] : NULL, add_items, &a);
		}
		if (r < 0)
			err = r;
		matched += r > 0;
	}
	free(copy);
	if (!err && !matched)
		err = -ENOENT;
	return err;
}

void args_reset(void)
{
	for (uint32_t i = 0; args_table.specs && i < args_table.cnt; i++)
		free(args_table.specs[i]);
	free(args_table.specs);
	args_table.specs = NULL;
	args_table.cnt = 0;
	free(by_name);
	by_name = NULL;
	by_name_cnt = 0;
	mappings_reset();
}

int args_configure(const char *lines, const char *filters)
{
	int total = needle_site_count(), err = 0;

	args_reset();
	if (total <= 0)
		return -ENOENT;
	if (!(args_table.specs = calloc((size_t)total, sizeof(*args_table.specs))))
		return -ENOMEM;
	args_table.cnt = (uint32_t)total;
	long page = sysconf(_SC_PAGESIZE);
	page_kb = page >= 1024 ? (uint64_t)page / 1024 : 4;
	ssize_t n = readlink("/proc/self/exe", main_path, sizeof(main_path) - 1);
	main_path[n > 0 ? n : 0] = 0;
	if ((err = by_name_build((uint32_t)total)) || (err = mappings_read()))
		return err;
	if (lines && *lines)
		err = configure_lines(lines, 0);
	if (!err && filters && *filters)
		err = configure_lines(filters, 1);
	/* Mappings are compared only while lines are read: they change. */
	mappings_reset();
	for (uint32_t id = 0; !err && id < args_table.cnt; id++) {
		struct arg_spec *s = args_table.specs[id];
		if (!s)
			continue;
		s->entry_direct = s->entry_fixed && !s->has_cond;
		for (uint8_t k = 0; k < s->entry_cnt; k++)
			if (s->entry[k].reg + sizeof(uint64_t) > offsetof(struct needle_regs, xmm))
				s->entry_direct = 0;
	}
	return err;
}

/* The x87 st0 at a call's exit: a long double return value.  FXSAVE
 * stores the x87 state without changing it (no register popped, no
 * exception raised, the status word as the program left it, unlike
 * loading st0 or FNSAVE), about 30 ns: paid only by a function -R asks
 * this of.  0 with the ten bytes in v[0..1], -1 when st0 is empty (the
 * function returned none). */
static int long_double_st0(uint64_t v[2])
{
	struct {
		uint16_t fcw, fsw;
		uint8_t ftw, pad1;
		uint16_t fop;
		uint64_t fip, fdp;
		uint32_t mxcsr, mxcsr_mask;
		uint8_t st[8][16];
		uint8_t rest[320];
	} __attribute__((aligned(16))) fx;

	__asm__ volatile("fxsave %0" : "=m"(fx));
	unsigned top = (fx.fsw >> 11) & 7;
	/* The abridged tag: a bit per physical register, 1 not empty;
	 * st0 is physical register top. */
	if (!(fx.ftw >> top & 1))
		return -1;
	memcpy(v, fx.st[0], 16);
	v[1] &= 0xffff;
	return 0;
}

/* A long double's item: its ten bytes from two stack words (the entry)
 * or from st0 (the exit); nothing when they cannot be read. */
static size_t long_double_item(const struct arg_item *it, const struct needle_ctx *ctx, uint64_t *out)
{
	uint64_t v[2];

	if (it->kind == ARG_KIND_RET_ST0 ? long_double_st0(v)
	    : !ctx->sp || safe_copy_word(&v[0], (const void *)(uintptr_t)(ctx->sp + it->reg)) ||
		      safe_copy_word(&v[1], (const void *)(uintptr_t)(ctx->sp + it->reg + 8)))
		return 0;
	out[0] = it->word;
	out[1] = v[0];
	out[2] = v[1] & 0xffff;
	return 3;
}

/* uftrace's read= triggers: the process's memory (/proc/self/statm, in
 * KB) or page faults (getrusage), into v[ARG_READ_*], for the items that
 * ask.  System calls on the hot path of the functions a -T read= names
 * only, made with the syscall instruction: the program's errno is not
 * touched, and no wrapper of the C library (a traced function) runs.
 * The descriptor lives between open and close only: /proc/self is
 * resolved anew in a forked child.  0, or -1 when it cannot be read. */
static int read_process(unsigned index, uint64_t v[ARG_READ_LAST + 1])
{
	if (index >= ARG_READ_FAULT_MAJOR) {
		struct rusage ru;
		if (raw_syscall4(SYS_getrusage, RUSAGE_SELF, (long)&ru, 0, 0))
			return -1;
		v[ARG_READ_FAULT_MAJOR] = (uint64_t)ru.ru_majflt;
		v[ARG_READ_FAULT_MINOR] = (uint64_t)ru.ru_minflt;
		return 0;
	}
	char buf[128];
	long fd = raw_syscall4(SYS_openat, AT_FDCWD, (long)"/proc/self/statm", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	long got = raw_syscall4(SYS_read, fd, (long)buf, sizeof(buf) - 1, 0);
	raw_syscall4(SYS_close, fd, 0, 0, 0);
	if (got <= 0)
		return -1;
	buf[got] = 0;
	/* "size resident shared text lib data dt", in pages. */
	uint64_t pages[3] = { 0, 0, 0 };
	const char *p = buf;
	for (int i = 0; i < 3; i++) {
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			return -1;
		while (*p >= '0' && *p <= '9')
			pages[i] = pages[i] * 10 + (uint64_t)(*p++ - '0');
	}
	v[ARG_READ_STATM_SIZE] = pages[0] * page_kb;
	v[ARG_READ_STATM_RSS] = pages[1] * page_kb;
	v[ARG_READ_STATM_SHARED] = pages[2] * page_kb;
	return 0;
}

size_t args_payload(const struct arg_spec *s, int at_exit, const struct needle_ctx *ctx, uint64_t *out)
{
	const struct arg_item *items = at_exit ? s->exit : s->entry;
	uint8_t cnt = at_exit ? s->exit_cnt : s->entry_cnt;
	size_t n = 0;
	uint64_t readings[ARG_READ_LAST + 1];
	unsigned read_done = 0; /* 1 statm, 2 page faults: read once per call */

	for (uint8_t k = 0; k < cnt; k++) {
		const struct arg_item *it = &items[k];
		uint64_t v;
		if (it->kind == ARG_KIND_READ) {
			unsigned which = it->index >= ARG_READ_FAULT_MAJOR ? 2 : 1;
			if (!(read_done & which)) {
				if (read_process(it->index, readings))
					continue;
				read_done |= which;
			}
			out[n++] = it->word;
			out[n++] = readings[it->index];
			continue;
		}
		if (it->bits == ARG_BITS_LONG_DOUBLE) {
			n += long_double_item(it, ctx, out + n);
			continue;
		}
		if (item_value(it, ctx, &v))
			continue;
		if (it->fmt == 'S') {
			/* A std::string by its address (libstdc++'s layout: the
			 * pointer to its characters first), read without ever
			 * faulting; an unreadable object is a bad pointer. */
			uint64_t chars = 0;
			if (v && safe_copy_word(&chars, (const void *)(uintptr_t)v)) {
				out[n++] = arg_item_word(it->kind, it->index, 'S', 2, 8, 0);
				out[n++] = v;
				continue;
			}
			v = chars;
		}
		if (is_string_fmt(it->fmt)) {
			n += string_item(it, v, out + n);
			continue;
		}
		out[n++] = it->word;
		out[n++] = v;
	}
	return n;
}
