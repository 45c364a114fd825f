/* safe_copy.h - copying a string from an address that may not be
 * readable, without a system call: the user-space counterpart of the
 * kernel's copy_from_user_nofault (see safe_copy.c). */
#ifndef NEEDLE_SAFE_COPY_H
#define NEEDLE_SAFE_COPY_H

#include <signal.h>
#include <stddef.h>

/* Install the SIGSEGV and SIGBUS handler that turns a fault inside the
 * copy into a short count, in front of whatever the program installed
 * (which it goes on seeing and getting its own faults delivered to).
 * Once per process; later calls return 0.  0 or negative errno. */
int safe_copy_init(void);

/* Copy the string at src into dst: the bytes src[0], src[1], ... in that
 * order, stopping after the first NUL, after max bytes, or at the first
 * byte that cannot be read, whichever comes first.  dst has room for max
 * bytes.
 *
 * Returns n, the number of bytes stored in dst[0, n), the NUL included
 * when one was read.  Exactly one of:
 *   - *faulted == 0, n > 0 and dst[n - 1] == 0: the whole string, of
 *     length n - 1 (a NUL is never stored but last);
 *   - *faulted == 0 and n == max, no NUL in dst[0, n): cut at max;
 *   - *faulted == 1, n < max, no NUL in dst[0, n): src[n] could not be
 *     read (unmapped, PROT_NONE, past the end of a mapped file, not a
 *     user address); everything before it was.
 * dst[n, max) is left unspecified (the copy may store there).  Each byte
 * is read once; a string another thread writes meanwhile yields bytes
 * that each held their place at some moment of the call.  Nothing is
 * read at or past src + max; up to 7 bytes before src may be, in the
 * 8-byte aligned word that holds src[0] (so in its page: they cannot
 * fault when it does not).
 *
 * Async-signal-safe.  Before safe_copy_init, and on a thread that blocks
 * SIGSEGV or SIGBUS (the kernel would kill the process on a fault), it
 * reads with process_vm_readv instead, under the same contract. */
size_t safe_copy_str(char *dst, const void *src, size_t max, int *faulted);

/* The 8-byte aligned word at src into *dst: 0, or -1 (dst untouched)
 * when it cannot be read or src is not aligned or not a user address.
 * One load (an aligned word never straddles a page), under the same
 * rules as safe_copy_str: async-signal-safe, process_vm_readv where a
 * fault may not be taken. */
int safe_copy_word(uint64_t *dst, const void *src);

/* For the sigaction interposer (sigmask_watch.c): sigaction as the
 * program sees it, for every signal.  SIGSEGV and SIGBUS: before
 * safe_copy_init, the real sigaction; after, act becomes the action that
 * faults which are not the copy's are given to, old the one that was, and
 * the kernel keeps safe_copy's handler.  Any other signal: after
 * safe_copy_init, a handler's sa_mask goes to the kernel without SIGSEGV
 * and SIGBUS, and old reads back the mask the program gave.  Ordered
 * with safe_copy_init's pass over the handlers already installed.  0, or
 * -1 with errno. */
int safe_copy_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* The C library's signal() (c_signal) for a signal other than SIGSEGV
 * and SIGBUS, ordered with safe_copy_init as safe_copy_sigaction is: the
 * mask it installs holds only sig. */
sighandler_t safe_copy_signal(int sig, sighandler_t handler, sighandler_t (*c_signal)(int, sighandler_t));

/* The copy's fast path is taken only while SIGSEGV and SIGBUS are known
 * to be unblocked on the calling thread.  What the mask interposers tell:
 *  - changed: the mask is now *now (pthread_sigmask returned);
 *  - unknown: it was changed in a way that cannot be followed, and no
 *    system call is still to change it (longjmp out of a handler);
 *  - switch: it is about to become *to, in a call that may never return
 *    to say so (setcontext, swapcontext, siglongjmp with a saved mask);
 *  - enter, leave: a call is to change it until it returns, and then
 *    give back the one from before (sigsuspend, ppoll, pselect,
 *    epoll_pwait; pthread_sigmask until changed).  enter returns what
 *    leave takes. */
void safe_copy_mask_changed(const sigset_t *now);
void safe_copy_mask_unknown(void);
void safe_copy_mask_switch(const sigset_t *to);
int safe_copy_mask_enter(void);
void safe_copy_mask_leave(int token);

#endif
