/* raw_syscall.h - system calls made with the syscall instruction here,
 * not through the C library.
 *
 * For code that runs where the C library's wrappers may not be used: in
 * signal handlers that must not touch errno, and while a patch batch may
 * be rewriting a wrapper's bytes or has an int3 written past one of its
 * syscall instructions (sleeper_door.c).  They return -errno. */
#ifndef NEEDLE_RAW_SYSCALL_H
#define NEEDLE_RAW_SYSCALL_H

static inline long raw_syscall4(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}

static inline long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}

#endif
