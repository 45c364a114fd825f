/* interpose.c - see interpose.h. */
#include <dlfcn.h>
#include <stddef.h>

#include "agent/base/interpose.h"

void *interposed_real[IP_COUNT];

static const char *const interposed_names[IP_COUNT] = {
	[IP_PTHREAD_SIGMASK] = "pthread_sigmask",
	[IP_PTHREAD_CREATE] = "pthread_create",
	[IP_SIGACTION] = "sigaction",
	[IP_SIGNAL] = "signal",
	[IP_SWAPCONTEXT] = "swapcontext",
	[IP_SETCONTEXT] = "setcontext",
	[IP_UNWIND_RAISE] = "_Unwind_RaiseException",
	[IP_UNWIND_RETHROW] = "_Unwind_Resume_or_Rethrow",
	[IP_CXA_BEGIN_CATCH] = "__cxa_begin_catch",
	[IP_PTHREAD_EXIT] = "pthread_exit",
	[IP_BACKTRACE] = "backtrace",
	[IP_SIGALTSTACK] = "sigaltstack",
	[IP_DLCLOSE] = "dlclose",
	[IP_LONGJMP] = "longjmp",
	[IP_UNDERSCORE_LONGJMP] = "_longjmp",
	[IP_SIGLONGJMP] = "siglongjmp",
	[IP_LONGJMP_CHK] = "__longjmp_chk",
};

/* libneedle loaded after the C library (preloaded by another preloaded
 * library that depends on it, or dlopen'ed): nothing comes after it in
 * the lookup order, so RTLD_NEXT finds nothing.  The first definition in
 * the global scope is then the real one, unless it is libneedle's own
 * (the program's calls bypass the interposer either way). */
static void *first_not_ours(const char *name)
{
	void *fn = dlsym(RTLD_DEFAULT, name);
	Dl_info mine, theirs;

	if (!fn || !dladdr((void *)interpose_resolve, &mine) || !dladdr(fn, &theirs) ||
	    mine.dli_fbase == theirs.dli_fbase)
		return NULL;
	return fn;
}

void *interpose_resolve(enum interposed which)
{
	void *fn = dlsym(RTLD_NEXT, interposed_names[which]);
	if (!fn)
		fn = first_not_ours(interposed_names[which]);
	__atomic_store_n(&interposed_real[which], fn, __ATOMIC_RELEASE);
	return fn;
}

void interpose_init(void)
{
	for (int i = 0; i < IP_COUNT; i++)
		if (!__atomic_load_n(&interposed_real[i], __ATOMIC_ACQUIRE))
			interpose_resolve((enum interposed)i);
}
