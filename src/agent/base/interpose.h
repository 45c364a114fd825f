/* interpose.h - every function libneedle interposes, and the real
 * functions behind them.
 *
 * NEEDLE_INTERPOSED is the one list of them: each entry's tag (enum
 * interposed, for interpose_next), its name (the symbol libneedle
 * exports, and looks the real one up by), whether the C library's
 * function stays traceable, and whether the interposer calls a real
 * function at all.  The enum, the name table interpose_init and
 * interpose_bind_loaded work from, interpose_is_interposed's answer and
 * tests/api/test_api_symbols.c's expected exports are all made from it.
 * The definitions stay in the files whose mechanism they serve (they need
 * that file's state), each marked NEEDLE_INTERPOSER; dlopen's is
 * assembly (agent.c).
 *
 * Invariants:
 *   - a function libneedle exports without a symbol version is in the
 *     list, and every entry is exported so (test_api_symbols checks both
 *     ways against the built library);
 *   - an interposer is NEEDLE_INTERPOSER, never NEEDLE_API: NEEDLE_API
 *     is the public API of include/needle.h, which libneedle.map versions;
 *     interposers must stay unversioned to take the place of the
 *     versioned originals (see libneedle.map);
 *   - every real function is looked up with dlsym(RTLD_NEXT) by
 *     interpose_init(), from the agent's constructor.  Several are
 *     async-signal-safe and are called from signal handlers, where dlsym
 *     (which takes the loader's lock) must not run: after init the lookup
 *     is one load.  A function whose library is not loaded at init
 *     (libstdc++'s __cxa_begin_catch in a program that dlopens C++ later)
 *     is looked up at its first use, which is never in a signal handler
 *     for those. */
#ifndef NEEDLE_INTERPOSE_H
#define NEEDLE_INTERPOSE_H

#include <signal.h>

/* X(tag, name, traceable, real):
 *   traceable  0: an interposer calls the C library's function in the
 *              middle of needle's machinery (a stack switch, an unwind, a
 *              walk, a mask change a batch relies on), so it must not be
 *              traced or relocated (interpose_is_interposed, site
 *              discovery's RELOC_INTERPOSED); 1: the interposer only notes
 *              a mask around the call, and tracing it disturbs nothing;
 *   real       1: the interposer calls the next definition
 *              (interpose_next(tag)), looked up at init and bound late by
 *              interpose_bind_loaded; 0: it has none of its own
 *              (sigprocmask calls libneedle's pthread_sigmask). */
#define NEEDLE_INTERPOSED(X)                                                            \
	/* patch/sigmask_watch.c: masks, handlers, threads, jumps */                   \
	X(IP_PTHREAD_SIGMASK, pthread_sigmask, 0, 1)                                    \
	X(IP_SIGPROCMASK, sigprocmask, 0, 0)                                            \
	X(IP_PTHREAD_CREATE, pthread_create, 0, 1)                                      \
	X(IP_SIGACTION, sigaction, 0, 1)                                                \
	X(IP_SIGNAL, signal, 0, 1)                                                      \
	/* dispatch/context_switch.c */                                                \
	X(IP_SWAPCONTEXT, swapcontext, 0, 1)                                            \
	X(IP_SETCONTEXT, setcontext, 0, 1)                                              \
	/* dispatch/unwind.c */                                                        \
	X(IP_UNWIND_RAISE, _Unwind_RaiseException, 0, 1)                                \
	X(IP_UNWIND_RETHROW, _Unwind_Resume_or_Rethrow, 0, 1)                           \
	X(IP_CXA_BEGIN_CATCH, __cxa_begin_catch, 0, 1)                                  \
	X(IP_PTHREAD_EXIT, pthread_exit, 0, 1)                                          \
	X(IP_BACKTRACE, backtrace, 0, 1)                                                \
	/* base/altstack.c */                                                          \
	X(IP_SIGALTSTACK, sigaltstack, 0, 1)                                            \
	/* agent.c */                                                                  \
	X(IP_DLCLOSE, dlclose, 0, 1)                                                    \
	X(IP_DLOPEN, dlopen, 0, 1)                                                      \
	/* patch/sigmask_watch.c: the jumps, and the waits with a mask of their own */ \
	X(IP_LONGJMP, longjmp, 0, 1)                                                    \
	X(IP_UNDERSCORE_LONGJMP, _longjmp, 0, 1)                                        \
	X(IP_SIGLONGJMP, siglongjmp, 0, 1)                                              \
	X(IP_LONGJMP_CHK, __longjmp_chk, 0, 1)                                          \
	X(IP_SIGSUSPEND, sigsuspend, 1, 1)                                              \
	X(IP_PPOLL, ppoll, 1, 1)                                                        \
	X(IP_PPOLL_CHK, __ppoll_chk, 1, 1)                                              \
	X(IP_PSELECT, pselect, 1, 1)                                                    \
	X(IP_EPOLL_PWAIT, epoll_pwait, 1, 1)                                            \
	X(IP_EPOLL_PWAIT2, epoll_pwait2, 1, 1)                                          \
	X(IP_TIMER_CREATE, timer_create, 1, 1)                                          \
	/* agent.c: a vfork child runs untraced */                                     \
	X(IP_VFORK, vfork, 0, 0)                                                        \
	/* record/exec_follow.c: the programs exec'ed, traced into the recording */    \
	X(IP_EXECVE, execve, 0, 1)                                                      \
	X(IP_EXECV, execv, 0, 0)                                                        \
	X(IP_EXECVPE, execvpe, 0, 1)                                                    \
	X(IP_EXECVP, execvp, 0, 0)                                                      \
	X(IP_EXECL, execl, 0, 0)                                                        \
	X(IP_EXECLP, execlp, 0, 0)                                                      \
	X(IP_EXECLE, execle, 0, 0)                                                      \
	X(IP_FEXECVE, fexecve, 0, 1)                                                    \
	X(IP_EXECVEAT, execveat, 0, 1)                                                  \
	X(IP_POSIX_SPAWN, posix_spawn, 0, 1)                                            \
	X(IP_POSIX_SPAWNP, posix_spawnp, 0, 1)

#define INTERPOSE_ENUM(tag, name, traceable, real) tag,
enum interposed {
	NEEDLE_INTERPOSED(INTERPOSE_ENUM)
	IP_COUNT
};
#undef INTERPOSE_ENUM

/* What an interposer's definition is marked with: exported, like the
 * API, but never given a symbol version by libneedle.map. */
#define NEEDLE_INTERPOSER __attribute__((visibility("default")))
/* An interposer that is also a site: the program's call to it is a call
 * like any other (a line of the graph, its arguments, its filters), where
 * the C library's function behind it is not traceable.  Its entry is the
 * compiler's 5-byte NOP, listed in libneedle's own
 * __patchable_function_entries, which discovery reads as for any object
 * (libneedle's other functions have none and are never relocated).  Only
 * for interposers whose work is safe to trace around: an entry hook that
 * runs before a stack switch (swapcontext, longjmp) or an unwind's first
 * step (_Unwind_RaiseException) would push a frame the switch then has to
 * account for, unless the site is entry-only (site_discover.c's
 * switch_names: longjmp and its kin, swapcontext, setcontext, whose
 * returns are never hooked); the unwinder's stay plain NEEDLE_INTERPOSER. */
#define NEEDLE_INTERPOSER_SITE __attribute__((visibility("default"), patchable_function_entry(5, 0)))

extern void *interposed_real[IP_COUNT] __attribute__((visibility("hidden")));

void *interpose_resolve(enum interposed which);
/* Is name one of the functions libneedle interposes (its exported name)
 * whose C library function must not be traced (traceable 0 in
 * NEEDLE_INTERPOSED)? */
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
