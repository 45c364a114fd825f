/* dwarf_params.h - the parameters and return values of a program's
 * functions, from its DWARF, as register values (dwarf_params.c). */
#ifndef NEEDLE_DWARF_PARAMS_H
#define NEEDLE_DWARF_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "common/value_spec.h"

#define DW_ITEMS_MAX VALUE_ITEMS_MAX
#define DW_LABEL_MAX VALUE_LABEL_MAX
#define DW_STACK_WORDS 16 /* stack words described per function (argN, N = 7..22) */

/* One value in a register or a stack word: a parameter, a field of a
 * struct, or (part of) the return value. */
struct dw_item {
	uint8_t kind;    /* ARG_KIND_* (common/shm_layout.h) */
	uint8_t index;   /* argN (N > 6: a stack word) / fpargN; 0 for return registers */
	uint8_t fmt;     /* d u x c p f s e b */
	uint8_t bits;
	uint8_t shift;   /* byte offset in the register or word */
	int32_t enum_id; /* fmt e: index in dw_info.enums; else -1 */
	char label[DW_LABEL_MAX]; /* "key", "p.x"; return values: "" or ".x" */
};

/* What a register of the integer (argN) or floating-point (fpargN)
 * sequence, or a stack word, holds at the entry. */
struct dw_reg {
	char param[DW_LABEL_MAX]; /* the parameter's name ("" if none) */
	uint8_t what;             /* 0 nothing, 'p' a pointer, 's' a char pointer, 'i' another integer, 'f', 'a' part of a struct */
};

/* A parameter (or the return value, param "") of a struct, union or
 * class type: the views show its values as one, TYPE{...} as uftrace. */
struct dw_group {
	char param[DW_LABEL_MAX];
	char type[DW_LABEL_MAX]; /* the type's name without template arguments; "" anonymous */
	uint8_t at_exit;
	uint8_t by_ref;          /* the value is the object's address (a C++ class passed by
				  * reference, a value returned in memory) */
	uint8_t empty;           /* its type has no members or functions in DWARF: "TYPE{}" */
	uint8_t valueless;       /* an entry group none of whose values is recorded (an empty
				  * class: no register; optimized out): shown before the
				  * values of the parameter next, whose name it keeps */
	uint8_t partial;         /* a field of it is left out (packed across two words) */
	uint8_t placed;          /* next is known ("" and placed: the last parameters have no value) */
	char next[DW_LABEL_MAX];
};
#define DW_GROUPS_MAX 8

struct dw_func {
	char *sym;      /* the symbol its code starts at (or an alias of it): what its site is named */
	uint64_t addr;  /* that address, as dwfl places the file */
	uint64_t file_off; /* where its code starts in the file (UINT64_MAX: not in a segment) */
	char *cxx;      /* a C++ function's demangled name ("ns::f(int)"), else NULL */
	size_t cxx_base; /* its length without the parameter list ("ns::f") */
	struct dw_item entry[DW_ITEMS_MAX], exit[DW_ITEMS_MAX];
	uint8_t entry_cnt, exit_cnt;
	uint8_t varargs;   /* ends with "...": the variable arguments are not shown */
	uint8_t truncated; /* values not shown (more than DW_ITEMS_MAX, a field across two
			    * stack words): replay shows "..." */
	uint8_t on_stack;  /* a parameter whose place is unknown (a type this reader does not
			    * understand): it and those after it not shown */
	uint8_t returns;   /* 0 void, 1 a value (shown or not) */
	uint8_t ambiguous; /* two functions of this symbol name disagree: none shown */
	uint8_t mismatch;  /* its DWARF places a parameter where the ABI does not: none shown */
	uint8_t ifunc;     /* sym is an old version's name whose default version is an IFUNC
			    * (libm's expf@GLIBC_2.2.5 beside expf@@GLIBC_2.27): the site of that
			    * name is the implementation the resolver picked, not this function's
			    * entry, so it is named by its object and name, not its offset */
	struct dw_reg int_reg[6], fp_reg[8];
	/* The words above the return address that parameters passed in
	 * memory take (argN, N = 7 + word), the first DW_STACK_WORDS of
	 * them described; stack_words counts them all. */
	struct dw_reg stack_word[DW_STACK_WORDS];
	uint16_t stack_words;
	uint8_t stack_unknown; /* words past stack_words are not placed (an over-aligned value, an __int128) */
	struct dw_group group[DW_GROUPS_MAX];
	uint8_t group_cnt;
};

struct dw_enum {
	size_t cnt;
	int64_t *values;
	char **names;
};

struct dw_info {
	struct dw_func *funcs; /* sorted by sym */
	size_t cnt;
	struct dw_enum *enums;
	size_t enum_cnt;
	char debug_file[4096]; /* where the DWARF came from */
};

/* Loads the functions defined in the ELF file at path (or its separate
 * debug file, found by build id or debug link under /usr/lib/debug).
 * 0; -ENODATA when there is no DWARF; other -errno with err filled. */
int dw_info_load(const char *path, struct dw_info *info, char *err, size_t errlen);
/* The function whose symbol is sym or, failing that, the one C++
 * function whose demangled name is, without or with its parameter list
 * (as needle_site_match matches them); NULL when none, or overloads. */
const struct dw_func *dw_info_find(const struct dw_info *info, const char *sym);
/* How many C++ functions (distinct symbols) are named name without
 * their parameter lists; their demangled names, quoted, into list. */
size_t dw_info_overloads(const struct dw_info *info, const char *name, char *list, size_t len);
void dw_info_free(struct dw_info *info);

#endif
