/* interpose.h - the real function behind one that libneedle interposes
 * (pthread_create, swapcontext, _Unwind_RaiseException...): looked up once
 * with dlsym(RTLD_NEXT) and cached by the caller. */
#ifndef NEEDLE_INTERPOSE_H
#define NEEDLE_INTERPOSE_H

#include <dlfcn.h>

static inline void *interpose_next(void **cache, const char *name)
{
	void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (!fn) {
		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(cache, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

#endif
