/* sym_source.h - names for functions of stripped objects (--with-syms):
 * from a trace recorded while they had symbols, or from a directory of
 * their unstripped copies or separate debug files (sym_source.c). */
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
/* The symbol of the function at addr (an address in the file) of the
 * object named object (a path: its file name is what counts), or NULL. */
const char *sym_source_name(const struct sym_source *s, const char *object, uint64_t addr);
/* fn for every function of s, one per address, by object then address;
 * stops at the first nonzero return, which it returns. */
int sym_source_each(const struct sym_source *s,
		    int (*fn)(void *arg, const char *object, uint64_t addr, uint64_t size, const char *name), void *arg);
/* Is name the one discovery gives a function no symbol names
 * (func_0xADDR@OBJECT)?  1 with *addr and *object (pointing into name). */
int sym_source_unnamed(const char *name, uint64_t *addr, const char **object);
/* Name t's unnamed functions from s (before the views demangle by their
 * options).  How many were named. */
int trace_use_syms(struct trace *t, const struct sym_source *s);

#endif
