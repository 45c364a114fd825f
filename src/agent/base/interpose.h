/* interpose.h - the real functions behind those that libneedle interposes
 * (pthread_sigmask, sigaction, pthread_create, swapcontext,
 * _Unwind_RaiseException, sigsuspend...).
 *
 * Every one is looked up with dlsym(RTLD_NEXT) by interpose_init(), from
 * the agent's constructor.  Several are async-signal-safe and are called
 * from signal handlers, where dlsym (which takes the loader's lock) must
 * not run: after init the lookup is one load.  A function whose library
 * is not loaded at init (libstdc++'s __cxa_begin_catch in a program that
 * dlopens C++ later) is looked up at its first use, which is never in a
 * signal handler for those. */
#ifndef NEEDLE_INTERPOSE_H
#define NEEDLE_INTERPOSE_H

#include <signal.h>

enum interposed {
	IP_PTHREAD_SIGMASK,
	IP_PTHREAD_CREATE,
	IP_SIGACTION,
	IP_SIGNAL,
	IP_SWAPCONTEXT,
	IP_SETCONTEXT,
	IP_UNWIND_RAISE,
	IP_UNWIND_RETHROW,
	IP_CXA_BEGIN_CATCH,
	IP_PTHREAD_EXIT,
	IP_BACKTRACE,
	IP_SIGALTSTACK,
	IP_DLCLOSE,
	IP_DLOPEN,
	IP_LONGJMP,
	IP_UNDERSCORE_LONGJMP,
	IP_SIGLONGJMP,
	IP_LONGJMP_CHK,
	/* Waits with a mask of their own (sigmask_watch.c); from here on,
	 * the C library's functions stay traceable: interpose_is_interposed
	 * does not name them. */
	IP_SIGSUSPEND,
	IP_PPOLL,
	IP_PPOLL_CHK,
	IP_PSELECT,
	IP_EPOLL_PWAIT,
	IP_EPOLL_PWAIT2,
	IP_COUNT
};

extern void *interposed_real[IP_COUNT] __attribute__((visibility("hidden")));

void *interpose_resolve(enum interposed which);
/* Is name one of the functions libneedle interposes (its exported name)
 * for its machinery, whose C library function must not be traced?  The
 * waits with a mask are not. */
int interpose_is_interposed(const char *name);
void interpose_init(void);
/* libneedle was loaded into a running process (needle record -p): the
 * loader bound every object's references to these functions to the C
 * library long ago, so interposition needs their GOT slots rewritten to
 * libneedle's definitions, as LD_PRELOAD would have bound them.  Number of
 * slots rewritten (0 on a second call), or negative errno. */
int interpose_bind_loaded(void);

static inline void *interpose_next(enum interposed which)
{
	void *fn = __atomic_load_n(&interposed_real[which], __ATOMIC_ACQUIRE);
	return fn ? fn : interpose_resolve(which);
}

/* sigaction without needle's adjustments (patch/sigmask_watch.c's
 * interposer): for needle's own handlers. */
static inline int sigaction_real(int sig, const struct sigaction *act, struct sigaction *old)
{
	int (*fn)(int, const struct sigaction *, struct sigaction *) = interpose_next(IP_SIGACTION);
	return fn(sig, act, old);
}

#endif
