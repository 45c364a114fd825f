/* fault_shim.c - fault injection for libneedle, preloaded beside it.
 *
 * Every malloc, calloc, realloc, posix_memalign, mmap and mprotect that
 * libneedle's own code calls is a fault point (calls made by the C
 * library or libelf on libneedle's behalf are not: the caller is told
 * apart by its return address, inside libneedle's executable mapping).
 * With NEEDLE_FAULT_AT=N the Nth fault point fails (NULL, MAP_FAILED or
 * -1 with ENOMEM); with N=0 none does.  At exit the number of fault points
 * met is written to the file NEEDLE_FAULT_LOG names, so a driver knows how
 * many runs cover them all. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static uintptr_t lo, hi;
static long fail_at;
static _Atomic long met;

/* libneedle's r-xp mapping, read from /proc/self/maps with system calls
 * only (no allocation while allocation is being interposed). */
static void find_agent(void)
{
	char buf[65536];
	int fd = (int)syscall(SYS_open, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return;
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (strstr(line, "libneedle.so") && strstr(line, " r-xp ")) {
			lo = strtoull(line, NULL, 16);
			hi = strtoull(strchr(line, '-') + 1, NULL, 16);
		}
		line = nl ? nl + 1 : NULL;
	}
}

__attribute__((constructor(101))) static void shim_init(void)
{
	const char *at = getenv("NEEDLE_FAULT_AT");
	fail_at = at ? atol(at) : 0;
	find_agent();
}

static void write_log(void)
{
	const char *path = getenv("NEEDLE_FAULT_LOG");
	char line[32];
	if (!path || !lo) /* a process without libneedle (needle itself) */
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	int n = snprintf(line, sizeof(line), "%ld\n", (long)met);
	if (write(fd, line, (size_t)n) < 0) {
	}
	close(fd);
}

__attribute__((destructor)) static void shim_fini(void)
{
	write_log();
}

/* 1 if this call, made from ret, is the fault point to fail. */
static int inject(void *ret)
{
	if ((uintptr_t)ret < lo || (uintptr_t)ret >= hi)
		return 0;
	long n = ++met;
	if (fail_at && n == fail_at) {
		/* Log now too: a program that _exits runs no destructor. */
		write_log();
		/* NEEDLE_FAULT_WHERE: say which call fails, as an offset into
		 * libneedle's code mapping (for addr2line), when a run goes wrong. */
		if (getenv("NEEDLE_FAULT_WHERE")) {
			char line[64];
			int len = snprintf(line, sizeof(line), "fault_shim: fault %ld at code+0x%lx\n", n,
					   (unsigned long)((uintptr_t)ret - lo));
			if (write(2, line, (size_t)len) < 0) {
			}
		}
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	if (inject(__builtin_return_address(0)))
		return errno = ENOMEM, NULL;
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	if (inject(__builtin_return_address(0)))
		return errno = ENOMEM, NULL;
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	if (inject(__builtin_return_address(0)))
		return errno = ENOMEM, NULL;
	return __libc_realloc(p, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	if (inject(__builtin_return_address(0)))
		return ENOMEM;
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (inject(__builtin_return_address(0)))
		return errno = ENOMEM, MAP_FAILED;
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	return (void *)r;
}

int mprotect(void *addr, size_t len, int prot)
{
	if (inject(__builtin_return_address(0)))
		return errno = ENOMEM, -1;
	return (int)syscall(SYS_mprotect, addr, len, prot);
}
