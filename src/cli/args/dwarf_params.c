/* dwarf_params.c - where each parameter and the return value of a
 * program's functions are at the entry and the exit, from its DWARF, for
 * needle record --auto-args and for checking -A / -R specs.
 *
 * libdw (elfutils) reads the DWARF: it is Debian's maintained reader, it
 * follows abstract origins and specifications, peels typedefs and
 * qualifiers, and its dwfl layer finds a separate debug file the way gdb
 * does (build id or .gnu_debuglink under /usr/lib/debug).  This runs once
 * in needle record, before the program starts; nothing here is on a hot
 * path.
 *
 * Invariants:
 *  - Registers are assigned as the System V x86-64 ABI assigns them:
 *    integer-class values (integers, enums, bool, char, pointers) take
 *    rdi rsi rdx rcx r8 r9 in order, float and double take xmm0-7; a
 *    struct or union of at most 16 bytes is classified per eightbyte
 *    (SSE if every field in it is a float or double, else INTEGER) and
 *    takes registers only if all its eightbytes fit, else it goes to
 *    memory whole.  An eightbyte of padding only (an empty class) takes
 *    no register; a 16-byte vector or __float128 takes one xmm (SSE +
 *    SSEUP).  A return value in memory takes rdi for its address (not
 *    long double: st0).
 *  - What goes to memory (bigger aggregates, long double, a value for
 *    which no register is left) takes the next words above the return
 *    address, in parameter order, each value 8-byte aligned (16 for a
 *    type aligned so) and rounded up to whole words; its scalars that
 *    fit in a word are shown as argN, N = 7 + the word.  Past a value
 *    aligned to more than 16, or an __int128 (clang 14 departs from the
 *    ABI there), the words are unknown and nothing on the stack is
 *    shown; registers still are.  A C++ class that is not trivially
 *    copyable goes by its address (class_by_reference).
 *  - A parameter without any location (unused in an optimized function:
 *    its caller need not load it) keeps its register but is not shown.
 *  - A type this reader does not understand stops the description: the
 *    registers of the parameters after it are unknown, so they get
 *    nothing rather than a neighbour's value.  So does a calling
 *    convention other than the normal one (clang's DW_CC_nocall marks a
 *    function whose unused parameters it removed, keeping its name).
 *  - A function is keyed by the symbol its code starts at, looked up in
 *    the ELF symbol table at its DWARF entry address.  A clone gcc made
 *    with another signature (f.constprop.0, f.isra.0, f.part.0) has a
 *    symbol of its own, and its DWARF still lists f's parameters, some
 *    of which it no longer takes: symbols with a '.' get nothing.
 *  - The ABI's answer is checked against the compiler's: a parameter
 *    whose DWARF location at the entry is another register, memory at a
 *    register (a class passed by reference), another stack word, or a
 *    constant (a parameter clang dropped from an internal function,
 *    keeping its name) means the function's registers are not the ABI's
 *    (mismatch): no values.  A stack location is known at the entry when
 *    it is relative to the CFA (gcc's frame base) or to rbp in a
 *    standard frame (clang -O0); one relative to rsp describes rsp after
 *    the prologue's pushes and is not checked.
 *  - Two definitions behind one symbol name (static functions of two
 *    files) that disagree are marked ambiguous: nothing is shown for
 *    that name rather than values under the wrong names.
 *  - A function DWARF does not describe gets nothing: no guesses.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args/dwarf_params.h"
#include "common/cxx_name.h"
#include "common/shm_layout.h"

/* From libstdc++: the Itanium C++ ABI demangler. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* A scalar inside a parameter: the whole of it, or a field. */
struct leaf {
	uint32_t off, size;
	char cls;        /* 'I' integer class, 'S' SSE, 'M' memory (x87, unaligned) */
	uint8_t fmt, bits;
	uint8_t shown;   /* a value needle can show (not a bit-field, not padding) */
	int32_t enum_id;
	char label[DW_LABEL_MAX];
};

#define LEAVES_MAX 64

struct loader {
	struct dw_info *info;
	size_t cap;
	Dwarf_Off *enum_offs; /* DIE offset of each enum in info->enums */
	size_t enum_cap;
};

static int enum_id_of(struct loader *l, Dwarf_Die *type)
{
	Dwarf_Off off = dwarf_dieoffset(type);
	struct dw_info *info = l->info;

	for (size_t i = 0; i < info->enum_cnt; i++)
		if (l->enum_offs[i] == off)
			return (int)i;
	if (info->enum_cnt == l->enum_cap) {
		size_t cap = l->enum_cap ? l->enum_cap * 2 : 16;
		struct dw_enum *e = realloc(info->enums, cap * sizeof(*e));
		if (e)
			info->enums = e;
		Dwarf_Off *o = realloc(l->enum_offs, cap * sizeof(*o));
		if (o)
			l->enum_offs = o;
		if (!e || !o)
			return -1;
		l->enum_cap = cap;
	}
	struct dw_enum *e = &info->enums[info->enum_cnt];
	size_t cap = 0;
	*e = (struct dw_enum){ 0 };
	Dwarf_Die child;
	if (dwarf_child(type, &child) == 0) {
		do {
			Dwarf_Attribute a;
			Dwarf_Sword v;
			const char *name = dwarf_diename(&child);
			if (dwarf_tag(&child) != DW_TAG_enumerator || !name ||
			    !dwarf_attr(&child, DW_AT_const_value, &a) || dwarf_formsdata(&a, &v))
				continue;
			if (e->cnt == cap) {
				cap = cap ? cap * 2 : 8;
				int64_t *vv = realloc(e->values, cap * sizeof(*vv));
				if (vv)
					e->values = vv;
				char **nn = realloc(e->names, cap * sizeof(*nn));
				if (nn)
					e->names = nn;
				if (!vv || !nn)
					break;
			}
			e->values[e->cnt] = v;
			e->names[e->cnt++] = strdup(name);
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	l->enum_offs[info->enum_cnt] = off;
	return (int)info->enum_cnt++;
}

/* A scalar type (peeled): its class, format and size.  1 if it is one,
 * 0 if it is not (an aggregate), -1 if it is a type this reader does not
 * understand. */
static int scalar_of(struct loader *l, Dwarf_Die *t, struct leaf *out)
{
	Dwarf_Word size = 0;
	Dwarf_Attribute a;

	out->enum_id = -1;
	out->shown = 1;
	switch (dwarf_tag(t)) {
	case DW_TAG_base_type: {
		Dwarf_Word enc = 0;
		if (dwarf_formudata(dwarf_attr(t, DW_AT_encoding, &a), &enc) || dwarf_aggregate_size(t, &size))
			return 0;
		const char *name = dwarf_diename(t);
		out->size = (uint32_t)size;
		out->bits = (uint8_t)(size * 8);
		out->cls = 'I';
		switch (enc) {
		case DW_ATE_boolean:
			out->fmt = 'b';
			break;
		case DW_ATE_signed_char:
		case DW_ATE_unsigned_char:
			/* char is a character; int8_t and uint8_t are numbers. */
			out->fmt = name && !strcmp(name, "char") ? 'c' : enc == DW_ATE_signed_char ? 'd' : 'u';
			break;
		case DW_ATE_signed:
			out->fmt = 'd';
			break;
		case DW_ATE_unsigned:
		case DW_ATE_UTF:
			out->fmt = 'u';
			break;
		case DW_ATE_float:
			/* long double is x87 (memory: two stack words at the
			 * entry, st0 at the exit), shown as its 80 bits;
			 * __float128, _Float16 and the like are SSE, one
			 * register, not shown. */
			out->fmt = 'f';
			out->cls = name && strstr(name, "long double") ? 'M' : 'S';
			out->shown = size == 4 || size == 8 || (out->cls == 'M' && size == 16);
			if (out->cls == 'M')
				out->bits = ARG_BITS_LONG_DOUBLE;
			break;
		case DW_ATE_complex_float:
			out->fmt = 'x';
			out->cls = name && strstr(name, "long double") ? 'M' : 'S';
			out->shown = 0;
			break;
		case DW_ATE_decimal_float:
			out->fmt = 'x';
			out->cls = 'S';
			out->shown = 0;
			break;
		default: /* fixed point, or what this reader does not know */
			return -1;
		}
		if (size > 8 && out->bits != ARG_BITS_LONG_DOUBLE) /* __int128, complex double: not shown */
			out->shown = 0;
		/* _BitInt(N): its bits past N are unspecified (clang 14 does
		 * not extend them), and N need not be a byte size. */
		if ((name && strstr(name, "_BitInt")) || dwarf_hasattr(t, DW_AT_bit_size))
			out->shown = 0;
		return 1;
	}
	case DW_TAG_enumeration_type:
		if (dwarf_aggregate_size(t, &size))
			return 0;
		out->size = (uint32_t)size;
		out->bits = (uint8_t)(size * 8);
		out->cls = 'I';
		out->fmt = 'e';
		out->enum_id = enum_id_of(l, t);
		if (out->enum_id < 0)
			out->fmt = 'd';
		return 1;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type: {
		out->size = 8;
		out->bits = 64;
		out->cls = 'I';
		out->fmt = 'p';
		Dwarf_Die target, peeled;
		Dwarf_Word enc = 0;
		if (dwarf_tag(t) == DW_TAG_pointer_type && dwarf_formref_die(dwarf_attr(t, DW_AT_type, &a), &target) &&
		    dwarf_peel_type(&target, &peeled) == 0 && dwarf_tag(&peeled) == DW_TAG_base_type &&
		    !dwarf_formudata(dwarf_attr(&peeled, DW_AT_encoding, &a), &enc) &&
		    (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char) && dwarf_diename(&peeled) &&
		    !strcmp(dwarf_diename(&peeled), "char"))
			out->fmt = 's';
		return 1;
	}
	case DW_TAG_ptr_to_member_type:
		if (dwarf_aggregate_size(t, &size))
			size = 8;
		out->size = (uint32_t)size;
		out->bits = 64;
		out->cls = 'I';
		out->fmt = 'x';
		out->shown = size == 8;
		return 1;
	}
	return 0;
}

static void leaf_label(char *dst, const char *prefix, const char *name)
{
	/* A base class (no name) adds no level: "s.v", not "s..v". */
	snprintf(dst, DW_LABEL_MAX, "%s%s%s", prefix, *prefix && *name && name[0] != '[' ? "." : "", name);
}

static int class_by_reference(Dwarf_Die *type, int depth);

/* What collect and classify make of a value's type. */
enum { TYPE_OK = 0, TYPE_MEMORY = -1, TYPE_UNKNOWN = -2 };

/* The scalars of type t at offset off, into leaves (a union's members
 * after the first are classified but not shown: they would share its
 * register and offset).  TYPE_OK; TYPE_MEMORY for a C++ class passed by
 * reference; TYPE_UNKNOWN for what this reader does not understand (a
 * caller then knows no register after it either). */
static int collect(struct loader *l, Dwarf_Die *type, uint32_t off, const char *prefix, struct leaf *leaves,
		   size_t *n, int depth, int show)
{
	Dwarf_Die t;
	Dwarf_Word size;
	Dwarf_Attribute a;

	if (depth > 8 || dwarf_peel_type(type, &t) || *n == LEAVES_MAX)
		return TYPE_UNKNOWN;
	struct leaf *lf = &leaves[*n];
	int sc = scalar_of(l, &t, lf);
	if (sc < 0)
		return TYPE_UNKNOWN;
	if (sc) {
		lf->off = off;
		lf->shown &= show;
		snprintf(lf->label, sizeof(lf->label), "%s", prefix);
		if (lf->size && off % (lf->size > 8 ? 16 : lf->size))
			lf->cls = 'M'; /* unaligned (packed): memory */
		(*n)++;
		return TYPE_OK;
	}
	int tag = dwarf_tag(&t);
	if (tag == DW_TAG_array_type) {
		Dwarf_Die elem;
		Dwarf_Word esize;
		if (!dwarf_formref_die(dwarf_attr(&t, DW_AT_type, &a), &elem) || dwarf_aggregate_size(&t, &size) ||
		    dwarf_aggregate_size(&elem, &esize) || !esize)
			return TYPE_UNKNOWN;
		if (dwarf_hasattr(&t, DW_AT_GNU_vector)) {
			/* A vector (__m128): one SSE register up to 16 bytes,
			 * not shown; wider ones (AVX) this reader does not
			 * place. */
			if (size > 16 || *n == LEAVES_MAX)
				return TYPE_UNKNOWN;
			leaves[(*n)++] = (struct leaf){ .off = off, .size = (uint32_t)size, .cls = 'V', .fmt = 'x',
							.bits = 64, .enum_id = -1 };
			return TYPE_OK;
		}
		for (Dwarf_Word i = 0; i < size / esize; i++) {
			char sub[DW_LABEL_MAX];
			snprintf(sub, sizeof(sub), "%s[%llu]", prefix, (unsigned long long)i);
			int r = collect(l, &elem, off + (uint32_t)(i * esize), sub, leaves, n, depth + 1, show);
			if (r)
				return r;
		}
		return TYPE_OK;
	}
	if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type && tag != DW_TAG_class_type)
		return TYPE_UNKNOWN; /* std::nullptr_t (unspecified), ... */
	/* C++: a class with a non-trivial copy or destructor goes by
	 * reference (the caller passes its address). */
	if (class_by_reference(&t, 0))
		return TYPE_MEMORY;
	Dwarf_Die m;
	if (dwarf_child(&t, &m))
		return TYPE_OK;
	int first = 1;
	do {
		if (dwarf_tag(&m) != DW_TAG_member && dwarf_tag(&m) != DW_TAG_inheritance)
			continue;
		if (dwarf_hasattr(&m, DW_AT_external) || dwarf_hasattr(&m, DW_AT_declaration)) /* static */
			continue;
		Dwarf_Word moff = 0;
		if (dwarf_hasattr(&m, DW_AT_data_member_location) &&
		    dwarf_formudata(dwarf_attr(&m, DW_AT_data_member_location, &a), &moff))
			return TYPE_UNKNOWN; /* a location expression: virtual bases */
		Dwarf_Die mt;
		if (!dwarf_formref_die(dwarf_attr(&m, DW_AT_type, &a), &mt))
			return TYPE_UNKNOWN;
		const char *name = dwarf_diename(&m);
		char sub[DW_LABEL_MAX];
		leaf_label(sub, prefix, name ? name : "");
		int member_show = show && (tag != DW_TAG_union_type || first);
		first = 0;
		if (dwarf_hasattr(&m, DW_AT_bit_size)) {
			/* A bit-field: integer class, not shown. */
			Dwarf_Word bit_off = 0;
			if (dwarf_hasattr(&m, DW_AT_data_bit_offset))
				dwarf_formudata(dwarf_attr(&m, DW_AT_data_bit_offset, &a), &bit_off);
			if (*n == LEAVES_MAX)
				return TYPE_UNKNOWN;
			leaves[(*n)++] = (struct leaf){ .off = off + (uint32_t)(moff + bit_off / 8), .size = 1,
							.cls = 'I', .fmt = 'x', .bits = 8, .enum_id = -1 };
			continue;
		}
		int r = collect(l, &mt, off + (uint32_t)moff, sub, leaves, n, depth + 1, member_show);
		if (r)
			return r;
	} while (dwarf_siblingof(&m, &m) == 0);
	return TYPE_OK;
}

/* Classifies a value of type per the ABI's eightbytes and lists its
 * leaves.  Returns the eightbyte count (0 to 2) with cls[] 'I' (INTEGER),
 * 'S' (SSE) or 'N' (NO_CLASS: padding or an empty class, no register),
 * TYPE_MEMORY, or TYPE_UNKNOWN. */
static int classify(struct loader *l, Dwarf_Die *type, const char *name, struct leaf *leaves, size_t *n,
		    char cls[2])
{
	Dwarf_Die t;
	Dwarf_Word size = 0;

	*n = 0;
	cls[0] = cls[1] = 'N';
	if (dwarf_peel_type(type, &t) || dwarf_aggregate_size(&t, &size))
		return TYPE_UNKNOWN;
	int r = collect(l, type, 0, name, leaves, n, 0, 1);
	if (r)
		return r;
	if (size > 16)
		return TYPE_MEMORY;
	int ebs = size > 8 ? 2 : size ? 1 : 0;
	for (size_t i = 0; i < *n; i++) {
		const struct leaf *lf = &leaves[i];
		if (lf->cls == 'M')
			return TYPE_MEMORY;
		int eb = (int)(lf->off / 8);
		if (lf->size > 8) {
			/* A 16-byte scalar or vector at 0 (__int128: two
			 * INTEGER; complex double: two SSE; __float128 and
			 * __m128: SSE + SSEUP, one register). */
			if (lf->off || lf->size != 16)
				return TYPE_MEMORY;
			if (lf->cls == 'V' || (lf->cls == 'S' && lf->fmt == 'f')) {
				if (*n != 1)
					return TYPE_MEMORY;
				cls[0] = 'S';
				cls[1] = 'U'; /* SSEUP: the same register */
				return 2;
			}
			cls[0] = cls[0] == 'I' ? 'I' : lf->cls;
			cls[1] = cls[1] == 'I' ? 'I' : lf->cls;
			continue;
		}
		if (eb > 1 || (lf->off % 8) + lf->size > 8)
			return TYPE_MEMORY;
		char c = lf->cls == 'V' ? 'S' : lf->cls;
		if (cls[eb] != 'I')
			cls[eb] = c;
	}
	return ebs;
}

static void add_item(struct dw_func *f, int at_exit, const struct leaf *lf, unsigned kind, unsigned index,
		     const char *label)
{
	uint8_t *cnt = at_exit ? &f->exit_cnt : &f->entry_cnt;
	if (!lf->shown)
		return;
	if (*cnt == DW_ITEMS_MAX) {
		f->truncated = 1;
		return;
	}
	struct dw_item *it = &(at_exit ? f->exit : f->entry)[(*cnt)++];
	*it = (struct dw_item){ .kind = (uint8_t)kind, .index = (uint8_t)index, .fmt = lf->fmt, .bits = lf->bits,
				.shift = (uint8_t)(lf->off % 8), .enum_id = lf->enum_id };
	snprintf(it->label, sizeof(it->label), "%s", label);
}

/* A value of type t (peeled) named param: a group when t is a struct,
 * union or class (file-format.md, ARGS: the views show its values as
 * one).  Its name is cut at its template arguments ("less<int>" is
 * "less", as uftrace shows it). */
static void add_group(struct dw_func *f, int at_exit, const char *param, Dwarf_Die *t, int by_ref)
{
	int tag = dwarf_tag(t);
	if ((tag != DW_TAG_structure_type && tag != DW_TAG_union_type && tag != DW_TAG_class_type) ||
	    (!at_exit && !*param) || f->group_cnt == DW_GROUPS_MAX)
		return;
	struct dw_group *g = &f->group[f->group_cnt++];
	const char *name = dwarf_diename(t);
	snprintf(g->param, sizeof(g->param), "%s", param);
	snprintf(g->type, sizeof(g->type), "%.*s", name ? (int)strcspn(name, "<") : 0, name ? name : "");
	g->at_exit = (uint8_t)at_exit;
	g->by_ref = (uint8_t)by_ref;
	Dwarf_Die child;
	g->empty = dwarf_child(t, &child) != 0;
}

/* After a parameter whose values (if any) are f's entry items from mark
 * on, and which added group (or -1): a group without values waits for
 * the next parameter that has some, to be shown before them (uftrace
 * shows every parameter, "empty{}" too, in its place). */
static void settle_param(struct dw_func *f, int group, uint8_t mark)
{
	if (f->entry_cnt == mark) {
		if (group >= 0 && !f->truncated)
			f->group[group].valueless = 1;
		return;
	}
	const char *label = f->entry[mark].label;
	for (int g = 0; g < f->group_cnt; g++) {
		struct dw_group *gr = &f->group[g];
		if (gr->valueless && !gr->placed) {
			snprintf(gr->next, sizeof(gr->next), "%.*s", (int)strcspn(label, ".["), label);
			gr->placed = 1;
		}
	}
}

/* libstdc++'s std::string (std::__cxx11::basic_string<char, ...>): a
 * value of it is shown by its characters (format S). */
static int is_std_string(Dwarf_Die *t)
{
	const char *name = dwarf_diename(t);
	return name && !strncmp(name, "basic_string<char,", 18);
}

/* DWARF register numbers of the integer and SSE argument registers. */
static const uint8_t dwarf_int_reg[6] = { 5, 4, 1, 2, 8, 9 }; /* rdi rsi rdx rcx r8 r9 */
#define DWARF_XMM0 17

/* What a function's DW_AT_frame_base is, for DW_OP_fbreg: the CFA (gcc:
 * the stack pointer before the call, so the first stack word), rbp (a
 * standard frame: the CFA is rbp + 16 once the prologue has set it, and
 * the caller's stack words are where they were at the entry), or
 * unknown.  An rsp-based one (clang without a frame pointer) describes
 * rsp after the prologue's pushes, not at the entry: unknown. */
struct frame_base {
	enum { FB_UNKNOWN, FB_CFA, FB_RBP } kind;
};

static struct frame_base frame_base_of(Dwarf_Die *sp)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr_integrate(sp, DW_AT_frame_base, &a) || dwarf_getlocation(&a, &ops, &nops) || nops != 1)
		return (struct frame_base){ FB_UNKNOWN };
	if (ops[0].atom == DW_OP_call_frame_cfa)
		return (struct frame_base){ FB_CFA };
	if (ops[0].atom == DW_OP_reg6 || (ops[0].atom == DW_OP_breg6 && !ops[0].number))
		return (struct frame_base){ FB_RBP };
	return (struct frame_base){ FB_UNKNOWN };
}

/* *reg of a LOC_BY_REF whose register is not said. */
#define LOC_REG_UNKNOWN 255u

/* What entry_location finds. */
enum {
	LOC_UNKNOWN,  /* no location there: a copy the body makes (-O0), an optimized-out value */
	LOC_REG,      /* the register *reg */
	LOC_BY_REF,   /* memory at *reg, or through a pointer (a class passed by reference) */
	LOC_ELSE,     /* somewhere else: a constant (the caller never passes it), a computation */
	LOC_STACK,    /* the caller's stack, *stack_off bytes above the first stack word */
};

/* Where the parameter p is at the function's first instruction, per its
 * DW_AT_location.  A location list whose first range starts a few bytes
 * in (after a patchable entry's NOPs) gives the earliest location within
 * them, unless memory_class: then only a stack location counts there (a
 * value in memory is soon copied to registers, which says nothing of
 * where it came). */
static int entry_location(Dwarf_Die *p, Dwarf_Addr entry, const struct frame_base *fb, int memory_class,
			  unsigned *reg, int64_t *stack_off)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	int at_entry = 1;

	if (dwarf_hasattr(p, DW_AT_const_value))
		return LOC_ELSE;
	if (!dwarf_attr(p, DW_AT_location, &a))
		return LOC_UNKNOWN;
	if (dwarf_getlocation_addr(&a, entry, &ops, &nops, 1) != 1 || !nops) {
		Dwarf_Addr base, start, end, best = entry + 32;
		Dwarf_Op *e_ops;
		size_t e_n;
		ptrdiff_t off = 0;
		ops = NULL;
		at_entry = 0;
		while ((off = dwarf_getlocations(&a, off, &base, &start, &end, &e_ops, &e_n)) > 0)
			if (start >= entry && start < best && e_n) {
				best = start;
				ops = e_ops;
				nops = e_n;
			}
		if (!ops)
			return LOC_UNKNOWN;
	}
	int loc = LOC_ELSE;
	uint8_t atom = ops[0].atom;
	/* A struct in two registers is pieces: its first is what counts. */
	int whole_or_pieces = nops == 1 || ops[1].atom == DW_OP_piece;
	int64_t off = (int64_t)ops[0].number;
	if (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) {
		*reg = atom - DW_OP_reg0;
		loc = whole_or_pieces ? LOC_REG : LOC_ELSE;
	} else if (atom == DW_OP_regx) {
		*reg = (unsigned)ops[0].number;
		loc = whole_or_pieces ? LOC_REG : LOC_ELSE;
	} else if (nops > 1 && ops[nops - 1].atom == DW_OP_stack_value && atom >= DW_OP_breg0 &&
		   atom <= DW_OP_breg31 && atom != DW_OP_breg7) {
		/* A value computed from a register (clang: a bool as "rsi &
		 * 0xffffffff, converted"): the parameter came in it. */
		*reg = atom - DW_OP_breg0;
		loc = LOC_REG;
	} else if (nops == 2 && ops[1].atom == DW_OP_deref &&
		   ((atom >= DW_OP_breg0 && atom <= DW_OP_breg31) || atom == DW_OP_fbreg)) {
		/* Through a pointer kept somewhere (gcc -O0: a class passed
		 * by reference, its address spilled to the frame): which
		 * register brought it is not said. */
		*reg = LOC_REG_UNKNOWN;
		loc = LOC_BY_REF;
	} else if (nops == 1 && atom == DW_OP_fbreg && fb->kind != FB_UNKNOWN) {
		if (fb->kind == FB_RBP)
			off -= 16;
		/* Below the first stack word: a copy the body makes (-O0). */
		if (off < 0)
			return LOC_UNKNOWN;
		*stack_off = off;
		loc = LOC_STACK;
	} else if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31 && !off && atom != DW_OP_breg7) {
		*reg = atom - DW_OP_breg0;
		loc = LOC_BY_REF;
	} else if (atom == DW_OP_fbreg || atom == DW_OP_call_frame_cfa || atom == DW_OP_breg7 ||
		   atom == DW_OP_entry_value || atom == DW_OP_GNU_entry_value) {
		loc = LOC_UNKNOWN;
	}
	if (memory_class && !at_entry && loc != LOC_STACK)
		return LOC_UNKNOWN;
	return loc;
}

/* The byte alignment of a value of type: its DW_AT_alignment (on the
 * type, or, as clang puts _Alignas, on a member), else its widest
 * scalar's, through members, bases and arrays; at most 16 (a scalar of
 * 16 bytes: long double, __int128).  0 for more than 16, or a type this
 * reader cannot size: where such a value goes, this reader does not
 * place. */
static unsigned type_align(Dwarf_Die *type, int depth)
{
	Dwarf_Die t, child, mt;
	Dwarf_Attribute a;
	Dwarf_Word v = 0, size = 0;
	unsigned align = 1;

	if (depth > 8 || dwarf_peel_type(type, &t))
		return 0;
	if (!dwarf_formudata(dwarf_attr(&t, DW_AT_alignment, &a), &v))
		return v > 16 ? 0 : v ? (unsigned)v : 1;
	switch (dwarf_tag(&t)) {
	case DW_TAG_array_type:
		/* A vector (__m128) is aligned to its size; an array to its
		 * element's alignment. */
		if (dwarf_hasattr(&t, DW_AT_GNU_vector))
			return dwarf_aggregate_size(&t, &size) || size > 16 ? 0 : (unsigned)size;
		return dwarf_formref_die(dwarf_attr(&t, DW_AT_type, &a), &mt) ? type_align(&mt, depth + 1) : 0;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		if (dwarf_child(&t, &child))
			return 1;
		do {
			int tag = dwarf_tag(&child);
			if ((tag != DW_TAG_member && tag != DW_TAG_inheritance) || dwarf_hasattr(&child, DW_AT_external) ||
			    dwarf_hasattr(&child, DW_AT_declaration))
				continue;
			unsigned m;
			if (!dwarf_formudata(dwarf_attr(&child, DW_AT_alignment, &a), &v))
				m = v > 16 ? 0 : (unsigned)v;
			else if (!dwarf_formref_die(dwarf_attr(&child, DW_AT_type, &a), &mt))
				m = 0;
			else
				m = type_align(&mt, depth + 1);
			if (!m)
				return 0;
			if (m > align)
				align = m;
		} while (dwarf_siblingof(&child, &child) == 0);
		return align;
	default:
		if (dwarf_aggregate_size(&t, &size))
			return 0;
		/* A complex number is aligned as one of its two parts. */
		if (dwarf_tag(&t) == DW_TAG_base_type && !dwarf_formudata(dwarf_attr(&t, DW_AT_encoding, &a), &v) &&
		    v == DW_ATE_complex_float)
			size /= 2;
		return size >= 16 ? 16 : size ? (unsigned)size : 1;
	}
}

/* Whether a C++ class is passed by invisible reference (the Itanium C++
 * ABI: non-trivial for the purpose of calls), when its DWARF does not say
 * so with DW_AT_calling_convention (gcc 12 does not): a destructor or a
 * copy or move constructor the user provided, a virtual function, or a
 * member or base that is itself passed so.  C types have none of these. */
static int class_by_reference(Dwarf_Die *type, int depth)
{
	Dwarf_Die t, child, mt;
	Dwarf_Attribute a;
	Dwarf_Word cc;

	if (depth > 8 || dwarf_peel_type(type, &t))
		return 0;
	int tag = dwarf_tag(&t);
	if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type && tag != DW_TAG_union_type)
		return 0;
	if (!dwarf_formudata(dwarf_attr(&t, DW_AT_calling_convention, &a), &cc))
		return cc == DW_CC_pass_by_reference;
	if (dwarf_child(&t, &child))
		return 0;
	const char *cls = dwarf_diename(&t);
	do {
		int ctag = dwarf_tag(&child);
		const char *name = dwarf_diename(&child);
		if (ctag == DW_TAG_subprogram) {
			if (dwarf_hasattr(&child, DW_AT_virtuality))
				return 1;
			/* Implicit, defaulted in the class, or deleted: not the
			 * user's (a default out of the class is). */
			Dwarf_Word dflt = 0;
			if (dwarf_hasattr(&child, DW_AT_artificial) || dwarf_hasattr(&child, DW_AT_deleted) || !name ||
			    (!dwarf_formudata(dwarf_attr(&child, DW_AT_defaulted, &a), &dflt) && dflt == DW_DEFAULTED_in_class))
				continue;
			if (name[0] == '~')
				return 1;
			/* A class template's constructors are named without
			 * its arguments ("C" in "C<int>"). */
			size_t cls_len = cls ? strcspn(cls, "<") : 0;
			if (!cls || strlen(name) != cls_len || strncmp(name, cls, cls_len))
				continue;
			/* A constructor of one parameter (after this) that is a
			 * reference to the class: a copy or move constructor. */
			Dwarf_Die prm, rt, target;
			int params = 0, ref_to_self = 0;
			if (dwarf_child(&child, &prm))
				continue;
			do {
				if (dwarf_tag(&prm) != DW_TAG_formal_parameter || dwarf_hasattr(&prm, DW_AT_artificial))
					continue;
				params++;
				if (dwarf_formref_die(dwarf_attr(&prm, DW_AT_type, &a), &rt) &&
				    (dwarf_tag(&rt) == DW_TAG_reference_type || dwarf_tag(&rt) == DW_TAG_rvalue_reference_type) &&
				    dwarf_formref_die(dwarf_attr(&rt, DW_AT_type, &a), &target) &&
				    !dwarf_peel_type(&target, &target) && dwarf_dieoffset(&target) == dwarf_dieoffset(&t))
					ref_to_self = 1;
			} while (dwarf_siblingof(&prm, &prm) == 0);
			if (params == 1 && ref_to_self)
				return 1;
		} else if ((ctag == DW_TAG_member || ctag == DW_TAG_inheritance) && !dwarf_hasattr(&child, DW_AT_external)) {
			if (name && !strncmp(name, "_vptr", 5))
				return 1;
			if (dwarf_formref_die(dwarf_attr(&child, DW_AT_type, &a), &mt) && class_by_reference(&mt, depth + 1))
				return 1;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* What a register or stack word holding leaves (a whole parameter) has:
 * see struct dw_reg. */
static uint8_t what_of(const struct leaf *leaves, size_t n)
{
	if (n != 1 || leaves[0].size > 8)
		return 'a';
	switch (leaves[0].fmt) {
	case 's': return 's';
	case 'p': return 'p';
	case 'f': return 'f';
	default: return 'i';
	}
}

/* A parameter the ABI passes in memory: the next words above the
 * return address, *next_stack bytes in.  Its shown scalars that fit in
 * one word become items argN (N = 7 + word).  -1 (f->mismatch) when its
 * DWARF location at the entry is another word. */
/* The group of f's entry parameter param, or NULL. */
static struct dw_group *entry_group(struct dw_func *f, const char *param)
{
	for (int g = 0; g < f->group_cnt; g++)
		if (!f->group[g].at_exit && !strcmp(f->group[g].param, param))
			return &f->group[g];
	return NULL;
}

static int place_on_stack(struct dw_func *f, const char *name, const struct leaf *leaves, size_t n, uint32_t size,
			  unsigned align, int loc, int64_t stack_off, uint32_t *next_stack)
{
	uint32_t pos = (*next_stack + (align > 8 ? 15u : 7u)) & ~(align > 8 ? 15u : 7u);

	if (loc == LOC_STACK && stack_off != (int64_t)pos) {
		f->mismatch = 1;
		return -1;
	}
	*next_stack = pos + ((size + 7u) & ~7u);
	f->stack_words = *next_stack / 8 > UINT16_MAX ? UINT16_MAX : (uint16_t)(*next_stack / 8);
	uint8_t what = what_of(leaves, n);
	for (uint32_t w = pos / 8; w < *next_stack / 8 && w < DW_STACK_WORDS; w++) {
		snprintf(f->stack_word[w].param, DW_LABEL_MAX, "%s", name);
		f->stack_word[w].what = what;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t at = pos + leaves[i].off;
		if (leaves[i].bits == ARG_BITS_LONG_DOUBLE && leaves[i].fmt == 'f' && at % 16 == 0 &&
		    7 + at / 8 + 1 <= ARG_INDEX_MAX) {
			/* A long double: its two words, as one value. */
			add_item(f, 0, &leaves[i], ARG_KIND_INT, 7 + at / 8, leaves[i].label);
			continue;
		}
		if (leaves[i].size > 8 || at % 8 + leaves[i].size > 8) {
			/* long double, __int128 (not shown anyway); a packed
			 * field across two words: left out, and "..." says so
			 * (a struct's: its group says it is partial). */
			struct dw_group *g = leaves[i].shown ? entry_group(f, name) : NULL;
			if (g)
				g->partial = 1;
			else
				f->truncated |= leaves[i].shown;
			continue;
		}
		if (7 + at / 8 > ARG_INDEX_MAX) {
			f->truncated |= leaves[i].shown;
			continue;
		}
		add_item(f, 0, &leaves[i], ARG_KIND_INT, 7 + at / 8, leaves[i].label);
	}
	return 0;
}

/* Whether a value of these leaves holds a 16-byte integer (__int128):
 * clang 14 places one that goes to memory otherwise than the ABI, so
 * the stack words after it are not known. */
static int has_int128(const struct leaf *leaves, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (leaves[i].size == 16 && leaves[i].cls == 'I')
			return 1;
	return 0;
}

/* The parameters of subprogram sp, into f; first_int is 1 when rdi
 * holds the address of a return value in memory (the hidden argument).
 * Registers are assigned in order whatever goes to memory; stack words
 * are placed while they are known (stack_known: not past a value of an
 * alignment this reader does not place, or an __int128). */
static void describe_params(struct loader *l, Dwarf_Die *sp, struct dw_func *f, unsigned first_int, Dwarf_Addr entry)
{
	unsigned next_int = first_int, next_fp = 0;
	uint32_t next_stack = 0;
	int stack_known = 1;
	struct frame_base fb = frame_base_of(sp);
	Dwarf_Die p, cu;
	Dwarf_Attribute a;
	Dwarf_Word lang = 0;
	int unprototyped = !dwarf_hasattr_integrate(sp, DW_AT_prototyped) && dwarf_diecu(sp, &cu, NULL, NULL) &&
			   !dwarf_formudata(dwarf_attr(&cu, DW_AT_language, &a), &lang) &&
			   (lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11);

	if (dwarf_child(sp, &p))
		return;
	int group = -1;
	uint8_t mark = 0;
	do {
		int tag = dwarf_tag(&p);
		if (tag == DW_TAG_formal_parameter || tag == DW_TAG_unspecified_parameters) {
			if (mark != f->entry_cnt || group >= 0)
				settle_param(f, group, mark);
			group = -1;
			mark = f->entry_cnt;
		}
		if (tag == DW_TAG_unspecified_parameters) {
			f->varargs = 1;
			continue;
		}
		if (tag != DW_TAG_formal_parameter)
			continue;
		Dwarf_Die type, peeled;
		Dwarf_Word size = 0;
		if (!dwarf_formref_die(dwarf_attr_integrate(&p, DW_AT_type, &a), &type) ||
		    dwarf_peel_type(&type, &peeled) || dwarf_aggregate_size(&peeled, &size)) {
			f->on_stack = 1; /* a parameter without a type or size: positions after it unknown */
			return;
		}
		/* An unnamed parameter has no name to show: its value goes
		 * by register (arg1, ...), as the views name it. */
		const char *pname = dwarf_diename(&p);
		char name[DW_LABEL_MAX];
		snprintf(name, sizeof(name), "%s", pname ? pname : "");
		struct leaf leaves[LEAVES_MAX];
		size_t n;
		char cls[2];
		int ebs = classify(l, &type, name, leaves, &n, cls);
		if (ebs == TYPE_UNKNOWN) {
			f->on_stack = 1; /* where it and those after it are is unknown */
			return;
		}
		/* No location at all in an optimized function: the value is
		 * not used, and a caller that knows it (clang) may not load
		 * it.  Its register or words are still its own: taken, not
		 * shown. */
		/* A function defined without a prototype (K&R C) gets its
		 * float parameters promoted to double by every caller. */
		if (unprototyped && n == 1 && leaves[0].fmt == 'f' && leaves[0].size == 4)
			leaves[0].bits = 64;
		int located = dwarf_hasattr_integrate(&p, DW_AT_location) || dwarf_hasattr_integrate(&p, DW_AT_const_value);
		for (size_t i = 0; !located && i < n; i++)
			leaves[i].shown = 0;
		int by_ref = ebs == TYPE_MEMORY && class_by_reference(&type, 0);
		int to_memory = ebs == TYPE_MEMORY && !by_ref;
		int string = by_ref && is_std_string(&peeled);
		if (!string && f->group_cnt < DW_GROUPS_MAX) {
			int before = f->group_cnt;
			add_group(f, 0, name, &peeled, by_ref);
			if (f->group_cnt > before)
				group = before;
		}
		unsigned need_int = by_ref, need_fp = 0;
		for (int eb = 0; eb < ebs; eb++) {
			need_int += cls[eb] == 'I';
			need_fp += cls[eb] == 'S';
		}
		if (!to_memory && (next_int + need_int > 6 || next_fp + need_fp > 8))
			to_memory = 1; /* no room: the whole value (or a class's address) goes to memory */
		unsigned loc_reg = 0;
		int64_t stack_off = 0;
		int loc = entry_location(&p, entry, &fb, to_memory && !by_ref, &loc_reg, &stack_off);
		if (by_ref) {
			/* Its address, in the next integer register or word. */
			struct leaf ptr = { .size = 8, .cls = 'I', .fmt = string ? 'S' : 'p', .bits = 64, .shown = located,
					    .enum_id = -1 };
			snprintf(ptr.label, sizeof(ptr.label), "%s", name);
			/* DWARF says through a pointer (in the register the ABI
			 * gives it, or spilled: -O0), or nothing; never the
			 * object itself, in a register or the caller's stack. */
			if (loc == LOC_ELSE || loc == LOC_STACK || loc == LOC_REG ||
			    (loc == LOC_BY_REF && !to_memory && loc_reg != LOC_REG_UNKNOWN &&
			     loc_reg != dwarf_int_reg[next_int])) {
				f->mismatch = 1;
				return;
			}
			if (to_memory) {
				if (stack_known && place_on_stack(f, name, &ptr, 1, 8, 8, loc, stack_off, &next_stack))
					return;
				continue;
			}
			snprintf(f->int_reg[next_int].param, DW_LABEL_MAX, "%s", name);
			f->int_reg[next_int].what = 'p';
			add_item(f, 0, &ptr, ARG_KIND_INT, ++next_int, name);
			continue;
		}
		if (to_memory) {
			/* In the caller's stack: DWARF must not say a register,
			 * a reference or a constant. */
			if (loc == LOC_REG || loc == LOC_BY_REF || loc == LOC_ELSE) {
				f->mismatch = 1;
				return;
			}
			/* An __int128 the ABI puts in memory: clang 14 puts it and
			 * the integers after it elsewhere, which its DWARF says
			 * only relative to rsp after the prologue.  Nothing after
			 * it is known. */
			if (has_int128(leaves, n)) {
				f->on_stack = 1;
				return;
			}
			unsigned align = type_align(&type, 0);
			if (!align)
				stack_known = 0;
			f->stack_unknown = !stack_known;
			if (stack_known &&
			    place_on_stack(f, name, leaves, n, (uint32_t)size, align, loc, stack_off, &next_stack))
				return;
			continue;
		}
		/* An empty class takes no register (NO_CLASS): its DWARF
		 * location, a slot of the body's, says nothing of the ABI. */
		if (n == 0)
			continue;
		/* The ABI's answer checked against the compiler's: a
		 * parameter whose DWARF puts it elsewhere at the entry (a
		 * constant the caller does not pass, an argument another
		 * convention places, a class passed by reference) means
		 * this function's registers are not the ABI's: nothing. */
		if (loc == LOC_ELSE || (loc && (ebs < 1 || cls[0] == 'N'))) {
			f->mismatch = 1;
			return;
		}
		if (loc) {
			unsigned want = cls[0] == 'I' ? dwarf_int_reg[next_int] : DWARF_XMM0 + next_fp;
			if (loc != LOC_REG || loc_reg != want) {
				f->mismatch = 1;
				return;
			}
		}
		unsigned reg_of[2] = { 0, 0 };
		for (int eb = 0; eb < ebs; eb++) {
			if (cls[eb] == 'I') {
				reg_of[eb] = ++next_int;
				struct dw_reg *r = &f->int_reg[reg_of[eb] - 1];
				snprintf(r->param, DW_LABEL_MAX, "%s", name);
				r->what = what_of(leaves, n);
			} else if (cls[eb] == 'S') {
				reg_of[eb] = ++next_fp;
				struct dw_reg *r = &f->fp_reg[reg_of[eb] - 1];
				snprintf(r->param, DW_LABEL_MAX, "%s", name);
				r->what = n == 1 ? 'f' : 'a';
			} else if (cls[eb] == 'U') {
				reg_of[eb] = reg_of[eb - 1]; /* SSEUP: the upper half of the same register */
			}
		}
		for (size_t i = 0; i < n; i++) {
			int eb = (int)(leaves[i].off / 8);
			if (eb > 1 || !reg_of[eb])
				continue;
			add_item(f, 0, &leaves[i], cls[eb] == 'I' ? ARG_KIND_INT : ARG_KIND_FP, reg_of[eb],
				 leaves[i].label);
		}
	} while (dwarf_siblingof(&p, &p) == 0);
	settle_param(f, group, mark);
}

/* The return value of subprogram sp, into f: rax/rdx, xmm0/xmm1 per
 * eightbyte.  Returns 1 when it is returned in memory, through an
 * address the caller passes in rdi. */
static int describe_return(struct loader *l, Dwarf_Die *sp, struct dw_func *f)
{
	Dwarf_Attribute a;
	Dwarf_Die type, peeled;

	if (!dwarf_formref_die(dwarf_attr_integrate(sp, DW_AT_type, &a), &type))
		return 0; /* void */
	f->returns = 1;
	struct leaf leaves[LEAVES_MAX];
	size_t n;
	char cls[2];
	int ebs = classify(l, &type, "", leaves, &n, cls);
	if (ebs == TYPE_UNKNOWN)
		return -1;
	if (dwarf_peel_type(&type, &peeled))
		return -1;
	if (ebs == TYPE_MEMORY) {
		/* long double comes back in st0 (x87), without an address
		 * in rdi, and is shown; other values in memory do take one
		 * (rdi), and rax holds it at the return: a struct's is shown
		 * as the struct (TYPE{...}), a std::string's by its
		 * characters. */
		if (dwarf_tag(&peeled) == DW_TAG_base_type) {
			if (n == 1 && leaves[0].bits == ARG_BITS_LONG_DOUBLE && leaves[0].fmt == 'f')
				add_item(f, 1, &leaves[0], ARG_KIND_RET_ST0, 0, leaves[0].label);
			return 0;
		}
		struct leaf ptr = { .size = 8, .cls = 'I', .fmt = is_std_string(&peeled) ? 'S' : 'p', .bits = 64,
				    .shown = 1, .enum_id = -1 };
		if (ptr.fmt == 'p')
			add_group(f, 1, "", &peeled, 1);
		add_item(f, 1, &ptr, ARG_KIND_RET, 0, "");
		return 1;
	}
	add_group(f, 1, "", &peeled, 0);
	unsigned kind_of[2] = { 0, 0 };
	int ints = 0, sses = 0;
	for (int eb = 0; eb < ebs; eb++)
		kind_of[eb] = cls[eb] == 'I' ? (ints++ ? ARG_KIND_RET_RDX : ARG_KIND_RET)
			      : cls[eb] == 'S' ? (sses++ ? ARG_KIND_RET_XMM1 : ARG_KIND_RET_FP)
			      : cls[eb] == 'U' ? kind_of[eb - 1] : 255;
	for (size_t i = 0; i < n; i++) {
		int eb = (int)(leaves[i].off / 8);
		if (eb <= 1 && kind_of[eb] != 255)
			add_item(f, 1, &leaves[i], kind_of[eb], 0, leaves[i].label);
	}
	return 0;
}

static int item_cmp(const struct dw_item *a, const struct dw_item *b)
{
	return a->kind != b->kind || a->index != b->index || a->fmt != b->fmt || a->bits != b->bits ||
	       a->shift != b->shift || strcmp(a->label, b->label);
}

static int func_same(const struct dw_func *a, const struct dw_func *b)
{
	if (a->entry_cnt != b->entry_cnt || a->exit_cnt != b->exit_cnt || a->varargs != b->varargs)
		return 0;
	for (uint8_t i = 0; i < a->entry_cnt; i++)
		if (item_cmp(&a->entry[i], &b->entry[i]))
			return 0;
	for (uint8_t i = 0; i < a->exit_cnt; i++)
		if (item_cmp(&a->exit[i], &b->exit[i]))
			return 0;
	return 1;
}

/* A symbol's name without its version ("__libc_start_main@@GLIBC_2.34"
 * -> "__libc_start_main"), as the agent names sites: 0, or -1 if it does
 * not fit. */
/* "expf@GLIBC_2.2.5": a version that is not the symbol's default ("@@"). */
static int old_version(const char *versioned)
{
	return strchr(versioned, '@') && !strstr(versioned, "@@");
}

static int unversioned(const char *sym, char *out, size_t len)
{
	size_t n = strcspn(sym, "@");
	if (n >= len)
		return -1;
	memcpy(out, sym, n);
	out[n] = 0;
	return 0;
}

/* A subprogram with code: describe it under the symbol at its entry. */
static int add_function(struct loader *l, Dwfl_Module *mod, Dwarf_Addr bias, Dwarf_Die *sp)
{
	Dwarf_Addr lo = 0, base, end;
	if (dwarf_lowpc(sp, &lo) && dwarf_ranges(sp, 0, &base, &lo, &end) <= 0)
		return 0;
	GElf_Sym sym;
	GElf_Off off;
	const char *versioned = dwfl_module_addrinfo(mod, lo + bias, &off, &sym, NULL, NULL, NULL);
	char name[1024];
	/* A clone gcc made (f.constprop.0, f.isra.0, f.part.0) is described
	 * by f's parameters, some of which it no longer takes: none. */
	if (!versioned || off || GELF_ST_TYPE(sym.st_info) != STT_FUNC || unversioned(versioned, name, sizeof(name)) ||
	    strchr(name, '.'))
		return 0;
	/* A calling convention of its own: clang's DW_CC_nocall (an internal
	 * function whose unused parameters it removed, name unchanged), or
	 * one this reader does not place. */
	Dwarf_Attribute cca;
	Dwarf_Word cc;
	if (!dwarf_formudata(dwarf_attr_integrate(sp, DW_AT_calling_convention, &cca), &cc) && cc != DW_CC_normal)
		return 0;
	struct dw_info *info = l->info;
	if (info->cnt == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct dw_func *v = realloc(info->funcs, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		info->funcs = v;
		l->cap = cap;
	}
	struct dw_func *f = &info->funcs[info->cnt];
	memset(f, 0, sizeof(*f));
	f->addr = lo + bias;
	f->file_off = lo; /* the link-time address, turned into an offset by file_offsets */
	if (!(f->sym = strdup(name)))
		return -ENOMEM;
	/* An old version's name (expf@GLIBC_2.2.5): dw_func.ifunc if the
	 * default version is an IFUNC, settled by add_aliases. */
	f->ifunc = old_version(versioned);
	/* The return value first: one in memory takes rdi for its address. */
	int sret = describe_return(l, sp, f);
	if (sret >= 0)
		describe_params(l, sp, f, (unsigned)sret, lo);
	else
		f->on_stack = 1;
	if (f->mismatch) /* none of its values are where the ABI puts them */
		f->entry_cnt = f->exit_cnt = 0;
	info->cnt++;
	return 0;
}

static int walk(struct loader *l, Dwfl_Module *mod, Dwarf_Addr bias, Dwarf_Die *parent, int depth)
{
	Dwarf_Die d;
	int err;

	if (depth > 16 || dwarf_child(parent, &d))
		return 0;
	do {
		switch (dwarf_tag(&d)) {
		case DW_TAG_subprogram:
			if (!dwarf_hasattr(&d, DW_AT_declaration) &&
			    (dwarf_hasattr(&d, DW_AT_low_pc) || dwarf_hasattr(&d, DW_AT_ranges)) &&
			    (err = add_function(l, mod, bias, &d)))
				return err;
			break;
		case DW_TAG_namespace:
		case DW_TAG_structure_type:
		case DW_TAG_class_type:
			if ((err = walk(l, mod, bias, &d, depth + 1)))
				return err;
			break;
		}
	} while (dwarf_siblingof(&d, &d) == 0);
	return 0;
}

/* Each function's link-time address (file_off, as add_function left it)
 * turned into its offset in the file, through the PT_LOAD segment that
 * holds it (the object's own, not its debug file's): what the agent
 * compares with the offset its mapping gives a site's function. */
static void file_offsets(Dwfl_Module *mod, struct dw_info *info)
{
	GElf_Addr ebias;
	Elf *elf = dwfl_module_getelf(mod, &ebias);
	size_t n = 0;

	if (!elf || elf_getphdrnum(elf, &n))
		n = 0;
	for (size_t i = 0; i < info->cnt; i++) {
		uint64_t vaddr = info->funcs[i].file_off;
		info->funcs[i].file_off = UINT64_MAX;
		for (size_t k = 0; k < n; k++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)k, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
			    vaddr < ph.p_vaddr + ph.p_filesz) {
				info->funcs[i].file_off = vaddr - ph.p_vaddr + ph.p_offset;
				break;
			}
		}
	}
}

struct alias {
	Dwarf_Addr addr;
	char *name;
	uint8_t compat; /* a version that is not the default (expf@GLIBC_2.2.5) */
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int alias_cmp(const void *a, const void *b)
{
	const struct alias *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Every other function symbol at a described function's entry (glibc's
 * malloc at __libc_malloc's, fstat at __fstat's, weak and versioned
 * names): the same description under that name too, since the agent
 * names a site by one of them, its own choice. */
static int add_aliases(struct loader *l, Dwfl_Module *mod)
{
	struct dw_info *info = l->info;
	int nsyms = dwfl_module_getsymtab(mod);
	struct alias *v = nsyms > 0 ? calloc((size_t)nsyms, sizeof(*v)) : NULL;
	char **ifuncs = nsyms > 0 ? calloc((size_t)nsyms, sizeof(*ifuncs)) : NULL;
	size_t n = 0, ifunc_cnt = 0, described = info->cnt;
	int err = 0;

	if (nsyms <= 0) {
		for (size_t i = 0; i < info->cnt; i++)
			info->funcs[i].ifunc = 0; /* no IFUNC to settle it */
		return 0;
	}
	if (!v || !ifuncs) {
		free(v);
		free(ifuncs);
		return -ENOMEM;
	}
	for (int i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		char name[1024];
		const char *versioned = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		if (versioned && GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC && sym.st_shndx != SHN_UNDEF &&
		    !unversioned(versioned, name, sizeof(name)) && *name) {
			if (!(ifuncs[ifunc_cnt] = strdup(name))) {
				err = -ENOMEM;
				goto out;
			}
			ifunc_cnt++;
			continue;
		}
		if (!versioned || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
		    unversioned(versioned, name, sizeof(name)) || strchr(name, '.') || !*name)
			continue;
		if (!(v[n].name = strdup(name))) {
			err = -ENOMEM;
			goto out;
		}
		v[n].compat = old_version(versioned);
		v[n++].addr = addr;
	}
	qsort(v, n, sizeof(*v), alias_cmp);
	for (size_t i = 0; i < described && !err; i++) {
		struct alias key = { .addr = info->funcs[i].addr };
		struct alias *a = bsearch(&key, v, n, sizeof(*v), alias_cmp);
		while (a && a > v && a[-1].addr == key.addr)
			a--;
		for (; a && a < v + n && a->addr == key.addr; a++) {
			if (!strcmp(a->name, info->funcs[i].sym))
				continue;
			if (info->cnt == l->cap) {
				size_t cap = l->cap * 2;
				struct dw_func *nv = realloc(info->funcs, cap * sizeof(*nv));
				if (!nv) {
					err = -ENOMEM;
					break;
				}
				info->funcs = nv;
				l->cap = cap;
			}
			struct dw_func *copy = &info->funcs[info->cnt];
			*copy = info->funcs[i];
			copy->ifunc = a->compat; /* settled below */
			if (!(copy->sym = strdup(a->name))) {
				err = -ENOMEM;
				break;
			}
			info->cnt++;
		}
	}
	/* An old version's name whose default version is an IFUNC
	 * (dw_func.ifunc).  A function of its own that shares an IFUNC's
	 * name (a static one) keeps its offset. */
	qsort(ifuncs, ifunc_cnt, sizeof(*ifuncs), name_cmp);
	for (size_t i = 0; i < info->cnt && !err; i++)
		info->funcs[i].ifunc = info->funcs[i].ifunc && ifunc_cnt &&
				       bsearch(&info->funcs[i].sym, ifuncs, ifunc_cnt, sizeof(*ifuncs), name_cmp) != NULL;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	for (size_t i = 0; i < ifunc_cnt; i++)
		free(ifuncs[i]);
	free(ifuncs);
	return err;
}

static int sym_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dw_func *)a)->sym, ((const struct dw_func *)b)->sym);
}

int dw_info_load(const char *path, struct dw_info *info, char *err, size_t errlen)
{
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	struct loader l = { .info = info };
	int ret = 0;

	memset(info, 0, sizeof(*info));
	Dwfl *dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		snprintf(err, errlen, "cannot start reading debug info: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	Dwfl_Module *mod = dwfl_report_offline(dwfl, "main", path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	Dwarf_Addr bias = 0;
	Dwarf *dw = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
	if (!mod) {
		snprintf(err, errlen, "cannot read %s: %s", path, dwfl_errmsg(-1));
		ret = -ENOEXEC;
		goto out;
	}
	if (!dw) {
		snprintf(err, errlen, "%s has no debug info (DWARF), nor a debug file under /usr/lib/debug", path);
		ret = -ENODATA;
		goto out;
	}
	const char *debug_file = NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug_file);
	snprintf(info->debug_file, sizeof(info->debug_file), "%s", debug_file ? debug_file : path);
	Dwarf_Die *cu = NULL;
	Dwarf_Addr cu_bias;
	while ((cu = dwfl_module_nextcu(mod, cu, &cu_bias)))
		if ((ret = walk(&l, mod, cu_bias, cu, 0))) {
			snprintf(err, errlen, "out of memory reading debug info");
			goto out;
		}
	file_offsets(mod, info);
	if ((ret = add_aliases(&l, mod))) {
		snprintf(err, errlen, "out of memory reading debug info");
		goto out;
	}
	for (size_t i = 0; i < info->cnt; i++) {
		struct dw_func *f = &info->funcs[i];
		int status;
		if (cxx_name_is_mangled(f->sym) && (f->cxx = __cxa_demangle(f->sym, NULL, NULL, &status))) {
			f->cxx_base = cxx_name_shown(f->cxx);
		}
	}
	qsort(info->funcs, info->cnt, sizeof(*info->funcs), sym_cmp);
	/* One symbol name, two definitions that disagree: neither. */
	for (size_t i = 1; i < info->cnt; i++)
		if (!strcmp(info->funcs[i].sym, info->funcs[i - 1].sym) && !func_same(&info->funcs[i], &info->funcs[i - 1]))
			info->funcs[i].ambiguous = info->funcs[i - 1].ambiguous = 1;
out:
	free(l.enum_offs);
	dwfl_end(dwfl);
	return ret;
}

const struct dw_func *dw_info_find(const struct dw_info *info, const char *sym)
{
	size_t lo = 0, hi = info->cnt;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(info->funcs[mid].sym, sym);
		if (!c)
			return &info->funcs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct dw_func *found = NULL;
	size_t len = strlen(sym);
	for (size_t i = 0; i < info->cnt; i++) {
		const struct dw_func *f = &info->funcs[i];
		if (!f->cxx || !((f->cxx_base == len && !strncmp(f->cxx, sym, len)) || !strcmp(f->cxx, sym)))
			continue;
		/* Overloads: name one with its parameters.  A constructor's or
		 * destructor's variants (C1/C2, D0/D1/D2) are one function with
		 * one signature under several symbols. */
		if (found && strcmp(found->cxx, f->cxx))
			return NULL;
		if (!found)
			found = f;
	}
	return found;
}

size_t dw_info_overloads(const struct dw_info *info, const char *name, char *list, size_t len)
{
	size_t cnt = 0, off = 0, n = strlen(name);

	if (len)
		list[0] = 0;
	for (size_t i = 0; i < info->cnt; i++) {
		const struct dw_func *f = &info->funcs[i];
		if (!f->cxx || f->cxx_base != n || strncmp(f->cxx, name, n))
			continue;
		/* Counted by signature: a constructor's variants (C1, C2)
		 * are one. */
		int seen = 0;
		for (size_t k = 0; k < i && !seen; k++)
			seen = info->funcs[k].cxx && !strcmp(info->funcs[k].cxx, f->cxx);
		if (seen)
			continue;
		cnt++;
		int w = snprintf(list + off, len - off, "%s'%s'", off ? ", " : "", f->cxx);
		if (w > 0 && (size_t)w < len - off)
			off += (size_t)w;
	}
	return cnt;
}

void dw_info_free(struct dw_info *info)
{
	for (size_t i = 0; i < info->cnt; i++) {
		free(info->funcs[i].sym);
		free(info->funcs[i].cxx);
	}
	for (size_t i = 0; i < info->enum_cnt; i++) {
		for (size_t k = 0; k < info->enums[i].cnt; k++)
			free(info->enums[i].names[k]);
		free(info->enums[i].names);
		free(info->enums[i].values);
	}
	free(info->funcs);
	free(info->enums);
	memset(info, 0, sizeof(*info));
}
