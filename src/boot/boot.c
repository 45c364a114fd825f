/* boot.c - libneedle-boot.so: the only code `needle record -p` runs on the
 * thread it borrows from a running process (cli/inject/inject.c).
 *
 * That thread is held stopped for as long as the calls made on it take,
 * and loading libneedle there (with libelf and libz behind it, and their
 * relocations) would be most of it.  So the borrowed thread only loads
 * this object, which needs nothing but the C library, and calls
 * needle_boot(), which copies its request and starts a thread; that
 * thread loads libneedle and hands the session over to it
 * (needle_remote_attach, agent/remote_attach.c) while every thread of the
 * program runs.
 *
 * Invariants:
 *  - needle_boot returns at once; it allocates nothing but the thread.
 *  - The boot thread blocks every signal but SIGTRAP and SIGRTMAX - 2
 *    (libneedle's stop signal unless NEEDLE_STOP_SIGNAL names another,
 *    which the session thread then unblocks), from its first
 *    instruction: no signal meant for the program lands in it.
 *  - A failure after needle_boot has returned (libneedle cannot be
 *    loaded, a session is already running) is told to needle record on
 *    the session socket, as one line "E <errno> <message>", so that it
 *    can say why rather than wait.
 *  - The borrowed thread's visit stack is unmapped by the boot thread, not
 *    on the borrowed thread (ATTACH_STACK_RELEASED).
 *  - The object stays loaded (a later attach finds it); it has no state
 *    but one request at a time. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/attach_protocol.h"

#define BOOT_API __attribute__((visibility("default")))

static _Atomic int booting;
static char lib_path[4096];
static char session_name[ATTACH_NAME_MAX + 1];
static volatile uint64_t *visit_stack;

/* The boot thread's stack is ours, not one pthread_create maps: a new
 * stack is an mmap and an mprotect for its guard page, TLB shootdowns
 * across the process's CPUs that the borrowed thread waits for.  One boot
 * runs at a time; the previous boot thread is joined, without waiting,
 * before its stack is used again.  (bss: it costs memory only where a
 * boot touched it.) */
#define BOOT_STACK (512u << 10)
static char boot_stack[BOOT_STACK] __attribute__((aligned(4096)));
static pthread_t boot_thread;
static int boot_thread_started;

/* Tell needle record why nothing will connect: one line on its socket. */
static void report(int err, const char *msg)
{
	struct sockaddr_un addr;
	size_t n = strlen(session_name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char line[600];

	if (fd < 0)
		return;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path + 1, session_name, n);
	int len = snprintf(line, sizeof(line), ATTACH_ERROR_WRITE, err, msg);
	if (!connect(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) &&
	    len > 0 && write(fd, line, (size_t)len) < 0) {
		/* needle record is gone: nobody to tell */
	}
	close(fd);
}

/* The stack the borrowed thread ran on: unmapped once needle record says
 * the thread is off it (10 s at most; after that it is left mapped, since
 * the thread's state is unknown). */
static void release_visit_stack(void)
{
	volatile uint64_t *stack = visit_stack;
	if (!stack)
		return;
	for (int i = 0; i < 10000 && *stack != ATTACH_STACK_RELEASED; i++) {
		struct timespec t = { 0, 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	if (*stack == ATTACH_STACK_RELEASED)
		munmap((void *)stack, ATTACH_VISIT_STACK);
}

static void *boot(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "needle-boot");
	release_visit_stack();
	void *lib = dlopen(lib_path, RTLD_NOW);
	if (!lib) {
		const char *why = dlerror();
		report(ENOENT, why ? why : "dlopen failed");
	} else {
		int (*attach)(const char *) = (int (*)(const char *))dlsym(lib, "needle_remote_attach");
		int err = attach ? attach(session_name) : -ENOSYS;
		if (err)
			report(-err, err == -EBUSY ? "the process is already being recorded"
				       : "libneedle could not start its session thread");
	}
	atomic_store(&booting, 0);
	return NULL;
}

/* request: "LIBNEEDLE_PATH\nSESSION_NAME"; stack: the visit's stack, taken
 * over when this returns 0 (common/attach_protocol.h), or NULL.  0, -EBUSY
 * while a boot runs, -EINVAL, or the error of pthread_create. */
BOOT_API int needle_boot(const char *request, void *stack)
{
	const char *nl = request ? strchr(request, '\n') : NULL;
	int expected = 0;

	if (!nl || (size_t)(nl - request) >= sizeof(lib_path) || strlen(nl + 1) > ATTACH_NAME_MAX)
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&booting, &expected, 1))
		return -EBUSY;
	if (boot_thread_started) {
		/* booting was cleared by the last boot thread just before it
		 * returned: it may still be on boot_stack. */
		if (pthread_tryjoin_np(boot_thread, NULL)) {
			atomic_store(&booting, 0);
			return -EBUSY;
		}
		boot_thread_started = 0;
	}
	visit_stack = stack;
	memcpy(lib_path, request, (size_t)(nl - request));
	lib_path[nl - request] = 0;
	strcpy(session_name, nl + 1);

	pthread_attr_t attr;
	sigset_t mask;
	sigfillset(&mask);
	sigdelset(&mask, SIGTRAP);
	sigdelset(&mask, SIGRTMAX - 2);
	int err = pthread_attr_init(&attr);
	if (!err) {
		err = pthread_attr_setsigmask_np(&attr, &mask);
		if (!err)
			err = pthread_attr_setstack(&attr, boot_stack, sizeof(boot_stack));
		if (!err)
			err = pthread_create(&boot_thread, &attr, boot, NULL);
		pthread_attr_destroy(&attr);
		boot_thread_started = !err;
	}
	if (err)
		atomic_store(&booting, 0);
	return -err;
}
