/* sym_source.h - names for functions of stripped objects (--with-syms):
 * from a trace recorded while they had symbols, or from a directory of
 * their unstripped copies, separate debug files or uftrace's .sym files
 * (sym_source.c). */
#ifndef NEEDLE_SYM_SOURCE_H
#define NEEDLE_SYM_SOURCE_H

#include <stddef.h>
#include <stdint.h>

struct sym_source;
struct trace;

/* Read path: a needle trace file, or a directory.  NULL, with the reason
 * in err (one line), when it gives no names. */
struct sym_source *sym_source_open(const char *path, char *err, size_t errlen);
void sym_source_close(struct sym_source *s);

/* The source's object for the object at path (its file name is what
 * counts, or that of the file a link of that name points to) of build id
 * id (id_len bytes; 0: not known): the one of that build id, else the
 * one of that file name unless both know their build and they differ.  Its index, or SYM_SOURCE_NONE, or
 * SYM_SOURCE_OTHER_BUILD (a file of that name, another build). */
#define SYM_SOURCE_NONE (-1L)
#define SYM_SOURCE_OTHER_BUILD (-2L)
long sym_source_object(const struct sym_source *s, const char *path, const uint8_t *id, size_t id_len);
/* The symbol of the function at addr (an address in the file) of
 * object obj (sym_source_object's), or NULL. */
const char *sym_source_name(const struct sym_source *s, long obj, uint64_t addr);
/* fn for every function of s, one per address, by object then address;
 * stops at the first nonzero return, which it returns. */
typedef int sym_source_fn(void *arg, const char *object, const uint8_t *id, size_t id_len, uint64_t addr,
			  uint64_t size, const char *name);
int sym_source_each(const struct sym_source *s, sym_source_fn *fn, void *arg);
/* Is name the one discovery gives a function no symbol names
 * (func_0xADDR@OBJECT)?  1 with *addr and *object (pointing into name). */
int sym_source_unnamed(const char *name, uint64_t *addr, const char **object);

/* What trace_use_syms did: the functions without a name, how many of
 * them it named, and an object of the trace the source has another
 * build of (NULL: none). */
struct sym_use {
	size_t unnamed, named;
	const char *other_build;
};
/* Name t's unnamed functions from s (before the views demangle by their
 * options).  0, or -1 out of memory. */
int trace_use_syms(struct trace *t, const struct sym_source *s, struct sym_use *use);

#endif
