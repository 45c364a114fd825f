/* inject.c - load a shared object into a running process with ptrace and
 * the process's own dlopen.
 *
 * One thread of the target (the thread group leader) is borrowed: seized
 * and interrupted (PTRACE_SEIZE + PTRACE_INTERRUPT: no SIGSTOP, nothing
 * the program can see), its registers saved, and a call to dlopen set up
 * on its stack below the red zone, with a return address of 0.  When
 * dlopen returns, the thread faults at address 0; that fault is taken by
 * the tracer, never delivered: the registers are put back and the thread
 * released.  Every other thread runs throughout, so the process as a
 * whole is never stopped.
 *
 * dlopen's address in the target is found from the tracer's own: both map
 * the same C library file (checked), at bases read from /proc.  glibc
 * 2.34 and later have dlopen in libc itself.
 *
 * Invariants: the borrowed thread resumes with exactly the registers it
 * was stopped with (orig_rax included, so an interrupted system call is
 * restarted as the kernel would have); the memory written below its
 * stack pointer is scratch that no frame owns.  Limits: a thread stopped
 * while it holds the loader's or the allocator's lock would deadlock
 * dlopen (the call is given a deadline and the thread is given back
 * untouched if it expires). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/inject.h"

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Base address of the mapping of file path at offset 0 in pid's maps. */
static uint64_t map_base(pid_t pid, const char *path)
{
	char maps[64], line[PATH_MAX + 128];
	uint64_t base = 0;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "re")))
		return 0;
	while (!base && fgets(line, sizeof(line), f)) {
		unsigned long long lo, off;
		char *name = strchr(line, '/');
		if (!name)
			continue;
		name[strcspn(name, "\n")] = 0;
		if (sscanf(line, "%llx-%*x %*s %llx", &lo, &off) == 2 && off == 0 && !strcmp(name, path))
			base = lo;
	}
	fclose(f);
	return base;
}

static int mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pwrite(fd, buf, len, (off_t)addr);
	int err = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

/* Wait for the next stop of pid, up to deadline_ns; -ETIMEDOUT past it. */
static int wait_stop(pid_t pid, int *status, uint64_t deadline_ns)
{
	for (;;) {
		pid_t r = waitpid(pid, status, __WALL | WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0)
			return -errno;
		if (now_ns() > deadline_ns)
			return -ETIMEDOUT;
		struct timespec t = { 0, 100 * 1000 };
		nanosleep(&t, NULL);
	}
}

int inject_dlopen(pid_t pid, const char *path, struct inject_result *res, char *err, size_t errlen)
{
	Dl_info self;
	struct user_regs_struct saved, call;
	int status, e = 0;

	memset(res, 0, sizeof(*res));
	if (!dladdr((void *)dlopen, &self) || !self.dli_fname) {
		snprintf(err, errlen, "cannot find this process's C library");
		return -ENOENT;
	}
	char libc[PATH_MAX];
	if (!realpath(self.dli_fname, libc))
		snprintf(libc, sizeof(libc), "%s", self.dli_fname);
	uint64_t mine = map_base(getpid(), libc), theirs = map_base(pid, libc);
	if (!mine || !theirs) {
		snprintf(err, errlen, "process %d does not map %s (another C library, or static): cannot call its dlopen",
			 (int)pid, libc);
		return -ENOEXEC;
	}
	uint64_t target_dlopen = theirs + ((uint64_t)(uintptr_t)dlopen - mine);

	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL)) {
		e = -errno;
		snprintf(err, errlen, "cannot attach to process %d: %s", (int)pid, strerror(-e));
		return e;
	}
	uint64_t t0 = now_ns();
	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) || (e = wait_stop(pid, &status, t0 + 2000000000ull))) {
		e = e ? e : -errno;
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		snprintf(err, errlen, "cannot stop a thread of process %d: %s", (int)pid, strerror(-e));
		return e;
	}
	if (ptrace(PTRACE_GETREGS, pid, NULL, &saved)) {
		e = -errno;
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		snprintf(err, errlen, "cannot read the registers of process %d: %s", (int)pid, strerror(-e));
		return e;
	}
	/* The path below the red zone, then a 16-byte aligned call frame
	 * whose return address is 0. */
	size_t len = strlen(path) + 1;
	uint64_t str = (saved.rsp - 128 - 256 - len) & ~15ull;
	uint64_t sp = str - 16 - 8, zero = 0;
	call = saved;
	call.rip = target_dlopen;
	call.rdi = str;
	call.rsi = RTLD_NOW;
	call.rax = 0;
	call.rsp = sp;
	call.orig_rax = (unsigned long long)-1; /* no system call restart on resume */
	if ((e = mem_write(pid, str, path, len)) || (e = mem_write(pid, sp, &zero, sizeof(zero))) ||
	    (ptrace(PTRACE_SETREGS, pid, NULL, &call) && (e = -errno)) ||
	    (ptrace(PTRACE_CONT, pid, NULL, NULL) && (e = -errno))) {
		ptrace(PTRACE_SETREGS, pid, NULL, &saved);
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		snprintf(err, errlen, "cannot set up the call in process %d: %s", (int)pid, strerror(-e));
		return e;
	}
	/* dlopen returns to address 0: a SIGSEGV stop, which is not passed on. */
	for (;;) {
		if ((e = wait_stop(pid, &status, t0 + 10000000000ull))) {
			ptrace(PTRACE_INTERRUPT, pid, NULL, NULL);
			wait_stop(pid, &status, now_ns() + 1000000000ull);
			ptrace(PTRACE_SETREGS, pid, NULL, &saved);
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			snprintf(err, errlen, "dlopen in process %d did not return: %s", (int)pid, strerror(-e));
			return e;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			snprintf(err, errlen, "process %d ended during the call", (int)pid);
			return -ESRCH;
		}
		struct user_regs_struct now;
		if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGSEGV && !ptrace(PTRACE_GETREGS, pid, NULL, &now) &&
		    now.rip == 0) {
			res->handle = now.rax;
			break;
		}
		/* Another stop (a group stop, a signal for the thread): let it be
		 * delivered as it would have been; the call goes on. */
		int sig = WIFSTOPPED(status) && (status >> 16) == 0 ? WSTOPSIG(status) : 0;
		ptrace(PTRACE_CONT, pid, NULL, (void *)(uintptr_t)sig);
	}
	ptrace(PTRACE_SETREGS, pid, NULL, &saved);
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	res->held_ns = now_ns() - t0;
	if (!res->handle) {
		snprintf(err, errlen, "dlopen(%s) failed in process %d", path, (int)pid);
		return -ENOENT;
	}
	return 0;
}
