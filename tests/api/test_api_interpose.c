/* test_api_interpose - libneedle's unversioned interposers take the place
 * of the C library's and the C++ runtime's versioned functions.
 *
 * This program is not linked with libneedle: its references are versioned
 * (pthread_create@GLIBC_2.34, _Unwind_RaiseException@GCC_3.0,
 * __cxa_begin_catch@CXXABI_1.3).  It runs itself again with
 * LD_PRELOAD=libneedle.so, and there every one of them must resolve into
 * libneedle, and sigaction must do what libneedle's does (take SIGTRAP out
 * of the mask the kernel gets). */
#include <dlfcn.h>
#include <execinfo.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include "api/elf_syms.h"
#include "harness.h"

void *__cxa_begin_catch(void *exc);

struct ref {
	const char *name;
	void *addr; /* as this program's relocation resolved it */
};

static void on_usr1(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	struct ref refs[] = {
		{ "pthread_create", (void *)&pthread_create },
		{ "pthread_sigmask", (void *)&pthread_sigmask },
		{ "sigprocmask", (void *)&sigprocmask },
		{ "sigaction", (void *)&sigaction },
		{ "signal", (void *)&signal },
		{ "swapcontext", (void *)&swapcontext },
		{ "setcontext", (void *)&setcontext },
		{ "_Unwind_RaiseException", (void *)&_Unwind_RaiseException },
		{ "_Unwind_Resume_or_Rethrow", (void *)&_Unwind_Resume_or_Rethrow },
		{ "__cxa_begin_catch", (void *)&__cxa_begin_catch },
		{ "pthread_exit", (void *)&pthread_exit },
		{ "backtrace", (void *)&backtrace },
		{ "dlclose", (void *)&dlclose },
		{ "sigaltstack", (void *)&sigaltstack },
		{ "longjmp", (void *)&longjmp },
		{ "siglongjmp", (void *)&siglongjmp },
		{ "sigsuspend", (void *)&sigsuspend },
		{ "ppoll", (void *)&ppoll },
		{ "pselect", (void *)&pselect },
		{ "epoll_pwait", (void *)&epoll_pwait },
		{ "epoll_pwait2", (void *)&epoll_pwait2 },
	};
	size_t n = sizeof(refs) / sizeof(refs[0]);
	(void)argc;

	if (!getenv("TEST_API_INTERPOSE_PRELOADED")) {
		/* Without libneedle, nothing resolves into it. */
		Dl_info info;
		int none = 1;
		for (size_t i = 0; i < n; i++)
			if (dladdr(refs[i].addr, &info) && strstr(info.dli_fname, "libneedle"))
				none = 0;
		CHECK(none, "without libneedle the references resolve to the C library and runtimes");
		setenv("TEST_API_INTERPOSE_PRELOADED", "1", 1);
		setenv("LD_PRELOAD", LIBNEEDLE_DIR "/libneedle.so", 1);
		fflush(stdout);
		execv("/proc/self/exe", argv);
		CHECK(0, "re-exec with LD_PRELOAD");
		return harness_exit();
	}

	struct elf_syms self;
	if (elf_syms_read("/proc/self/exe", &self)) {
		CHECK(0, "this program's dynamic symbols are readable");
		return harness_exit();
	}
	void *h = dlopen("libneedle.so.1", RTLD_NOLOAD | RTLD_NOW);
	void *api = h ? dlsym(h, "needle_version") : NULL;
	Dl_info needle, info;
	CHECK(api && dladdr(api, &needle), "libneedle is preloaded");
	if (!api)
		return harness_exit();
	for (size_t i = 0; i < n; i++) {
		const struct elf_sym *e = elf_syms_find(&self, refs[i].name);
		CHECK(e && !e->defined && e->version[0], "this program's reference is versioned: %s@%s", refs[i].name,
		      e ? e->version : "?");
		CHECK(dladdr(refs[i].addr, &info) && info.dli_fbase == needle.dli_fbase,
		      "%s@%s resolves into libneedle (%s)", refs[i].name, e ? e->version : "?",
		      dladdr(refs[i].addr, &info) ? info.dli_fname : "?");
	}
	elf_syms_free(&self);

	/* The wrapper is the one that runs: the kernel gets the mask without
	 * SIGTRAP, the program reads back its own. */
	struct sigaction act, back;
	struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; } kact;
	memset(&act, 0, sizeof(act));
	act.sa_handler = on_usr1;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, SIGTRAP);
	CHECK(sigaction(SIGUSR1, &act, NULL) == 0, "sigaction(SIGUSR1) with SIGTRAP in sa_mask");
	CHECK(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &kact, sizeof(kact.mask)) == 0 &&
	      !(kact.mask & (1ull << (SIGTRAP - 1))), "the kernel's sa_mask has no SIGTRAP: libneedle's sigaction ran");
	CHECK(sigaction(SIGUSR1, NULL, &back) == 0 && sigismember(&back.sa_mask, SIGTRAP) == 1,
	      "sigaction reads back the mask the program gave");
	return harness_exit();
}
