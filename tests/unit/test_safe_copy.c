/* test_safe_copy - the fault-tolerant string copy (src/agent/base/
 * safe_copy.c), linked with the agent's objects so that the program's
 * sigaction, signal, pthread_sigmask and longjmp calls reach the agent's
 * interposers as they do under LD_PRELOAD.
 *
 * The copy: a normal string, bad pointers, a string that ends right
 * before an unreadable page (read whole) and one that runs into it
 * (faulted, with exactly the bytes before it), at every alignment; the
 * max cap; SIGBUS past the end of a mapped file; the system-call path
 * before init and on threads that block SIGSEGV; a million copies while
 * one thread rewrites the string and another flips the next page between
 * readable and PROT_NONE.
 *
 * The program's own faults: its SIGSEGV handler, installed before and
 * after safe_copy_init, with sigaction and with signal, is called with its
 * signal and si_addr, with its sa_mask, SA_NODEFER and SA_RESETHAND
 * honoured and on its alternate stack or not as it asked; sigaction reads
 * back the program's action; and in child processes SIG_DFL and SIG_IGN
 * still kill with the signal.
 *
 * Masks the kernel sets where no interposer sees them: a handler
 * installed with sigfillset(&sa_mask), before and after safe_copy_init,
 * copies bad pointers with SIGSEGV and SIGBUS taken out of its mask while
 * sigaction reads back the full mask; handlers run inside sigsuspend,
 * ppoll, pselect, epoll_pwait and epoll_pwait2 under a mask that blocks
 * SIGSEGV, in coroutine contexts entered with swapcontext and setcontext
 * whose mask blocks it, and after a siglongjmp that restores such a mask,
 * copy with the system call and live.  Each in a child that a wrong
 * answer kills.
 *
 * NEEDLE_SAFE_COPY_BENCH=1 also prints the cost of a copy of a 16-byte
 * string against process_vm_readv ("BENCH:" lines). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "harness.h"
#include "agent/base/safe_copy.h"

static long page;

/* Two readable pages; the second made PROT_NONE or unmapped by the caller. */
static char *two_pages(void)
{
	char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 'x', 2 * page);
	return p;
}

static size_t copy(char *dst, const void *src, size_t max, int *faulted)
{
	*faulted = -1;
	return safe_copy_str(dst, src, max, faulted);
}

/* --- the copy ----------------------------------------------------------- */

static void test_normal(const char *when)
{
	char dst[64];
	int f;
	size_t n = copy(dst, "hello, world", sizeof(dst), &f);

	CHECK(n == 13 && f == 0 && !strcmp(dst, "hello, world"), "%s: a normal string is copied with its NUL (%zu bytes)",
	      when, n);
	n = copy(dst, "", sizeof(dst), &f);
	CHECK(n == 1 && f == 0 && dst[0] == 0, "%s: an empty string is its NUL", when);
}

static void test_bad_pointers(const char *when)
{
	static const uintptr_t bad[] = { 0x10, 0, 0xfff, 0x8000000000000000ull, 0xffff800000000000ull, ~(uintptr_t)7 };
	char dst[32];
	int ok = 1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int f;
		size_t n = copy(dst, (const void *)bad[i], sizeof(dst), &f);
		if (n != 0 || f != 1) {
			printf("      %#lx: %zu bytes, faulted %d\n", (unsigned long)bad[i], n, f);
			ok = 0;
		}
	}
	int f;
	size_t n = copy(dst, (const void *)0x10, sizeof(dst), &f);
	CHECK(n == 0 && f == 1, "%s: 0x10 faults with 0 bytes", when);
	CHECK(ok, "%s: NULL, 0xfff, non-canonical and kernel addresses fault with 0 bytes", when);
}

/* Strings of every length from 1 to 40 (so every alignment of the start,
 * every path of the loop) ending with their NUL on the last byte before
 * page 2, which is unmapped or PROT_NONE: read whole.  Then the same
 * bytes without the NUL: faulted, with exactly the bytes before page 2. */
static void test_page_edge(const char *when, int unmap)
{
	char *p = two_pages();
	char *end = p + page;
	char dst[128];
	int whole_ok = 1, fault_ok = 1, cap_ok = 1;

	if (unmap)
		munmap(end, page);
	else
		mprotect(end, page, PROT_NONE);
	for (size_t len = 1; len <= 40; len++) {
		char *s = end - len;
		int f;
		for (size_t i = 0; i < len; i++)
			s[i] = (char)('a' + i % 26);
		s[len - 1] = 0;
		size_t n = copy(dst, s, sizeof(dst), &f);
		if (n != len || f != 0 || memcmp(dst, s, len)) {
			printf("      whole, len %zu: %zu bytes, faulted %d\n", len, n, f);
			whole_ok = 0;
		}
		s[len - 1] = 'Z';
		n = copy(dst, s, sizeof(dst), &f);
		if (n != len || f != 1 || memcmp(dst, s, len)) {
			printf("      into the page, len %zu: %zu bytes, faulted %d\n", len, n, f);
			fault_ok = 0;
		}
		/* max ending exactly at the page: nothing past it is read. */
		n = copy(dst, s, len, &f);
		if (n != len || f != 0 || memcmp(dst, s, len)) {
			printf("      max at the page, len %zu: %zu bytes, faulted %d\n", len, n, f);
			cap_ok = 0;
		}
	}
	const char *how = unmap ? "unmapped" : "PROT_NONE";
	CHECK(whole_ok, "%s: strings ending right before a %s page are read whole, no fault", when, how);
	CHECK(fault_ok, "%s: strings running into a %s page fault with exactly the bytes before it", when, how);
	CHECK(cap_ok, "%s: max ending at a %s page reads nothing past it", when, how);
	munmap(p, 2 * page);
}

/* safe_copy_word: an aligned word is read whole; one in an unmapped or
 * PROT_NONE page, an unaligned address or a non-user address is refused,
 * the destination untouched. */
static void test_word(const char *when)
{
	char *p = two_pages();
	char *end = p + page;
	uint64_t w = 0, want;

	for (int i = 0; i < 8; i++)
		end[-8 + i] = (char)(0x11 * (i + 1));
	end[-5] = 0; /* a NUL inside: still the whole word */
	memcpy(&want, end - 8, 8);
	CHECK(safe_copy_word(&w, end - 8) == 0 && w == want, "%s: the last word before a PROT_NONE page, whole", when);
	mprotect(end, page, PROT_NONE);
	w = 7;
	CHECK(safe_copy_word(&w, end) == -1 && w == 7, "%s: a word in a PROT_NONE page: refused, nothing stored", when);
	munmap(end, page);
	CHECK(safe_copy_word(&w, end) == -1 && w == 7, "%s: a word in an unmapped page: refused", when);
	CHECK(safe_copy_word(&w, end - 9) == -1 && w == 7, "%s: an unaligned word: refused", when);
	int bad_ok = 1;
	const uintptr_t bad[] = { 0, 0x10, 0xff8, 1ull << 47, 0xffffffffff600000ull, 0xfffffffffffffff8ull };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		bad_ok &= safe_copy_word(&w, (const void *)bad[i]) == -1 && w == 7;
	CHECK(bad_ok, "%s: NULL, small, non-canonical and kernel addresses: refused", when);
	munmap(p, page);
}

static void test_max(const char *when)
{
	static const char s[] = "abcdefghijklmnopqrstuvwxyz0123456789ABCD"; /* 40 + NUL */
	char dst[64];
	int ok = 1;

	for (size_t off = 0; off < 8; off++) {
		for (size_t max = 0; max <= 40 - off; max++) {
			int f;
			memset(dst, '.', sizeof(dst));
			size_t n = copy(dst, s + off, max, &f);
			if (n != max || f != 0 || memcmp(dst, s + off, max) || memchr(dst, 0, n)) {
				printf("      off %zu, max %zu: %zu bytes, faulted %d\n", off, max, n, f);
				ok = 0;
			}
		}
		int f;
		size_t n = copy(dst, s + off, 41 - off, &f);
		if (n != 41 - off || f != 0 || strcmp(dst, s + off))
			ok = 0;
	}
	CHECK(ok, "%s: max caps the copy, unterminated, at every alignment; max = length + 1 ends with the NUL", when);
}

/* SIGBUS: a mapping of two pages of a one-page file. */
static int bus_fd = -1;
static char *bus_map;

static void map_short_file(void)
{
	char path[] = "/tmp/test_safe_copy.XXXXXX";
	bus_fd = mkstemp(path);
	if (bus_fd < 0 || ftruncate(bus_fd, page)) {
		perror("file");
		exit(1);
	}
	unlink(path);
	bus_map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, bus_fd, 0);
	if (bus_map == MAP_FAILED) {
		perror("mmap file");
		exit(1);
	}
	memset(bus_map, 'b', page);
}

static void test_bus(const char *when)
{
	char dst[64];
	int ok = 1;

	for (size_t len = 1; len <= 20; len++) {
		int f;
		size_t n = copy(dst, bus_map + page - len, sizeof(dst), &f);
		if (n != len || f != 1)
			ok = 0;
	}
	CHECK(ok, "%s: a string running past the end of a mapped file (SIGBUS) faults with the bytes before", when);
}

static void test_errno(void)
{
	char dst[16];
	int f;

	errno = EBADF;
	copy(dst, (const void *)0x10, sizeof(dst), &f);
	CHECK(errno == EBADF && f == 1, "a faulting copy leaves errno as it was");
}

/* --- concurrent writer ------------------------------------------------- */

#define RACE_COPIES 1000000
#define RACE_SPAN 64
static char *race_p;
static volatile int race_stop;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *race_writer(void *arg)
{
	char *span = race_p + page - RACE_SPAN;
	uint64_t s = 0x9e3779b97f4a7c15ull;
	(void)arg;
	while (!race_stop) {
		uint64_t r = rng(&s);
		char c = (r >> 8) % 6 == 0 ? 0 : (char)('a' + (r >> 16) % 26);
		__atomic_store_n(&span[r % RACE_SPAN], c, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *race_toggler(void *arg)
{
	struct timespec ts = { 0, 20000 };
	(void)arg;
	while (!race_stop) {
		mprotect(race_p + page, page, PROT_NONE);
		nanosleep(&ts, NULL);
		mprotect(race_p + page, page, PROT_READ | PROT_WRITE);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void test_race(void)
{
	pthread_t w, t;
	char dst[128];
	long bad = 0, faulted = 0, whole = 0, capped = 0, mid_page = 0;

	race_p = two_pages();
	/* Page 2: letters, then a NUL 20 bytes in. */
	memset(race_p + page, 'q', page);
	race_p[page + 20] = 0;
	pthread_create(&w, NULL, race_writer, NULL);
	pthread_create(&t, NULL, race_toggler, NULL);
	for (long i = 0; i < RACE_COPIES; i++) {
		size_t off = (size_t)(i % RACE_SPAN), max = 16 + (size_t)(i % 97);
		const char *src = race_p + page - RACE_SPAN + off;
		size_t to_page = RACE_SPAN - off;
		int f;
		size_t n = copy(dst, src, max, &f);
		int ok = n <= max && (f == 0 || f == 1);
		for (size_t j = 0; ok && j < n; j++) {
			char c = dst[j];
			ok = (c >= 'a' && c <= 'z') || c == 'q' || (c == 0 && j == n - 1);
		}
		/* Page 1 is always readable: a fault is at page 2, or inside
		 * it when it turned PROT_NONE during the copy. */
		if (ok && f == 1)
			ok = n >= to_page && (n == 0 || dst[n - 1] != 0);
		else if (ok)
			ok = n == max || (n > 0 && dst[n - 1] == 0);
		if (!ok && bad++ < 5)
			printf("      copy %ld: off %zu max %zu: %zu bytes, faulted %d\n", i, off, max, n, f);
		faulted += f == 1;
		mid_page += f == 1 && n > to_page;
		whole += f == 0 && n > 0 && dst[n - 1] == 0;
		capped += f == 0 && n == max && (n == 0 || dst[n - 1] != 0);
	}
	race_stop = 1;
	pthread_join(w, NULL);
	pthread_join(t, NULL);
	CHECK(bad == 0,
	      "%d copies under a writer and a page flipper: every result a prefix of valid bytes, no fault "
	      "before the page (%ld faulted, %ld of them inside the page as it turned PROT_NONE; %ld whole, %ld capped)",
	      RACE_COPIES, faulted, mid_page, whole, capped);
	CHECK(faulted > 0 && whole > 0, "both faulting and whole copies happened during the race");
	munmap(race_p, 2 * page);
}

/* --- the program's own handlers ----------------------------------------- */

static sigjmp_buf jb;
static volatile sig_atomic_t got_sig, got_calls, got_code;
static void *volatile got_addr;
static volatile int segv_blocked_inside, usr1_blocked_inside;
static char *volatile got_stack;
static void *volatile got_return;

static void note_mask(void)
{
	sigset_t cur;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	segv_blocked_inside = sigismember(&cur, SIGSEGV) == 1;
	usr1_blocked_inside = sigismember(&cur, SIGUSR1) == 1;
}

static void on_fault_info(int sig, siginfo_t *si, void *uc)
{
	char here;
	(void)uc;
	got_sig = sig;
	got_addr = si->si_addr;
	got_code = si->si_code;
	got_calls++;
	got_stack = &here;
	got_return = __builtin_return_address(0);
	note_mask();
	siglongjmp(jb, 1);
}

static void on_fault_plain(int sig)
{
	got_sig = sig;
	got_calls++;
	note_mask();
	siglongjmp(jb, 1);
}

static void on_fault_other(int sig)
{
	got_sig = sig;
	got_calls += 100;
	siglongjmp(jb, 1);
}

static void reset_got(void)
{
	got_sig = 0;
	got_calls = 0;
	got_code = 0;
	got_addr = NULL;
	got_stack = NULL;
	got_return = NULL;
	segv_blocked_inside = usr1_blocked_inside = -1;
}

/* The program's own fault: a read of p.  1 if a handler took it. */
static int own_fault(const volatile char *p)
{
	reset_got();
	if (!sigsetjmp(jb, 1)) {
		(void)*p;
		return 0;
	}
	return 1;
}

static char *noaccess;

static int set_action(int sig, void (*fn)(int, siginfo_t *, void *), int flags, int mask_usr1, struct sigaction *old)
{
	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_sigaction = fn;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (mask_usr1)
		sigaddset(&act.sa_mask, SIGUSR1);
	return sigaction(sig, &act, old);
}

static void set_plain(int sig, sighandler_t h)
{
	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_handler = h;
	sigemptyset(&act.sa_mask);
	sigaction(sig, &act, NULL);
}

static void test_copy_still_ours(const char *when)
{
	char dst[16];
	int f;

	reset_got();
	size_t n = copy(dst, noaccess, sizeof(dst), &f);
	CHECK(n == 0 && f == 1 && got_calls == 0, "%s: a fault in the copy is the copy's: the program's handler is not called",
	      when);
}

static void test_program_handlers(void)
{
	struct sigaction old, act;

	/* Installed after safe_copy_init, with sigaction: the old action
	 * returned is the one from before init. */
	CHECK_EQ(set_action(SIGSEGV, on_fault_info, SA_SIGINFO, 1, &old), 0, "sigaction(SIGSEGV) after init");
	CHECK(old.sa_sigaction == on_fault_info && (old.sa_flags & SA_SIGINFO), "it returns the program's earlier handler");
	CHECK_EQ(sigaction(SIGSEGV, NULL, &act), 0, "sigaction(SIGSEGV, NULL, &old)");
	CHECK(act.sa_sigaction == on_fault_info && (act.sa_flags & SA_SIGINFO) && sigismember(&act.sa_mask, SIGUSR1) == 1 &&
	      sigismember(&act.sa_mask, SIGTRAP) == 0,
	      "sigaction(SIGSEGV, NULL, &old) reads the program's handler, flags and mask, not needle's");
	CHECK(own_fault(noaccess + 5) && got_sig == SIGSEGV && got_addr == noaccess + 5 && got_calls == 1 &&
	      got_code == SEGV_ACCERR,
	      "the handler installed after init gets its own fault: SIGSEGV, SEGV_ACCERR, si_addr %p", (void *)got_addr);
	CHECK(usr1_blocked_inside == 1 && segv_blocked_inside == 1,
	      "it runs with its sa_mask (SIGUSR1) and its signal blocked");
	CHECK(act.sa_restorer && got_return == (void *)act.sa_restorer,
	      "it runs in the kernel's signal frame: it returns to the C library's restorer, as untraced");
	test_copy_still_ours("handler set after init");

	/* SA_NODEFER: the signal stays unblocked inside. */
	set_action(SIGSEGV, on_fault_info, SA_SIGINFO | SA_NODEFER, 0, NULL);
	CHECK(own_fault(noaccess) && got_calls == 1 && segv_blocked_inside == 0 && usr1_blocked_inside == 0,
	      "SA_NODEFER: the handler runs with SIGSEGV unblocked");

	/* signal(): SA_RESTART, its own signal in the mask, no siginfo. */
	sighandler_t prev = signal(SIGSEGV, on_fault_plain);
	CHECK((void *)prev == (void *)on_fault_info, "signal(SIGSEGV) returns the previous handler");
	CHECK(own_fault(noaccess) && got_sig == SIGSEGV && got_calls == 1 && segv_blocked_inside == 1,
	      "a handler installed with signal() gets its fault");
	sigaction(SIGSEGV, NULL, &act);
	CHECK(act.sa_handler == on_fault_plain && (act.sa_flags & SA_RESTART) && !(act.sa_flags & SA_SIGINFO),
	      "sigaction reads back signal()'s handler and SA_RESTART");
	test_copy_still_ours("handler set with signal()");

	/* A signal sent, not a fault: the program's handler, with its code. */
	set_action(SIGSEGV, on_fault_info, SA_SIGINFO, 0, NULL);
	reset_got();
	if (!sigsetjmp(jb, 1))
		raise(SIGSEGV);
	CHECK(got_calls == 1 && got_code == SI_TKILL, "raise(SIGSEGV) reaches the handler as sent (si_code SI_TKILL)");

	/* SA_RESETHAND: called once, then the action reads SIG_DFL. */
	set_action(SIGSEGV, on_fault_info, SA_SIGINFO | SA_RESETHAND, 0, NULL);
	CHECK(own_fault(noaccess) && got_calls == 1, "SA_RESETHAND: the handler gets the first fault");
	sigaction(SIGSEGV, NULL, &act);
	CHECK(act.sa_handler == SIG_DFL, "SA_RESETHAND: the action reads SIG_DFL afterwards");
	test_copy_still_ours("after SA_RESETHAND");

	/* SIGBUS, the program's handler and the copy's faults. */
	set_action(SIGBUS, on_fault_info, SA_SIGINFO, 0, NULL);
	CHECK(own_fault(bus_map + page + 3) && got_sig == SIGBUS && got_addr == bus_map + page + 3 && got_code == BUS_ADRERR,
	      "the program's SIGBUS handler gets its own fault with its si_addr");
	test_bus("handler for SIGBUS set");
	set_plain(SIGBUS, SIG_DFL);

	set_action(SIGSEGV, on_fault_info, SA_SIGINFO, 0, NULL);
}

/* Alternate stacks: the program's handler runs on the thread's alternate
 * stack if it asked for SA_ONSTACK, else on the interrupted stack. */
static char altstack[1 << 16];

static void *altstack_thread(void *arg)
{
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	int *res = arg;
	char dst[16];
	int f;

	sigaltstack(&ss, NULL);
	set_action(SIGSEGV, on_fault_info, SA_SIGINFO | SA_ONSTACK, 0, NULL);
	res[0] = own_fault(noaccess) && got_stack >= altstack && got_stack < altstack + sizeof(altstack);
	set_action(SIGSEGV, on_fault_info, SA_SIGINFO, 0, NULL);
	res[1] = own_fault(noaccess) && got_stack && !(got_stack >= altstack && got_stack < altstack + sizeof(altstack));
	res[2] = copy(dst, noaccess, sizeof(dst), &f) == 0 && f == 1;
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	return NULL;
}

static void test_altstack(void)
{
	pthread_t t;
	int res[3] = { 0 };

	pthread_create(&t, NULL, altstack_thread, res);
	pthread_join(t, NULL);
	CHECK(res[0], "an SA_ONSTACK handler runs on the thread's alternate stack");
	CHECK(res[1], "a handler without SA_ONSTACK runs on the interrupted stack, alternate stack or not");
	CHECK(res[2], "copies fault safely on a thread with an alternate stack");
}

/* --- children: how the process dies ------------------------------------ */

/* Run fn in a child; its wait status. */
static int in_child(void (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core); /* no core files in the test's directory */
		fn();
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

static int killed_by(int st, int sig)
{
	return WIFSIGNALED(st) && WTERMSIG(st) == sig;
}

/* Exit codes above 0 say which step went wrong before the fatal one. */
static void child_dfl_fault(void)
{
	char dst[16];
	int f;
	set_plain(SIGSEGV, SIG_DFL);
	if (copy(dst, (const void *)0x10, sizeof(dst), &f) != 0 || f != 1)
		_exit(2); /* the copy still survives its faults */
	(void)*(volatile char *)noaccess;
	_exit(3);
}

static void child_ign_fault(void)
{
	set_plain(SIGSEGV, SIG_IGN);
	(void)*(volatile char *)noaccess;
	_exit(3);
}

static void child_dfl_kill(void)
{
	set_plain(SIGSEGV, SIG_DFL);
	kill(getpid(), SIGSEGV);
	_exit(3);
}

static void child_ign_raise(void)
{
	set_plain(SIGSEGV, SIG_IGN);
	raise(SIGSEGV);
	kill(getpid(), SIGSEGV);
	_exit(0);
}

static void child_resethand(void)
{
	set_action(SIGSEGV, on_fault_info, SA_SIGINFO | SA_RESETHAND, 0, NULL);
	if (!own_fault(noaccess))
		_exit(2);
	(void)*(volatile char *)noaccess;
	_exit(3);
}

static void child_bus_dfl(void)
{
	set_plain(SIGBUS, SIG_DFL);
	(void)*(volatile char *)(bus_map + page);
	_exit(3);
}

/* A fault with SIGSEGV blocked kills whatever the handler: the copy must
 * not fault there. */
static void *blocked_thread(void *arg)
{
	char dst[16];
	int f;
	(void)arg;
	return (void *)(uintptr_t)(copy(dst, noaccess, sizeof(dst), &f) == 0 && f == 1);
}

static void child_blocked(void)
{
	char dst[64];
	sigset_t s;
	int f;
	pthread_t t;
	void *ok = NULL;

	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	if (copy(dst, (const void *)0x10, sizeof(dst), &f) != 0 || f != 1)
		_exit(2);
	char *p = two_pages();
	mprotect(p + page, page, PROT_NONE);
	if (copy(dst, p + page - 7, sizeof(dst), &f) != 7 || f != 1)
		_exit(3);
	if (copy(dst, "blocked", sizeof(dst), &f) != 8 || f != 0 || strcmp(dst, "blocked"))
		_exit(4);
	/* A thread inherits the mask. */
	pthread_create(&t, NULL, blocked_thread, NULL);
	pthread_join(t, &ok);
	if (!ok)
		_exit(5);
	/* And SIGBUS. */
	sigemptyset(&s);
	sigaddset(&s, SIGBUS);
	pthread_sigmask(SIG_SETMASK, &s, NULL);
	if (copy(dst, bus_map + page - 3, sizeof(dst), &f) != 3 || f != 1)
		_exit(6);
	_exit(0);
}

/* longjmp (not siglongjmp) out of the program's handler leaves SIGSEGV
 * blocked, as the handler ran. */
static jmp_buf plain_jb;
static void on_fault_longjmp(int sig)
{
	(void)sig;
	longjmp(plain_jb, 1);
}

static void child_longjmp_blocked(void)
{
	char dst[16];
	sigset_t cur;
	int f;

	set_plain(SIGSEGV, on_fault_longjmp);
	if (!setjmp(plain_jb))
		(void)*(volatile char *)noaccess;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (sigismember(&cur, SIGSEGV) != 1)
		_exit(2); /* not the case under test */
	if (copy(dst, noaccess, sizeof(dst), &f) != 0 || f != 1)
		_exit(3);
	_exit(0);
}

static void test_children(void)
{
	int st;

	st = in_child(child_dfl_fault);
	CHECK(killed_by(st, SIGSEGV), "SIG_DFL: the program's own fault kills it with SIGSEGV (status %#x)", st);
	st = in_child(child_ign_fault);
	CHECK(killed_by(st, SIGSEGV), "SIG_IGN: a fault still kills with SIGSEGV, as the kernel does (status %#x)", st);
	st = in_child(child_dfl_kill);
	CHECK(killed_by(st, SIGSEGV), "SIG_DFL: kill(SIGSEGV) kills with SIGSEGV (status %#x)", st);
	st = in_child(child_ign_raise);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIG_IGN: raise and kill of SIGSEGV are ignored (status %#x)", st);
	st = in_child(child_resethand);
	CHECK(killed_by(st, SIGSEGV), "SA_RESETHAND: the second fault kills with SIGSEGV (status %#x)", st);
	st = in_child(child_bus_dfl);
	CHECK(killed_by(st, SIGBUS), "SIG_DFL: a SIGBUS fault kills with SIGBUS (status %#x)", st);
	st = in_child(child_blocked);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "threads blocking SIGSEGV or SIGBUS (and a thread inheriting the mask) copy without dying (status %#x)", st);
	st = in_child(child_longjmp_blocked);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "after longjmp out of a handler leaves SIGSEGV blocked, copies still do not die (status %#x)", st);
}

/* --- masks the kernel sets unseen --------------------------------------- */

/* What a copy inside a handler or a context found: a bit per thing that
 * went wrong, and whether SIGSEGV and SIGUSR2 were blocked there. */
static volatile int in_copies, in_wrong, in_segv_blocked, in_usr2_blocked;

#define WRONG_NULLISH 1
#define WRONG_NOACCESS 2
#define WRONG_STRING 4
#define WRONG_BUS 8

/* Copies of bad pointers, a good string and one running past the end of
 * a mapped file; the mask read last (pthread_sigmask with no set changes
 * nothing that safe_copy.c keeps). */
static void copies_here(void)
{
	char dst[32];
	int f, wrong = 0;
	sigset_t cur;

	if (copy(dst, (const void *)0x10, sizeof(dst), &f) != 0 || f != 1)
		wrong |= WRONG_NULLISH;
	if (copy(dst, noaccess, sizeof(dst), &f) != 0 || f != 1)
		wrong |= WRONG_NOACCESS;
	if (copy(dst, "in here", sizeof(dst), &f) != 8 || f != 0 || strcmp(dst, "in here"))
		wrong |= WRONG_STRING;
	if (copy(dst, bus_map + page - 3, sizeof(dst), &f) != 3 || f != 1)
		wrong |= WRONG_BUS;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	in_segv_blocked = sigismember(&cur, SIGSEGV) == 1;
	in_usr2_blocked = sigismember(&cur, SIGUSR2) == 1;
	in_wrong |= wrong;
	in_copies++;
}

static void on_signal_copy(int sig)
{
	(void)sig;
	copies_here();
}

static void reset_in(void)
{
	in_copies = in_wrong = 0;
	in_segv_blocked = in_usr2_blocked = -1;
}

/* A copy in ordinary code: the thread's state is open afterwards, so a
 * copy that follows takes the fast path unless something closed it. */
static int prime(void)
{
	char dst[16];
	int f;
	return copy(dst, noaccess, sizeof(dst), &f) == 0 && f == 1;
}

static int set_full_mask(int sig, void (*fn)(int))
{
	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_handler = fn;
	sigfillset(&act.sa_mask);
	return sigaction(sig, &act, NULL);
}

/* The mask sigfillset gives, as sigaction reads it back untraced: the
 * kernel keeps no SIGKILL nor SIGSTOP. */
static int reads_full_mask(int sig)
{
	struct sigaction act;
	sigset_t want;

	memset(&act, 0, sizeof(act));
	sigfillset(&want);
	sigdelset(&want, SIGKILL);
	sigdelset(&want, SIGSTOP);
	return !sigaction(sig, NULL, &act) && !memcmp(&act.sa_mask, &want, 8) && sigismember(&act.sa_mask, SIGSEGV) == 1 &&
	       sigismember(&act.sa_mask, SIGBUS) == 1;
}

/* Exit codes: 2 not primed, 3 the handler did not run, 10 + the wrong
 * bits, 30 SIGUSR2 not blocked inside (the full mask not applied), 31
 * SIGSEGV blocked inside. */
static int full_mask_sig;
static void child_full_mask(void)
{
	reset_in();
	if (!prime())
		_exit(2);
	raise(full_mask_sig);
	if (in_copies != 1)
		_exit(3);
	if (in_wrong)
		_exit(10 + in_wrong);
	if (in_usr2_blocked != 1)
		_exit(30);
	if (in_segv_blocked != 0)
		_exit(31);
	_exit(0);
}

static void test_full_mask_handler(int sig, const char *when)
{
	int st;
	struct sigaction act;

	CHECK(reads_full_mask(sig), "%s: sigaction(%d, NULL, &old) reads back the full mask it was given", when, sig);
	full_mask_sig = sig;
	st = in_child(child_full_mask);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "%s: a handler with sigfillset(sa_mask) copies bad pointers (faulted), a string and one past a file's "
	      "end, with SIGSEGV unblocked inside and SIGUSR2 blocked; the process lives (status %#x)",
	      when, st);
	/* The program reads its action back and installs it again. */
	sigaction(sig, NULL, &act);
	sigaction(sig, &act, NULL);
	CHECK(reads_full_mask(sig), "%s: installed again as read back, it still reads the full mask", when);
	st = in_child(child_full_mask);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: and its copies still live (status %#x)", when, st);
}

/* Waits that run a handler under a mask of their own: the handler, with
 * an empty sa_mask, runs under fill-but-SIGUSR1, SIGSEGV blocked.  Exit
 * codes: 10 * the step + 1 the wait did not return EINTR, + 2 the handler
 * did not run once, + 3 a copy went wrong, + 4 SIGSEGV was not blocked
 * inside (not the case under test), + 5 a copy after the wait went
 * wrong. */
static int wait_step(int step, int r)
{
	int err = errno;
	if (r != -1 || err != EINTR)
		return step * 10 + 1;
	if (in_copies != 1)
		return step * 10 + 2;
	if (in_wrong)
		return step * 10 + 3;
	if (in_segv_blocked != 1)
		return step * 10 + 4;
	if (!prime())
		return step * 10 + 5;
	return 0;
}

static void child_waits(void)
{
	struct sigaction act;
	sigset_t usr1, wait_mask;
	struct timespec second = { 1, 0 };
	struct epoll_event ev;
	int ep = epoll_create1(0), r;

	memset(&act, 0, sizeof(act));
	act.sa_handler = on_signal_copy;
	sigemptyset(&act.sa_mask);
	sigaction(SIGUSR1, &act, NULL);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	sigfillset(&wait_mask);
	sigdelset(&wait_mask, SIGUSR1);
	if (ep < 0 || !prime())
		_exit(2);

	reset_in();
	raise(SIGUSR1);
	if ((r = wait_step(1, sigsuspend(&wait_mask))))
		_exit(r);
	reset_in();
	raise(SIGUSR1);
	if ((r = wait_step(2, ppoll(NULL, 0, &second, &wait_mask))))
		_exit(r);
	reset_in();
	raise(SIGUSR1);
	if ((r = wait_step(3, pselect(0, NULL, NULL, NULL, &second, &wait_mask))))
		_exit(r);
	reset_in();
	raise(SIGUSR1);
	if ((r = wait_step(4, epoll_pwait(ep, &ev, 1, 1000, &wait_mask))))
		_exit(r);
	reset_in();
	raise(SIGUSR1);
	r = epoll_pwait2(ep, &ev, 1, &second, &wait_mask);
	if (!(r == -1 && errno == ENOSYS) && (r = wait_step(5, r)))
		_exit(r);
	_exit(0);
}

/* Coroutine contexts whose mask blocks SIGSEGV (and SIGBUS), entered
 * with swapcontext from a thread whose state is open, and with setcontext
 * from a context whose state is open; each copies, then ends into main's
 * context through uc_link. */
static ucontext_t main_uc, blocking_uc, open_uc, blocking2_uc;
static char stacks[3][1 << 16];

static void in_blocking_context(void)
{
	copies_here();
}

static void in_open_context(void)
{
	if (prime())
		setcontext(&blocking2_uc);
}

static void make_context(ucontext_t *uc, char *stack, void (*fn)(void), int block)
{
	getcontext(uc);
	uc->uc_stack.ss_sp = stack;
	uc->uc_stack.ss_size = sizeof(stacks[0]);
	uc->uc_link = &main_uc;
	sigemptyset(&uc->uc_sigmask);
	if (block) {
		sigaddset(&uc->uc_sigmask, SIGSEGV);
		sigaddset(&uc->uc_sigmask, SIGBUS);
	}
	makecontext(uc, fn, 0);
}

/* Exit codes: 2 not primed, 10 + 1 swapcontext: the context did not copy
 * once, + 2 a copy went wrong, + 3 SIGSEGV not blocked there, + 4 a copy
 * back in main went wrong; 20 + the same for setcontext; 31 SIGSEGV still
 * blocked after siglongjmp, 32 a copy after it went wrong. */
static int context_step(int step)
{
	if (in_copies != 1)
		return step * 10 + 1;
	if (in_wrong)
		return step * 10 + 2;
	if (in_segv_blocked != 1)
		return step * 10 + 3;
	if (!prime())
		return step * 10 + 4;
	return 0;
}

static sigjmp_buf mask_jb;

static void child_contexts(void)
{
	int r;
	sigset_t segv, cur;

	make_context(&blocking_uc, stacks[0], in_blocking_context, 1);
	make_context(&open_uc, stacks[1], in_open_context, 0);
	make_context(&blocking2_uc, stacks[2], in_blocking_context, 1);
	if (!prime())
		_exit(2);
	reset_in();
	swapcontext(&main_uc, &blocking_uc);
	if ((r = context_step(1)))
		_exit(r);
	reset_in();
	swapcontext(&main_uc, &open_uc);
	if ((r = context_step(2)))
		_exit(r);

	/* siglongjmp back to a mask that blocks SIGSEGV, from a state that
	 * was open. */
	sigemptyset(&segv);
	sigaddset(&segv, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &segv, NULL);
	if (!sigsetjmp(mask_jb, 1)) {
		pthread_sigmask(SIG_UNBLOCK, &segv, NULL);
		if (!prime())
			_exit(2);
		siglongjmp(mask_jb, 1);
	}
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (sigismember(&cur, SIGSEGV) != 1)
		_exit(31);
	if (!prime())
		_exit(32);
	_exit(0);
}

static void test_unseen_masks(void)
{
	int st = in_child(child_waits);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "handlers run inside sigsuspend, ppoll, pselect, epoll_pwait, epoll_pwait2 under a mask that blocks "
	      "SIGSEGV copy bad pointers and live; copies after each wait are right (status %#x)",
	      st);
	st = in_child(child_contexts);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "contexts whose mask blocks SIGSEGV and SIGBUS, entered with swapcontext and with setcontext, copy bad "
	      "pointers and live, as does a copy after siglongjmp restores such a mask (status %#x)",
	      st);
}

/* --- cost --------------------------------------------------------------- */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void bench(void)
{
	static char aligned[64] __attribute__((aligned(64))) = "abcdefghijklmno"; /* 15 + NUL */
	static char odd[64] __attribute__((aligned(64))) = "_abcdefghijklmno";
	char dst[64];
	int f;
	long iters = 20000000;
	double t;
	struct iovec local = { dst, 64 }, remote = { aligned, 64 };
	pid_t pid = getpid();

	for (int round = 0; round < 2; round++) {
		t = now_ns();
		for (long i = 0; i < iters; i++)
			safe_copy_str(dst, aligned, 64, &f);
		printf("BENCH: safe_copy_str, 16-byte string (15 + NUL), aligned:   %6.2f ns\n", (now_ns() - t) / iters);
		t = now_ns();
		for (long i = 0; i < iters; i++)
			safe_copy_str(dst, odd + 1, 64, &f);
		printf("BENCH: safe_copy_str, 16-byte string, src at an odd address: %6.2f ns\n", (now_ns() - t) / iters);
	}
	long sys_iters = 1000000;
	t = now_ns();
	for (long i = 0; i < sys_iters; i++)
		process_vm_readv(pid, &local, 1, &remote, 1, 0);
	printf("BENCH: process_vm_readv of 64 bytes (args.c today):         %6.0f ns\n", (now_ns() - t) / sys_iters);
	local.iov_len = remote.iov_len = 16;
	t = now_ns();
	for (long i = 0; i < sys_iters; i++)
		process_vm_readv(pid, &local, 1, &remote, 1, 0);
	printf("BENCH: process_vm_readv of 16 bytes:                        %6.0f ns\n", (now_ns() - t) / sys_iters);
	long fault_iters = 200000;
	t = now_ns();
	for (long i = 0; i < fault_iters; i++)
		safe_copy_str(dst, (const void *)0x10, 64, &f);
	printf("BENCH: safe_copy_str of a bad pointer (a handled fault):    %6.0f ns\n", (now_ns() - t) / fault_iters);
	sigset_t s, old;
	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &s, &old);
	t = now_ns();
	for (long i = 0; i < sys_iters; i++)
		safe_copy_str(dst, aligned, 64, &f);
	printf("BENCH: safe_copy_str with SIGSEGV blocked (system calls):   %6.0f ns\n", (now_ns() - t) / sys_iters);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int main(void)
{
	page = sysconf(_SC_PAGESIZE);
	noaccess = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	map_short_file();

	/* Before safe_copy_init: the system-call copy, same contract. */
	test_normal("before init");
	test_bad_pointers("before init");
	test_page_edge("before init", 0);
	test_word("before init");
	test_max("before init");
	test_bus("before init");

	/* The program's handlers, installed before init. */
	struct sigaction act;
	CHECK_EQ(set_action(SIGSEGV, on_fault_info, SA_SIGINFO, 1, NULL), 0, "SIGSEGV handler installed before init");
	CHECK_EQ(set_full_mask(SIGUSR1, on_signal_copy), 0, "SIGUSR1 handler with a full sa_mask installed before init");
	CHECK_EQ(safe_copy_init(), 0, "safe_copy_init");
	CHECK_EQ(safe_copy_init(), 0, "safe_copy_init again");
	CHECK(sigaction(SIGSEGV, NULL, &act) == 0 && act.sa_sigaction == on_fault_info,
	      "sigaction(SIGSEGV, NULL, &old) reads the handler from before init");
	CHECK(own_fault(noaccess + 1) && got_sig == SIGSEGV && got_addr == noaccess + 1 && got_calls == 1,
	      "the handler installed before init gets its own fault, with its si_addr");
	test_copy_still_ours("handler set before init");

	test_normal("after init");
	test_bad_pointers("after init");
	test_page_edge("after init", 0);
	test_page_edge("after init", 1);
	test_word("after init");
	test_max("after init");
	test_bus("after init");
	test_errno();

	test_program_handlers();
	test_altstack();
	/* A handler for another signal does not take the copy's faults. */
	signal(SIGUSR2, on_fault_other);
	test_copy_still_ours("with other handlers");
	test_children();
	test_full_mask_handler(SIGUSR1, "installed before init");
	CHECK_EQ(set_full_mask(SIGALRM, on_signal_copy), 0, "SIGALRM handler with a full sa_mask installed after init");
	test_full_mask_handler(SIGALRM, "installed after init");
	set_plain(SIGALRM, SIG_DFL);
	test_unseen_masks();
	test_race();
	if (getenv("NEEDLE_SAFE_COPY_BENCH"))
		bench();
	return harness_exit();
}
