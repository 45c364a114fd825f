/* program_libs.h - the shared libraries a program loads at start (as its
 * dynamic loader lists them) or a running process maps: the objects
 * whose DWARF --auto-args reads besides the program's (program_libs.c). */
#ifndef NEEDLE_PROGRAM_LIBS_H
#define NEEDLE_PROGRAM_LIBS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct program_lib {
	char *path;        /* as the program names it */
	char *file;        /* where needle reads it (a -p target's: the mapped file itself) */
	uint64_t dev, ino; /* the file's identity, which the agent compares with its mapping's */
};
struct program_libs {
	struct program_lib *v;
	size_t cnt;
};
/* Always 0: an empty list when they cannot be known. */
int program_libs_of_file(const char *prog, struct program_libs *libs);
int program_libs_of_process(pid_t pid, struct program_libs *libs);
void program_libs_free(struct program_libs *libs);

#endif
