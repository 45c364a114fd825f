/* attach_target - a program for needle to attach to and detach from again
 * and again (`needle record -p PID`), which checks that nothing it does was
 * disturbed meanwhile.
 *
 *   attach_target [--idle N] [--dl PATH] [--marks FILE] [--no-blocker]
 *   (--no-blocker: no thread blocks SIGTRAP from the start)
 *
 * Commands on stdin, one a line, run by the main thread:
 *   round    wake every parked thread once and check what each one saw;
 *            prints "round K ok" or "round K FAIL: <what>"
 *   mark N   the worker thread, between two iterations, calls
 *            attach_mark(N, A, B) and writes "mark N A B" to the marks file
 *            (A, B: its work_a and work_b calls so far); prints "mark N done"
 *   quit     (or end of input) stop and join every thread; prints
 *            "errors E" and exits with status 0 if E is 0, else 1
 * Nothing else goes to stdout, so it is the same with or without a tracer;
 * every failed check is described on stderr.
 *
 * Threads, all created before the first command: a worker calling traced
 * functions in a tight loop; one thread parked in each kind of blocking call
 * (read, read inside the traced blocked_in_traced, accept, recv, epoll_wait,
 * poll, select, pthread_cond_wait, FUTEX_WAIT, nanosleep, clock_nanosleep);
 * one with SIGTRAP blocked calling work_c; one creating and joining
 * short-lived threads; one allocating and checking memory; one forking
 * children that call work_a; with --dl one loading and unloading a library;
 * with --idle N, N threads parked in pthread_cond_wait until quit.
 *
 * Blocking calls must come back only when woken, with exactly what was sent
 * and errno untouched; no EINTR anywhere, epoll_wait included (Linux never
 * restarts it after a ptrace stop or a signal handler, so a tracer must
 * neither interrupt nor signal a thread asleep in it).
 *
 *   blocker  start one more thread that blocks SIGTRAP from then on
 *            (pthread_sigmask), and calls work_c; prints "blocker started"
 *   sigusr1  see handler_mask(): prints "sigusr1 B R"
 *   fds N    open N more descriptors (/dev/null) and keep them; every
 *            later round checks that each is still open on it
 *            (the program itself never closes them);
 *            prints "fds N held" */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Traced functions: kept out of line and uncloned, so that calls reach the
 * symbol itself and its patchable entry. */
#if defined(__clang__)
#define TRACED __attribute__((noinline))
#else
#define TRACED __attribute__((noipa))
#endif

#define SENTINEL 0x4e44 /* errno before a call that must not change it */
#define MSG_LEN 64      /* pipe, socketpair message */
#define CONN_LEN 16     /* accepted connection message */
#define WAKE_TIMEOUT_NS (5 * 1000000000L)
#define MAX_REPORTS 20  /* failure messages printed per thread */

/* ---- traced functions and their expected results -------------------- */

long work_a(long x);
long work_b(long a, long b, long c, long d, long e, long f);
long work_rec(int depth);
double work_c(long i, double d);
long churn_fn(long x);
void attach_mark(int n, long count_a, long count_b);
ssize_t blocked_in_traced(int fd);

static long expect_a(long x)
{
	unsigned long u = (unsigned long)x;
	return (long)((u * 0x9e3779b97f4a7c15ul) ^ (u >> 3));
}

static long expect_b(long a, long b, long c, long d, long e, long f)
{
	return a + 3 * b + 5 * c + 7 * d + 11 * e + 13 * f;
}

static long expect_rec(int depth)
{
	long r = 1;
	for (int i = 1; i <= depth; i++)
		r = r * 3 + i;
	return r;
}

static double expect_c(long i, double d)
{
	return d * 2.0 + (double)i;
}

static long expect_churn(long x)
{
	return x * 17 + 5;
}

TRACED long work_a(long x)
{
	__asm__ volatile("" : "+r"(x));
	return expect_a(x);
}

TRACED long work_b(long a, long b, long c, long d, long e, long f)
{
	__asm__ volatile("" : "+r"(a), "+r"(f));
	return expect_b(a, b, c, d, e, f);
}

TRACED long work_rec(int depth)
{
	if (depth <= 0)
		return 1;
	long r = work_rec(depth - 1);
	__asm__ volatile("" : "+r"(r));
	return r * 3 + depth;
}

TRACED double work_c(long i, double d)
{
	__asm__ volatile("" : "+r"(i));
	return expect_c(i, d);
}

TRACED long churn_fn(long x)
{
	__asm__ volatile("" : "+r"(x));
	return expect_churn(x);
}

TRACED void attach_mark(int n, long count_a, long count_b)
{
	__asm__ volatile("" : : "r"(n), "r"(count_a), "r"(count_b) : "memory");
}

static unsigned char traced_buf[2 * MSG_LEN];

/* Blocks in read() with its own frame on the stack: an entry hook's
 * return address stays there while a tracer comes and goes. */
TRACED ssize_t blocked_in_traced(int fd)
{
	ssize_t n = read(fd, traced_buf, sizeof traced_buf);
	__asm__ volatile("" : "+r"(n) : : "memory");
	return n;
}

/* ---- threads and their bookkeeping --------------------------------- */

struct thr {
	const char *name;
	void *(*fn)(void *);
	int (*wake)(struct thr *, unsigned k); /* NULL: advances by itself */
	int parked;      /* blocks (or sleeps) between rounds */
	int tag;         /* distinguishes its messages */
	int fd[2];
	int xfd;
	int active;
	pthread_t tid;
	atomic_long progress; /* acknowledgements, sleeps or iterations */
	atomic_long fails;
	long seen_fails; /* control thread only: fails already reported */
};

static atomic_int stop;
static atomic_uint cur_round;
static atomic_long errors;
static atomic_int started;

static int stopping(void)
{
	return atomic_load(&stop);
}

static void fail(struct thr *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct thr *t, const char *fmt, ...)
{
	long n = atomic_fetch_add(&t->fails, 1) + 1;
	atomic_fetch_add(&errors, 1);
	if (n > MAX_REPORTS)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "attach_target: %s: %s%s\n", t->name, buf,
		n == MAX_REPORTS ? " (further failures of this thread not shown)" : "");
}

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* A sleep that must not be cut short. */
static void sleep_ns(struct thr *t, long ns)
{
	struct timespec d = { ns / 1000000000L, ns % 1000000000L };
	if (nanosleep(&d, NULL) != 0)
		fail(t, "nanosleep: %s", strerror(errno));
}

static void ack(struct thr *t)
{
	atomic_fetch_add(&t->progress, 1);
}

static void thread_start(struct thr *t)
{
	pthread_setname_np(pthread_self(), t->name);
	atomic_fetch_add(&started, 1);
}

static void make_msg(unsigned char *m, int len, unsigned k, int tag)
{
	for (int j = 0; j < len; j++)
		m[j] = (unsigned char)(k * 131u + (unsigned)j * 7u + (unsigned)tag * 29u + 1u);
}

/* Checks that a call which read a message returned exactly it and left
 * errno alone; returns 0 if so. */
static int check_msg(struct thr *t, const char *call, const unsigned char *got,
		     ssize_t n, int err, int len, unsigned k)
{
	unsigned char want[MSG_LEN];
	if (n != len) {
		fail(t, "%s returned %zd (%s), want %d", call, n,
		     n < 0 ? strerror(err) : "short or long", len);
		return -1;
	}
	if (err != SENTINEL) {
		fail(t, "%s succeeded but errno changed to %d", call, err);
		return -1;
	}
	make_msg(want, len, k, t->tag);
	if (memcmp(got, want, (size_t)len) != 0) {
		fail(t, "%s: wrong message content in round %u", call, k);
		return -1;
	}
	return 0;
}

static void throttle(struct thr *t, int bad)
{
	if (bad && !stopping())
		sleep_ns(t, 10 * 1000000L);
}

/* ---- worker and its marks ------------------------------------------ */

static atomic_int mark_state; /* 0 idle, 1 requested, 2 being taken */
static int mark_n;
static FILE *marks;

static void take_mark(struct thr *t, long na, long nb)
{
	int want = 1;
	if (atomic_load_explicit(&mark_state, memory_order_acquire) != 1 ||
	    !atomic_compare_exchange_strong(&mark_state, &want, 2))
		return;
	int n = mark_n;
	attach_mark(n, na, nb);
	if (marks && (fprintf(marks, "mark %d %ld %ld\n", n, na, nb) < 0 || fflush(marks) != 0))
		fail(t, "writing mark %d: %s", n, strerror(errno));
	atomic_store_explicit(&mark_state, 0, memory_order_release);
}

static void *worker_main(void *arg)
{
	struct thr *t = arg;
	long na = 0, nb = 0;
	thread_start(t);
	for (unsigned long i = 0; !stopping(); i++) {
		long x = (long)(i & 0xffffffffu);
		long a = work_a(x);
		na++;
		if (a != expect_a(x))
			fail(t, "work_a(%ld) returned %ld, want %ld", x, a, expect_a(x));
		if (i % 4 == 0) {
			long b = work_b(x, x + 1, x + 2, x + 3, x + 4, x + 5);
			nb++;
			if (b != expect_b(x, x + 1, x + 2, x + 3, x + 4, x + 5))
				fail(t, "work_b(%ld, ...) returned %ld", x, b);
		}
		if (i % 64 == 0) {
			long r = work_rec(5);
			if (r != expect_rec(5))
				fail(t, "work_rec(5) returned %ld, want %ld", r, expect_rec(5));
		}
		if (i % 1024 == 1023)
			sched_yield();
		atomic_store_explicit(&t->progress, (long)(i + 1), memory_order_relaxed);
		take_mark(t, na, nb);
	}
	return NULL;
}

/* ---- parked threads --------------------------------------------------- */

static int wake_pipe(struct thr *t, unsigned k)
{
	unsigned char m[MSG_LEN];
	make_msg(m, MSG_LEN, k, t->tag);
	return write(t->fd[1], m, MSG_LEN) == MSG_LEN ? 0 : -1;
}

static void *pipe_read_main(void *arg)
{
	struct thr *t = arg;
	unsigned char buf[2 * MSG_LEN];
	thread_start(t);
	while (!stopping()) {
		errno = SENTINEL;
		ssize_t n = read(t->fd[0], buf, sizeof buf);
		int err = errno;
		if (stopping())
			break;
		int bad = check_msg(t, "read", buf, n, err, MSG_LEN, atomic_load(&cur_round));
		ack(t);
		throttle(t, bad);
	}
	return NULL;
}

static void *traced_read_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	while (!stopping()) {
		errno = SENTINEL;
		ssize_t n = blocked_in_traced(t->fd[0]);
		int err = errno;
		if (stopping())
			break;
		int bad = check_msg(t, "blocked_in_traced", traced_buf, n, err, MSG_LEN,
				    atomic_load(&cur_round));
		ack(t);
		throttle(t, bad);
	}
	return NULL;
}

static struct sockaddr_un listen_addr;
static socklen_t listen_len;

static int wake_accept(struct thr *t, unsigned k)
{
	unsigned char m[CONN_LEN];
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	make_msg(m, CONN_LEN, k, t->tag);
	/* To quit (k 0) the connection alone: the thread closes it unread. */
	if (connect(s, (struct sockaddr *)&listen_addr, listen_len) != 0 ||
	    (k && send(s, m, CONN_LEN, MSG_NOSIGNAL) != CONN_LEN)) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	close(s);
	return 0;
}

static void *accept_main(void *arg)
{
	struct thr *t = arg;
	unsigned char buf[2 * CONN_LEN];
	thread_start(t);
	while (!stopping()) {
		errno = SENTINEL;
		int c = accept(t->fd[0], NULL, NULL);
		int err = errno;
		if (stopping()) {
			if (c >= 0)
				close(c);
			break;
		}
		int bad = 0;
		if (c < 0) {
			fail(t, "accept: %s", strerror(err));
			bad = 1;
		} else if (err != SENTINEL) {
			fail(t, "accept succeeded but errno changed to %d", err);
			bad = 1;
		}
		if (c >= 0) {
			errno = SENTINEL;
			ssize_t n = recv(c, buf, sizeof buf, 0);
			err = errno;
			if (check_msg(t, "recv on accepted socket", buf, n, err, CONN_LEN,
				      atomic_load(&cur_round)))
				bad = 1;
			close(c);
		}
		ack(t);
		throttle(t, bad);
	}
	return NULL;
}

static int wake_recv(struct thr *t, unsigned k)
{
	unsigned char m[MSG_LEN];
	make_msg(m, MSG_LEN, k, t->tag);
	return send(t->fd[0], m, MSG_LEN, MSG_NOSIGNAL) == MSG_LEN ? 0 : -1;
}

static void *recv_main(void *arg)
{
	struct thr *t = arg;
	unsigned char buf[2 * MSG_LEN];
	thread_start(t);
	while (!stopping()) {
		errno = SENTINEL;
		ssize_t n = recv(t->fd[1], buf, sizeof buf, 0);
		int err = errno;
		if (stopping())
			break;
		int bad = check_msg(t, "recv", buf, n, err, MSG_LEN, atomic_load(&cur_round));
		ack(t);
		throttle(t, bad);
	}
	return NULL;
}

static int wake_eventfd(struct thr *t, unsigned k)
{
	uint64_t one = 1;
	(void)k;
	return write(t->fd[0], &one, sizeof one) == sizeof one ? 0 : -1;
}

static void *epoll_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	while (!stopping()) {
		struct epoll_event ev[4];
		errno = SENTINEL;
		int n = epoll_wait(t->xfd, ev, 4, -1);
		int err = errno;
		if (stopping())
			break;
		int bad = 1;
		if (n != 1) {
			fail(t, "epoll_wait returned %d (%s), want 1", n,
			     n < 0 ? strerror(err) : "wrong count");
		} else if (err != SENTINEL) {
			fail(t, "epoll_wait succeeded but errno changed to %d", err);
		} else if (ev[0].events != EPOLLIN || ev[0].data.u32 != 0x5eed) {
			fail(t, "epoll_wait: event %#x data %#x, want EPOLLIN %#x",
			     ev[0].events, ev[0].data.u32, 0x5eed);
		} else {
			uint64_t v = 0;
			ssize_t r = read(t->fd[0], &v, sizeof v);
			if (r != sizeof v || v != 1)
				fail(t, "eventfd read returned %zd, value %llu, want 8 and 1", r,
				     (unsigned long long)v);
			else
				bad = 0;
		}
		ack(t);
		throttle(t, bad);
	}
	return NULL;
}

static uint64_t small_msg(unsigned k, int tag)
{
	return (uint64_t)k * 0x0001000100010001ull + (uint64_t)tag * 0x0100000001000000ull + 3;
}

static int wake_small(struct thr *t, unsigned k)
{
	uint64_t v = small_msg(k, t->tag);
	return write(t->fd[1], &v, sizeof v) == sizeof v ? 0 : -1;
}

/* After poll or select: the 8 bytes that woke it. */
static int read_small(struct thr *t)
{
	uint64_t v[2] = { 0, 0 };
	unsigned k = atomic_load(&cur_round);
	ssize_t n = read(t->fd[0], v, sizeof v);
	if (n != sizeof v[0] || v[0] != small_msg(k, t->tag)) {
		fail(t, "read after wake-up returned %zd, value %#llx, want 8 and %#llx", n,
		     (unsigned long long)v[0], (unsigned long long)small_msg(k, t->tag));
		return -1;
	}
	return 0;
}

static void *poll_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	while (!stopping()) {
		struct pollfd p = { .fd = t->fd[0], .events = POLLIN };
		errno = SENTINEL;
		int n = poll(&p, 1, -1);
		int err = errno;
		if (stopping())
			break;
		int bad = 1;
		if (n != 1)
			fail(t, "poll returned %d (%s), want 1", n, n < 0 ? strerror(err) : "");
		else if (err != SENTINEL)
			fail(t, "poll succeeded but errno changed to %d", err);
		else if (p.revents != POLLIN)
			fail(t, "poll revents %#x, want POLLIN", (unsigned)p.revents);
		else
			bad = read_small(t);
		ack(t);
		throttle(t, bad);
	}
	return NULL;
}

static void *select_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	while (!stopping()) {
		fd_set r;
		FD_ZERO(&r);
		FD_SET(t->fd[0], &r);
		errno = SENTINEL;
		int n = select(t->fd[0] + 1, &r, NULL, NULL, NULL);
		int err = errno;
		if (stopping())
			break;
		int bad = 1;
		if (n != 1)
			fail(t, "select returned %d (%s), want 1", n, n < 0 ? strerror(err) : "");
		else if (err != SENTINEL)
			fail(t, "select succeeded but errno changed to %d", err);
		else if (!FD_ISSET(t->fd[0], &r))
			fail(t, "select: the pipe is not in the ready set");
		else
			bad = read_small(t);
		ack(t);
		throttle(t, bad);
	}
	return NULL;
}

static pthread_mutex_t cond_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond_cv = PTHREAD_COND_INITIALIZER;
static unsigned cond_gen; /* under cond_mu: one more each wake */

static int wake_cond(struct thr *t, unsigned k)
{
	(void)t;
	(void)k;
	pthread_mutex_lock(&cond_mu);
	cond_gen++;
	pthread_cond_signal(&cond_cv);
	pthread_mutex_unlock(&cond_mu);
	return 0;
}

static void *cond_main(void *arg)
{
	struct thr *t = arg;
	unsigned seen = 0;
	thread_start(t);
	pthread_mutex_lock(&cond_mu);
	for (;;) {
		while (cond_gen == seen && !stopping()) {
			int r = pthread_cond_wait(&cond_cv, &cond_mu);
			if (r != 0)
				fail(t, "pthread_cond_wait: %s", strerror(r));
		}
		if (stopping())
			break;
		seen = cond_gen;
		pthread_mutex_unlock(&cond_mu);
		unsigned k = atomic_load(&cur_round);
		if (seen != k)
			fail(t, "woken with generation %u in round %u", seen, k);
		ack(t);
		pthread_mutex_lock(&cond_mu);
	}
	pthread_mutex_unlock(&cond_mu);
	return NULL;
}

static _Atomic uint32_t futex_word; /* one more each wake */

static int wake_futex(struct thr *t, unsigned k)
{
	(void)t;
	(void)k;
	atomic_fetch_add(&futex_word, 1);
	return syscall(SYS_futex, (void *)&futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 0
		       ? -1
		       : 0;
}

static void *futex_main(void *arg)
{
	struct thr *t = arg;
	uint32_t seen = 0;
	thread_start(t);
	while (!stopping()) {
		int bad = 0;
		while (atomic_load(&futex_word) == seen) {
			errno = SENTINEL;
			long r = syscall(SYS_futex, (void *)&futex_word, FUTEX_WAIT_PRIVATE, seen,
					 NULL, NULL, 0);
			int err = errno;
			if (r == 0 ? err != SENTINEL : err != EAGAIN) {
				fail(t, "FUTEX_WAIT returned %ld (%s)", r,
				     r == 0 ? "errno changed" : strerror(err));
				bad = 1;
				throttle(t, 1);
			}
		}
		seen = atomic_load(&futex_word);
		if (stopping())
			break;
		unsigned k = atomic_load(&cur_round);
		if (seen != k) {
			fail(t, "woken with word %u in round %u", (unsigned)seen, k);
			bad = 1;
		}
		ack(t);
		throttle(t, bad);
	}
	return NULL;
}

#define NSLEEP_NS (50 * 1000000L)
#define CNSLEEP_NS (30 * 1000000L)

static void *nanosleep_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	while (!stopping()) {
		struct timespec d = { 0, NSLEEP_NS }, rem = { 0, 0 };
		long t0 = now_ns();
		errno = SENTINEL;
		int r = nanosleep(&d, &rem);
		int err = errno;
		long el = now_ns() - t0;
		if (r != 0)
			fail(t, "nanosleep returned %d (%s), %ld ns left", r, strerror(err),
			     (long)rem.tv_nsec);
		else if (err != SENTINEL)
			fail(t, "nanosleep succeeded but errno changed to %d", err);
		if (el < NSLEEP_NS)
			fail(t, "nanosleep of 50 ms lasted %ld ns", el);
		ack(t);
	}
	return NULL;
}

static void *clock_nanosleep_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	while (!stopping()) {
		long deadline = now_ns() + CNSLEEP_NS;
		struct timespec d = { deadline / 1000000000L, deadline % 1000000000L };
		errno = SENTINEL;
		int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &d, NULL);
		int err = errno;
		long late = now_ns() - deadline;
		if (r != 0)
			fail(t, "clock_nanosleep returned %d (%s)", r, strerror(r));
		else if (err != SENTINEL)
			fail(t, "clock_nanosleep succeeded but errno changed to %d", err);
		if (late < 0)
			fail(t, "clock_nanosleep returned %ld ns before its deadline", -late);
		ack(t);
	}
	return NULL;
}

/* ---- threads that run by themselves --------------------------------- */

static void *sigtrap_main(void *arg)
{
	struct thr *t = arg;
	sigset_t s, cur;
	sigemptyset(&s);
	sigaddset(&s, SIGTRAP);
	int r = pthread_sigmask(SIG_BLOCK, &s, NULL);
	if (r != 0)
		fail(t, "pthread_sigmask: %s", strerror(r));
	thread_start(t);
	for (long i = 0; !stopping(); i++) {
		double d = (double)(i % 100000) + 0.5;
		double c = work_c(i, d);
		if (c != expect_c(i, d))
			fail(t, "work_c(%ld, %g) returned %g, want %g", i, d, c, expect_c(i, d));
		if (i % 64 == 0 &&
		    (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0 || !sigismember(&cur, SIGTRAP)))
			fail(t, "SIGTRAP is no longer blocked");
		atomic_store(&t->progress, i + 1);
		sleep_ns(t, 1000000L);
	}
	return NULL;
}

static void *churn_child(void *arg)
{
	long base = (long)(intptr_t)arg, bad = 0;
	for (long j = 0; j < 4; j++)
		if (churn_fn(base + j) != expect_churn(base + j))
			bad++;
	return (void *)(intptr_t)bad;
}

static void *churn_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	for (long i = 0; !stopping(); i++) {
		pthread_t c;
		void *res = NULL;
		long base = (i & 0xffffff) * 4;
		int r = pthread_create(&c, NULL, churn_child, (void *)(intptr_t)base);
		if (r != 0) {
			fail(t, "pthread_create: %s", strerror(r));
			throttle(t, 1);
			continue;
		}
		r = pthread_join(c, &res);
		if (r != 0)
			fail(t, "pthread_join: %s", strerror(r));
		else if (res != NULL)
			fail(t, "short-lived thread %ld: %ld wrong churn_fn results", i,
			     (long)(intptr_t)res);
		atomic_store(&t->progress, i + 1);
		sleep_ns(t, 1000000L);
	}
	return NULL;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#define SLOTS 64

struct block {
	unsigned char *p;
	size_t n;
	unsigned seed;
};

static int check_block(struct thr *t, const struct block *b)
{
	for (size_t j = 0; j < b->n; j++)
		if (b->p[j] != (unsigned char)(b->seed + j * 37 + (j >> 8))) {
			fail(t, "block of %zu bytes changed at byte %zu", b->n, j);
			return -1;
		}
	return 0;
}

static void *malloc_main(void *arg)
{
	struct thr *t = arg;
	struct block slot[SLOTS];
	uint64_t s = 0x9e3779b97f4a7c15ull;
	memset(slot, 0, sizeof slot);
	thread_start(t);
	for (long i = 0; !stopping(); i++) {
		uint64_t r = xorshift(&s);
		struct block *b = &slot[r % SLOTS];
		if (b->p) {
			check_block(t, b);
			free(b->p);
		}
		b->n = (r >> 8) % 4096 + 1;
		if ((r >> 32) % 32 == 0)
			b->n = (r >> 40) % (256 * 1024) + 1;
		b->seed = (unsigned)(r >> 56) ^ (unsigned)i;
		b->p = malloc(b->n);
		if (!b->p) {
			fail(t, "malloc(%zu) failed", b->n);
			throttle(t, 1);
			continue;
		}
		for (size_t j = 0; j < b->n; j++)
			b->p[j] = (unsigned char)(b->seed + j * 37 + (j >> 8));
		if (i % 256 == 255) {
			atomic_store(&t->progress, i + 1);
			sleep_ns(t, 1000000L);
		}
	}
	for (int k = 0; k < SLOTS; k++)
		if (slot[k].p) {
			check_block(t, &slot[k]);
			free(slot[k].p);
		}
	return NULL;
}

static int child_code(long base)
{
	unsigned long sum = 0;
	for (long j = 0; j < 100; j++)
		sum += (unsigned long)expect_a(base + j);
	return 20 + (int)(sum % 200);
}

static void *forker_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	for (long i = 0; !stopping(); i++) {
		sleep_ns(t, 200 * 1000000L);
		if (stopping())
			break;
		long base = (i & 0xffffff) * 100;
		int code = child_code(base);
		pid_t pid = fork();
		if (pid < 0) {
			fail(t, "fork: %s", strerror(errno));
			continue;
		}
		if (pid == 0) {
			unsigned long sum = 0;
			int ok = 1;
			for (long j = 0; j < 100; j++) {
				long v = work_a(base + j);
				if (v != expect_a(base + j))
					ok = 0;
				sum += (unsigned long)v;
			}
			_exit(ok ? 20 + (int)(sum % 200) : 1);
		}
		int st = 0;
		errno = SENTINEL;
		pid_t w = waitpid(pid, &st, 0);
		if (w != pid) {
			fail(t, "waitpid returned %d (%s)", (int)w, strerror(errno));
			while (w < 0 && errno == EINTR)
				w = waitpid(pid, &st, 0);
		}
		if (w == pid) {
			if (WIFEXITED(st) && WEXITSTATUS(st) != code)
				fail(t, "child exited with status %d, want %d", WEXITSTATUS(st), code);
			else if (WIFSIGNALED(st))
				fail(t, "child killed by signal %d", WTERMSIG(st));
			else if (!WIFEXITED(st))
				fail(t, "child wait status %#x", (unsigned)st);
		}
		atomic_store(&t->progress, i + 1);
	}
	return NULL;
}

static const char *dl_path;

static void *dl_main(void *arg)
{
	struct thr *t = arg;
	thread_start(t);
	for (long i = 0; !stopping(); i++) {
		void *h = dlopen(dl_path, RTLD_NOW);
		if (!h) {
			fail(t, "dlopen %s: %s", dl_path, dlerror());
			sleep_ns(t, 100 * 1000000L);
			continue;
		}
		/* tests/agent/dl_lib.c: dl_entry(x) = (x + 7) * 2 */
		int (*entry)(int) = (int (*)(int))dlsym(h, "dl_entry");
		if (entry) {
			int x = (int)(i % 100000);
			int r = entry(x);
			if (r != (x + 7) * 2)
				fail(t, "dl_entry(%d) returned %d, want %d", x, r, (x + 7) * 2);
		}
		if (dlclose(h) != 0)
			fail(t, "dlclose: %s", dlerror());
		atomic_store(&t->progress, i + 1);
		sleep_ns(t, 1000000L);
	}
	return NULL;
}

/* ---- idle threads ------------------------------------------------------ */

static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static int idle_quit, idle_waiting, idle_exited; /* under idle_mu */
static struct thr idle_thr = { .name = "idle" };

static void *idle_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&idle_mu);
	idle_waiting++;
	while (!idle_quit) {
		int r = pthread_cond_wait(&idle_cv, &idle_mu);
		if (r != 0)
			fail(&idle_thr, "pthread_cond_wait: %s", strerror(r));
	}
	idle_exited++;
	pthread_mutex_unlock(&idle_mu);
	return NULL;
}

/* ---- the control thread ---------------------------------------------- */

enum {
	W_WORKER, W_PIPE, W_TRACED, W_ACCEPT, W_RECV, W_EPOLL, W_POLL, W_SELECT, W_COND,
	W_FUTEX, W_NSLEEP, W_CNSLEEP, W_SIGTRAP, W_CHURN, W_MALLOC, W_FORKER, W_DL, W_LATE, W_N
};

static struct thr thr[W_N] = {
	[W_WORKER] = { .name = "worker", .fn = worker_main },
	[W_PIPE] = { .name = "read", .fn = pipe_read_main, .wake = wake_pipe, .parked = 1 },
	[W_TRACED] = { .name = "traced_read", .fn = traced_read_main, .wake = wake_pipe,
		       .parked = 1 },
	[W_ACCEPT] = { .name = "accept", .fn = accept_main, .wake = wake_accept, .parked = 1 },
	[W_RECV] = { .name = "recv", .fn = recv_main, .wake = wake_recv, .parked = 1 },
	[W_EPOLL] = { .name = "epoll_wait", .fn = epoll_main, .wake = wake_eventfd, .parked = 1 },
	[W_POLL] = { .name = "poll", .fn = poll_main, .wake = wake_small, .parked = 1 },
	[W_SELECT] = { .name = "select", .fn = select_main, .wake = wake_small, .parked = 1 },
	[W_COND] = { .name = "cond_wait", .fn = cond_main, .wake = wake_cond, .parked = 1 },
	[W_FUTEX] = { .name = "futex", .fn = futex_main, .wake = wake_futex, .parked = 1 },
	[W_NSLEEP] = { .name = "nanosleep", .fn = nanosleep_main, .parked = 1 },
	[W_CNSLEEP] = { .name = "clock_nanosleep", .fn = clock_nanosleep_main, .parked = 1 },
	[W_SIGTRAP] = { .name = "sigtrap_blocker", .fn = sigtrap_main },
	[W_CHURN] = { .name = "churn", .fn = churn_main },
	[W_MALLOC] = { .name = "malloc_hammer", .fn = malloc_main },
	[W_FORKER] = { .name = "forker", .fn = forker_main },
	[W_DL] = { .name = "dl", .fn = dl_main },
	/* Started by the "blocker" command, so that it blocks SIGTRAP after a
	 * tracer attached: only interposition can tell the tracer so. */
	[W_LATE] = { .name = "late_sigtrap_blocker", .fn = sigtrap_main },
};

static struct thr ctl = { .name = "control" };
static pthread_t *idle_tid;
static long n_idle, n_idle_created;

static void die(const char *what)
{
	fprintf(stderr, "attach_target: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void setup_fds(void)
{
	int fl = SOCK_CLOEXEC;
	if (pipe2(thr[W_PIPE].fd, O_CLOEXEC) || pipe2(thr[W_TRACED].fd, O_CLOEXEC) ||
	    pipe2(thr[W_POLL].fd, O_CLOEXEC) || pipe2(thr[W_SELECT].fd, O_CLOEXEC))
		die("pipe2");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | fl, 0, thr[W_RECV].fd))
		die("socketpair");

	int l = socket(AF_UNIX, SOCK_STREAM | fl, 0);
	if (l < 0)
		die("socket");
	listen_addr.sun_family = AF_UNIX;
	/* Abstract name: nothing to clean up. */
	int len = snprintf(listen_addr.sun_path + 1, sizeof listen_addr.sun_path - 1,
			   "needle-attach-target-%d", (int)getpid());
	listen_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
	if (bind(l, (struct sockaddr *)&listen_addr, listen_len) || listen(l, 16))
		die("bind/listen");
	thr[W_ACCEPT].fd[0] = l;

	int e = eventfd(0, EFD_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (e < 0 || ep < 0)
		die("eventfd/epoll_create1");
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0x5eed };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev))
		die("epoll_ctl");
	thr[W_EPOLL].fd[0] = e;
	thr[W_EPOLL].xfd = ep;
}

static void start_threads(void)
{
	int expected = 0;
	for (int i = 0; i < W_N; i++) {
		struct thr *t = &thr[i];
		t->tag = i + 1;
		if (!t->active)
			continue;
		int r = pthread_create(&t->tid, NULL, t->fn, t);
		if (r != 0) {
			errno = r;
			die(t->name);
		}
		expected++;
	}

	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 256 * 1024);
	idle_tid = calloc((size_t)(n_idle ? n_idle : 1), sizeof *idle_tid);
	if (!idle_tid)
		die("calloc");
	for (; n_idle_created < n_idle; n_idle_created++) {
		int r = pthread_create(&idle_tid[n_idle_created], &a, idle_main, NULL);
		if (r != 0) {
			fail(&idle_thr, "creating idle thread %ld of %ld: %s", n_idle_created + 1,
			     n_idle, strerror(r));
			break;
		}
	}
	pthread_attr_destroy(&a);

	/* Wait until every thread is running and every idle one parked. */
	long deadline = now_ns() + 4 * WAKE_TIMEOUT_NS;
	for (;;) {
		pthread_mutex_lock(&idle_mu);
		int parked = idle_waiting;
		pthread_mutex_unlock(&idle_mu);
		if (atomic_load(&started) == expected && parked == n_idle_created)
			break;
		if (now_ns() > deadline) {
			fail(&ctl, "threads did not start: %d of %d running, %d of %ld idle parked",
			     atomic_load(&started), expected, parked, n_idle_created);
			break;
		}
		sleep_ns(&ctl, 1000000L);
	}
}

static void append(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(buf);
	if (len + 1 >= cap)
		return;
	if (len) {
		snprintf(buf + len, cap - len, "; ");
		len = strlen(buf);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

/* "sigusr1": install a SIGUSR1 handler whose sa_mask holds SIGTRAP, raise
 * it, and print whether SIGTRAP was blocked while the handler ran and
 * whether reading the action back shows SIGTRAP in its mask.  Untraced:
 * "1 1".  With libneedle's sigaction interposed: "0 1" (the kernel gets the
 * mask without SIGTRAP, the program reads back its own). */
static volatile sig_atomic_t trap_blocked_in_handler = -1;

static void on_usr1(int sig)
{
	sigset_t cur;
	(void)sig;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	trap_blocked_in_handler = sigismember(&cur, SIGTRAP);
}

static void handler_mask(void)
{
	struct sigaction act, back;
	memset(&act, 0, sizeof act);
	act.sa_handler = on_usr1;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, SIGTRAP);
	if (sigaction(SIGUSR1, &act, NULL) || raise(SIGUSR1) || sigaction(SIGUSR1, NULL, &back)) {
		fail(&ctl, "sigusr1: %s", strerror(errno));
		return;
	}
	printf("sigusr1 %d %d\n", (int)trap_blocked_in_handler, sigismember(&back.sa_mask, SIGTRAP));
	fflush(stdout);
}

/* "blocker": one more thread that blocks SIGTRAP, from now on. */
static void start_late_blocker(void)
{
	struct thr *t = &thr[W_LATE];
	if (t->active) {
		fail(&ctl, "blocker: already started");
		return;
	}
	int before = atomic_load(&started);
	t->active = 1;
	int r = pthread_create(&t->tid, NULL, t->fn, t);
	if (r != 0) {
		t->active = 0;
		fail(&ctl, "blocker: pthread_create: %s", strerror(r));
		return;
	}
	while (atomic_load(&started) == before)
		sleep_ns(&ctl, 1000000L);
	printf("blocker started\n");
	fflush(stdout);
}

#define HELD_FDS_MAX 64
static int held_fds[HELD_FDS_MAX];
static struct stat held_st;
static int held_cnt;

static void hold_fds(long n)
{
	for (; n > 0 && held_cnt < HELD_FDS_MAX; n--) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &held_st)) {
			fail(&ctl, "/dev/null: %s", strerror(errno));
			break;
		}
		held_fds[held_cnt++] = fd;
	}
	printf("fds %d held\n", held_cnt);
	fflush(stdout);
}

static void check_held_fds(unsigned k)
{
	for (int i = 0; i < held_cnt; i++) {
		struct stat st;
		if (fstat(held_fds[i], &st) || st.st_dev != held_st.st_dev || st.st_ino != held_st.st_ino)
			fail(&ctl, "round %u: descriptor %d is no longer the /dev/null it held", k, held_fds[i]);
	}
}

static void do_round(void)
{
	static unsigned rounds;
	unsigned k = ++rounds;
	long snap[W_N];
	char what[2048] = "";

	atomic_store(&cur_round, k);
	for (int i = 0; i < W_N; i++)
		snap[i] = atomic_load(&thr[i].progress);
	for (int i = 0; i < W_N; i++)
		if (thr[i].active && thr[i].wake && thr[i].wake(&thr[i], k) != 0)
			fail(&ctl, "waking %s in round %u: %s", thr[i].name, k, strerror(errno));

	long deadline = now_ns() + WAKE_TIMEOUT_NS;
	for (;;) {
		int all = 1;
		for (int i = 0; i < W_N; i++)
			if (thr[i].active && atomic_load(&thr[i].progress) <= snap[i])
				all = 0;
		if (all || now_ns() > deadline)
			break;
		sleep_ns(&ctl, 2000000L);
	}

	for (int i = 0; i < W_N; i++) {
		struct thr *t = &thr[i];
		if (!t->active || atomic_load(&t->progress) > snap[i])
			continue;
		const char *how = t->parked ? "did not wake" : "made no progress";
		fail(t, "%s in round %u", how, k);
		t->seen_fails++;
		append(what, sizeof what, "thread %s %s", t->name, how);
	}
	check_held_fds(k);
	struct thr *all[W_N + 2];
	int n = 0;
	for (int i = 0; i < W_N; i++)
		all[n++] = &thr[i];
	all[n++] = &idle_thr;
	all[n++] = &ctl;
	for (int i = 0; i < n; i++) {
		long f = atomic_load(&all[i]->fails);
		if (f > all[i]->seen_fails)
			append(what, sizeof what, "%s: %ld failed checks", all[i]->name,
			       f - all[i]->seen_fails);
		all[i]->seen_fails = f;
	}
	if (what[0])
		printf("round %u FAIL: %s\n", k, what);
	else
		printf("round %u ok\n", k);
	fflush(stdout);
}

static void do_mark(int n)
{
	int ok = 1;
	mark_n = n;
	atomic_store_explicit(&mark_state, 1, memory_order_release);
	long deadline = now_ns() + WAKE_TIMEOUT_NS;
	while (atomic_load_explicit(&mark_state, memory_order_acquire) != 0) {
		int want = 1;
		if (now_ns() > deadline + (atomic_load(&mark_state) == 2 ? WAKE_TIMEOUT_NS : 0) &&
		    (atomic_compare_exchange_strong(&mark_state, &want, 0) || want == 2)) {
			fail(&ctl, "the worker did not take mark %d", n);
			ok = 0;
			break;
		}
		sleep_ns(&ctl, 500000L);
	}
	if (ok)
		printf("mark %d done\n", n);
	else
		printf("mark %d FAIL: the worker did not take it\n", n);
	fflush(stdout);
}

static void do_quit(void)
{
	int stuck = 0;
	atomic_store(&stop, 1);
	for (int i = 0; i < W_N; i++)
		if (thr[i].active && thr[i].wake && thr[i].wake(&thr[i], 0) != 0)
			fail(&ctl, "waking %s to quit: %s", thr[i].name, strerror(errno));
	pthread_mutex_lock(&idle_mu);
	idle_quit = 1;
	pthread_cond_broadcast(&idle_cv);
	pthread_mutex_unlock(&idle_mu);

	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	for (int i = 0; i < W_N; i++) {
		if (!thr[i].active)
			continue;
		int r = pthread_timedjoin_np(thr[i].tid, NULL, &dl);
		if (r != 0) {
			fail(&ctl, "thread %s did not exit: %s", thr[i].name, strerror(r));
			stuck = 1;
		}
	}
	for (long i = 0; i < n_idle_created; i++) {
		int r = pthread_timedjoin_np(idle_tid[i], NULL, &dl);
		if (r != 0) {
			fail(&ctl, "idle thread %ld did not exit: %s", i, strerror(r));
			stuck = 1;
		}
	}
	pthread_mutex_lock(&idle_mu);
	if (!stuck && idle_exited != n_idle_created)
		fail(&ctl, "%d of %ld idle threads woke", idle_exited, n_idle_created);
	pthread_mutex_unlock(&idle_mu);

	long e = atomic_load(&errors);
	printf("errors %ld\n", e);
	fflush(stdout);
	if (stuck) /* a stuck thread may hold a stdio lock that exit() takes */
		_exit(e ? 1 : 0);
	if (marks)
		fclose(marks);
	exit(e ? 1 : 0);
}

static void usage(void)
{
	fprintf(stderr, "usage: attach_target [--idle N] [--dl PATH] [--marks FILE] [--no-blocker]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int no_blocker = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-blocker")) {
			no_blocker = 1;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--idle")) {
			char *end;
			errno = 0;
			n_idle = strtol(argv[++i], &end, 10);
			if (errno || *end || end == argv[i] || n_idle < 0 || n_idle > 100000)
				usage();
		} else if (!strcmp(argv[i], "--dl")) {
			dl_path = argv[++i];
		} else if (!strcmp(argv[i], "--marks")) {
			marks = fopen(argv[++i], "we");
			if (!marks)
				die(argv[i]);
		} else {
			usage();
		}
	}

	for (int i = 0; i < W_N; i++)
		thr[i].active = (i != W_DL || dl_path) && i != W_LATE && (i != W_SIGTRAP || !no_blocker);
	setup_fds();
	start_threads();

	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, stdin)) > 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
				   line[len - 1] == ' ' || line[len - 1] == '\t'))
			line[--len] = 0;
		char *end;
		if (len == 0)
			continue;
		if (!strcmp(line, "round")) {
			do_round();
		} else if (!strncmp(line, "mark ", 5)) {
			errno = 0;
			long n = strtol(line + 5, &end, 10);
			if (errno || *end || end == line + 5 || n < INT_MIN || n > INT_MAX)
				fail(&ctl, "bad command '%s'", line);
			else
				do_mark((int)n);
		} else if (!strcmp(line, "blocker")) {
			start_late_blocker();
		} else if (!strcmp(line, "sigusr1")) {
			handler_mask();
		} else if (!strncmp(line, "fds ", 4)) {
			errno = 0;
			long n = strtol(line + 4, &end, 10);
			if (errno || *end || end == line + 4 || n < 0)
				fail(&ctl, "bad command '%s'", line);
			else
				hold_fds(n);
		} else if (!strcmp(line, "quit")) {
			break;
		} else {
			fail(&ctl, "unknown command '%s'", line);
		}
	}
	if (len < 0 && ferror(stdin))
		fail(&ctl, "reading stdin: %s", strerror(errno));
	free(line);
	do_quit();
	return 0;
}
