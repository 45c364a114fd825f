/* arg_names.h - the names and types of recorded values (SEC_ARGS), for
 * the views (arg_names.c). */
#ifndef NEEDLE_ARG_NAMES_H
#define NEEDLE_ARG_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct arg_name {
	uint8_t kind, index, shift;
	int32_t enum_id;   /* -1: not an enum */
	const char *label; /* "" for a plain return value */
};

/* A parameter of a struct, union or class type (param "": the return
 * value): its values are labelled "PARAM.field", "PARAM[i]". */
struct arg_group {
	const char *param, *type; /* type "": anonymous (a lambda's closure) */
	const char *next;         /* NULL, or (a group without values: type is then the
				   * text shown, "TYPE{}") the parameter before whose
				   * values it is shown ("": after the last) */
	uint8_t partial;          /* a field of it was left out */
};

struct arg_names_func {
	const char *sym;
	struct arg_name *v;
	uint32_t cnt;
	uint8_t varargs;   /* the entry ends with "..." */
	uint8_t partial;   /* a group of it is partial: its values end with "..." by name */
	struct arg_group *groups;
	uint32_t group_cnt;
};

struct arg_names_enum {
	int64_t *values;
	const char **names;
	size_t cnt;
};

struct arg_names {
	char *text;                      /* the section, split in place */
	struct arg_names_func *funcs;    /* sorted by sym */
	size_t func_cnt;
	struct arg_names_enum *enums;    /* by id */
	size_t enum_cnt;
};

/* Parses a SEC_ARGS section (docs/file-format.md).  0, or -1 when it is
 * malformed (the views then show values by register). */
int arg_names_parse(struct arg_names *an, const char *text, size_t len);
void arg_names_free(struct arg_names *an);
/* The names of sym's values, or NULL. */
const struct arg_names_func *arg_names_find(const struct arg_names *an, const char *sym);
/* The value's name in f at (kind, index, shift), or NULL. */
const struct arg_name *arg_names_item(const struct arg_names_func *f, unsigned kind, unsigned index, unsigned shift);
/* The type of the struct parameter a value labelled label is part of
 * ("p.x", "p[1]"; at_exit, "x" for a returned struct's field; or "p",
 * "" for one passed or returned by its address), or NULL when it is no
 * part of one; *param_len is the parameter's length in label (0 for a
 * return value). */
const char *arg_names_group(const struct arg_names_func *f, const char *label, int at_exit, size_t *param_len);
/* The enumerator of enum id whose value has these low bits, or NULL. */
const char *arg_names_enumerator(const struct arg_names *an, int32_t id, uint64_t v, unsigned bits);
/* The value as enum id's names into buf: its enumerator or, for an enum
 * of flags (its nonzero enumerators single bits), the OR of those its
 * bits are, highest first ("MAP_ANON|MAP_PRIVATE", "O_CREAT|0x40000000"
 * for a bit it has no name for).  1, or 0 when the value has no name
 * (or buf no room). */
int arg_names_enum_format(const struct arg_names *an, int32_t id, uint64_t v, unsigned bits, char *buf, size_t len);

#endif
