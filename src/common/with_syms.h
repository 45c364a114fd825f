/* with_syms.h - the lines `needle record --with-syms` hands the agent (the
 * configuration's string `syms`), one function each:
 *
 *   OBJECT <tab> BUILDID <tab> ADDR <tab> SIZE <tab> NAME
 *
 * OBJECT the file's name (no directory), BUILDID its GNU build id in
 * lowercase hex or "-" when the source had none, ADDR and SIZE hex, ADDR
 * relative to the object's load bias.  The agent (sites/elf_image.c) and
 * the command (args/cxx_patterns.c) read them with the same rule, here,
 * so that a name the one gives a function is the name the other matches:
 *
 *   - lines of the object's build id, when there are any (pass
 *     WITH_SYMS_BY_ID); else
 *   - lines of its file name that carry no build id, or any build id
 *     when the object has none itself (WITH_SYMS_BY_NAME).  A line of its
 *     name with another build id names another build's code: never
 *     taken (WITH_SYMS_OTHER_BUILD, for a warning). */
#ifndef NEEDLE_COMMON_WITH_SYMS_H
#define NEEDLE_COMMON_WITH_SYMS_H

#include <stddef.h>
#include <stdint.h>

struct with_syms_line {
	const char *object;
	size_t object_len;
	const char *build_id; /* hex, or "-" */
	size_t build_id_len;
	uint64_t addr, size;
	const char *name; /* not NUL-terminated */
	size_t name_len;
};

enum with_syms_pass { WITH_SYMS_BY_ID, WITH_SYMS_BY_NAME };

enum with_syms_match {
	WITH_SYMS_NO,
	WITH_SYMS_YES,
	WITH_SYMS_OTHER_BUILD, /* its name, another build's id */
};

/* The next well-formed line at *pos (five fields, a nonzero address, a
 * name): 1 with *line filled and *pos past it, 0 at the end. */
int with_syms_next(const char **pos, struct with_syms_line *line);

/* Does line name the object whose file names are names[0..n_names) (its
 * own, and the file a link of that name points to) and whose build id is
 * hex_id ("" when it has none), in this pass? */
enum with_syms_match with_syms_match(const struct with_syms_line *line, enum with_syms_pass pass,
				     const char *const *names, size_t n_names, const char *hex_id);

#endif
