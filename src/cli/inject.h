/* inject.h - load a shared object into a running process (see inject.c). */
#ifndef NEEDLE_INJECT_H
#define NEEDLE_INJECT_H

#include <stdint.h>
#include <sys/types.h>

struct inject_result {
	uint64_t handle;      /* what dlopen returned in the target (0: failed) */
	uint64_t held_ns;     /* how long the borrowed thread was stopped */
};

/* dlopen(path, RTLD_NOW) in process pid, run by one of its threads that
 * is borrowed for the call and given back with its registers unchanged;
 * the other threads run on.  0, or -errno with a message in err. */
int inject_dlopen(pid_t pid, const char *path, struct inject_result *res, char *err, size_t errlen);

#endif
