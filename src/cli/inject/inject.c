/* inject.c - load a shared object into a running process with ptrace and
 * the process's own dlopen, then call one function of it.
 *
 * One thread of the target is borrowed; the others run throughout, so the
 * process as a whole is never stopped.  The borrowed thread is seized and
 * interrupted (PTRACE_SEIZE + PTRACE_INTERRUPT: no SIGSTOP, nothing the
 * program can see), its general registers and its whole extended state
 * (x87, SSE, AVX: NT_X86_XSTATE) saved, and calls are made on it, each on
 * a stack of our own (mmap'ed in the target for the length of the visit)
 * with a return address of 0: when the function returns, the thread faults
 * at 0, a fault taken by the tracer and never delivered.  Then the state
 * is put back and the thread released.
 *
 * Which thread.  dlopen takes the loader's lock and calls malloc; a thread
 * stopped while it holds either would deadlock on itself.  So a thread is
 * borrowed only at a safe point: blocked in a system call that no C
 * library lock is held across and that the kernel restarts invisibly
 * (poll, nanosleep, accept, read, futex...: /proc/PID/task/TID/syscall
 * tells without stopping it), or
 * running code outside the C library and the loader (checked once it is
 * stopped; such a thread is let go at once and another one tried).  A
 * thread of needle's own (needle-*) is never borrowed.
 *
 * Invariants:
 *  - The borrowed thread resumes with exactly the registers and extended
 *    state it was stopped with (orig_rax included, so an interrupted
 *    system call is restarted as the kernel would have: no EINTR, no
 *    short count).  Signals that arrive for it meanwhile are held and
 *    delivered when it is released.
 *  - The thread's errno (memory, not a register) is read before the calls
 *    and written back after them.
 *  - Nothing is written to the program's own stack: the calls run on the
 *    visit's stack (a thread may be deep in recursion, or on a small
 *    alternate signal stack), which is unmapped before release.
 *  - The work runs in a child process, which ignores the terminal's
 *    signals: killing needle record (even with SIGKILL) mid-visit leaves
 *    the child to finish and give the thread back.
 *
 * The target's functions are found from the tracer's own: both map the
 * same C library file (checked), at bases read from /proc.  glibc 2.34
 * and later have dlopen in libc itself.  Limits: a thread blocked in a
 * system call inside a signal handler that interrupted malloc, or in a
 * constructor run by the loader, is taken for safe; dlopen is given 10 s
 * and, if it does not return, the thread is given back with its state
 * restored but the loader may keep its lock (said in the error). */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/inject/inject.h"
#include "cli/util/procfs.h"
#include "common/attach_protocol.h"

#define VISIT_STACK ATTACH_VISIT_STACK
#define XSTATE_MAX 16384
/* Signals held while a thread is borrowed, with their siginfo: a stream
 * of queued ones (a signal every 100 us) brings dozens in a visit.  One
 * more is let through at once (its handler runs then, as it would in
 * the program's own dlopen), never dropped. */
#define HELD_SIGNALS 256

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct range {
	uint64_t lo, hi;
};

/* What the visit needs to know of the target, read before any thread is
 * stopped. */
struct target {
	pid_t pid;
	uint64_t libc_base;     /* of the C library, mapped at offset 0 */
	struct range unsafe[64]; /* executable mappings of the C library and the loader (merged) */
	int unsafe_cnt;
	/* ... and of a libneedle already loaded (another recording's, or
	 * one that is starting): a thread there may be parked in its stop
	 * handler while its patch batch rewrites code, or hold its locks. */
	struct range agent[16];
	int agent_cnt;
	uint64_t syscall_ret;   /* address of the bytes 0f 05 c3: syscall; ret */
	uint64_t dlopen, dlsym, dlerror, errno_location;
	/* errno's offset from a thread's fs base (initial-exec TLS, read from
	 * the GOT slot that __errno_location loads), or 0: then it is asked
	 * of __errno_location on the thread, one more round trip. */
	int64_t errno_tpoff;
};

/* The thread being visited. */
struct visit {
	pid_t tid;
	struct user_regs_struct saved;
	uint8_t xstate[XSTATE_MAX];
	size_t xstate_len;
	siginfo_t held[HELD_SIGNALS]; /* signals that came while it was stopped, delivered at release */
	int held_cnt;
	int group_stop;          /* its stop was a group stop's (the process was stopped), not the interrupt's */
	uint64_t stack;          /* the visit's stack in the target, or 0 */
	uint64_t handed_over;    /* the stack the entry took over, released after give_back */
	uint64_t stopped_at;
	struct sched_attr_v1 {  /* the thread's own scheduling, put back at release */
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t rt_priority;
		uint64_t runtime, deadline, period;
	} sched;
	int boosted;
};

static int mem_rw(pid_t pid, uint64_t addr, void *buf, size_t len, int write)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	/* process_vm_* need the pages mapped writable/readable; /proc/PID/mem
	 * writes through protections the way a debugger does. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write ? pwrite(fd, buf, len, (off_t)addr) : pread(fd, buf, len, (off_t)addr);
	int err = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

static int is_loader_or_libc(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "ld-linux", 8) || !strncmp(base, "libc-", 5) ||
	       !strncmp(base, "ld-", 3);
}

/* Where path is loaded in pid (the address of its file offset 0), and
 * the executable ranges of the C library and the loader.  Taken from its
 * executable mapping (the loader maps the text segment at the same
 * distance from the base as its file offset, as ld lays out every
 * library): another mapping of the file at offset 0, read-only (a
 * libneedle already in the process maps the file to read its symbols),
 * is not the loaded library. */
static uint64_t scan_maps(pid_t pid, const char *libc_path, struct target *t)
{
	struct maps_reader m;
	struct maps_line l;
	uint64_t base = 0;

	if (maps_open(&m, pid))
		return 0;
	while (maps_next(&m, &l)) {
		if (l.path[0] != '/')
			continue;
		if (l.perms[2] == 'x' && !base && !strcmp(l.path, libc_path) && l.lo >= l.offset)
			base = l.lo - l.offset;
		/* Patched pages split a mapping in several: adjacent ones merge. */
		const char *base_name = strrchr(l.path, '/');
		if (t && l.perms[2] == 'x' && !strncmp(base_name ? base_name + 1 : l.path, "libneedle", 9) &&
		    t->agent_cnt < 16)
			t->agent[t->agent_cnt++] = (struct range){ l.lo, l.hi };
		if (t && l.perms[2] == 'x' && is_loader_or_libc(l.path)) {
			if (t->unsafe_cnt && t->unsafe[t->unsafe_cnt - 1].hi == l.lo)
				t->unsafe[t->unsafe_cnt - 1].hi = l.hi;
			else if (t->unsafe_cnt < 64)
				t->unsafe[t->unsafe_cnt++] = (struct range){ l.lo, l.hi };
		}
	}
	maps_close(&m);
	return base;
}

/* The bytes "syscall; ret" in the C library's code, read through the
 * target's memory (the same file, so the same bytes). */
static uint64_t find_syscall_ret(const struct target *t)
{
	for (int i = 0; i < t->unsafe_cnt; i++) {
		size_t len = (size_t)(t->unsafe[i].hi - t->unsafe[i].lo);
		uint8_t *buf = malloc(len);
		if (!buf)
			return 0;
		if (!mem_rw(t->pid, t->unsafe[i].lo, buf, len, 0)) {
			for (size_t j = 0; j + 3 <= len; j++) {
				if (buf[j] == 0x0f && buf[j + 1] == 0x05 && buf[j + 2] == 0xc3) {
					free(buf);
					return t->unsafe[i].lo + j;
				}
			}
		}
		free(buf);
	}
	return 0;
}

/* glibc's __errno_location is "mov errno@gottpoff(%rip), %rax; add
 * %fs:0, %rax; ret": the GOT slot it loads holds errno's offset from the
 * thread pointer, the same for every thread of the target.  Read from the
 * target's copy of the slot (the same C library file, so the same place
 * from its base), it gives any thread's errno from its fs base without
 * running anything on it.  0 if the code is not that. */
static int64_t errno_tpoff(const struct target *t, const uint8_t *code, uint64_t my_base)
{
	static const uint8_t add_fs[] = { 0x64, 0x48, 0x03, 0x04, 0x25, 0, 0, 0, 0, 0xc3 };
	int64_t off = 0;

	if (code[0] != 0x48 || code[1] != 0x8b || code[2] != 0x05 || memcmp(code + 7, add_fs, sizeof(add_fs)))
		return 0;
	int32_t rel;
	memcpy(&rel, code + 3, sizeof(rel));
	uint64_t slot = (uint64_t)(uintptr_t)code + 7 + (uint64_t)(int64_t)rel - my_base + t->libc_base;
	if (mem_rw(t->pid, slot, &off, sizeof(off), 0))
		return 0;
	return off;
}

static int target_prepare(pid_t pid, struct target *t, char *err, size_t errlen)
{
	Dl_info self;
	char libc[PATH_MAX];

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (!dladdr((void *)dlopen, &self) || !self.dli_fname) {
		snprintf(err, errlen, "cannot find this process's C library");
		return -ENOENT;
	}
	if (!realpath(self.dli_fname, libc))
		snprintf(libc, sizeof(libc), "%s", self.dli_fname);
	uint64_t mine = scan_maps(getpid(), libc, NULL);
	t->libc_base = scan_maps(pid, libc, t);
	if (!mine || !t->libc_base) {
		snprintf(err, errlen,
			 "process %d does not map %.200s (statically linked, or another C library): its dlopen "
			 "cannot be called", (int)pid, libc);
		return -ENOEXEC;
	}
	t->dlopen = t->libc_base + ((uint64_t)(uintptr_t)dlopen - mine);
	t->dlsym = t->libc_base + ((uint64_t)(uintptr_t)dlsym - mine);
	t->dlerror = t->libc_base + ((uint64_t)(uintptr_t)dlerror - mine);
	t->errno_location = t->libc_base + ((uint64_t)(uintptr_t)__errno_location - mine);
	t->errno_tpoff = errno_tpoff(t, (const uint8_t *)(uintptr_t)__errno_location, mine);
	if (!(t->syscall_ret = find_syscall_ret(t))) {
		snprintf(err, errlen, "cannot read the C library's code in process %d", (int)pid);
		return -EIO;
	}
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig; /* only to interrupt waitpid */
}

/* Wait for the next stop of tid, up to deadline_ns; -ETIMEDOUT past it.
 * A blocking wait with a timer, not a polling loop: the thread is held
 * for as long as this takes, and polling (on two CPUs) costs it ms. */
static int wait_stop(pid_t tid, int *status, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = now_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		uint64_t left = deadline_ns - now;
		struct itimerval it = { { 0, 0 }, { (time_t)(left / 1000000000u), (suseconds_t)(left % 1000000000u / 1000u) + 1 } };
		setitimer(ITIMER_REAL, &it, NULL);
		pid_t r = waitpid(tid, status, __WALL);
		int e = errno;
		struct itimerval off = { { 0, 0 }, { 0, 0 } };
		setitimer(ITIMER_REAL, &off, NULL);
		if (r == tid)
			return 0;
		if (r < 0 && e != EINTR)
			return -e;
	}
}

/* System calls a thread may be borrowed in.  None is made by the C
 * library with its allocator's or its loader's lock held, and after the
 * ptrace stop each goes on as if the thread had never been held:
 *
 *  - SYSCALL_RESTARTED: the kernel restarts the call itself after the
 *    stop (-ERESTARTSYS, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK: read,
 *    accept, poll, select, nanosleep, futex, pause, sigsuspend...);
 *  - SYSCALL_REWOUND: a stop makes the call return -EINTR whatever
 *    SA_RESTART says (signal(7): epoll_wait, sigtimedwait, semop, msgrcv;
 *    fs/eventpoll.c checks signal_pending and returns -EINTR, never a
 *    restart).  Such a call that shows -EINTR at the stop has consumed
 *    nothing (an event, a signal, a semaphore unit, a message is taken
 *    only on success), so give_back() puts the thread back on its syscall
 *    instruction with the call number in rax, and the same call runs
 *    again with the same arguments (the kernel keeps rdi..r9 across a
 *    system call).  The restartable calls above get the same treatment
 *    when they show -EINTR (a socket read with SO_RCVTIMEO).
 *
 * Neither a real signal nor an EINTR is lost: when a signal arrives for
 * the thread while it is held, it is delivered at release and the call
 * is not rewound, so the program sees the EINTR the signal caused. */
enum syscall_kind { SYSCALL_UNSAFE, SYSCALL_RESTARTED, SYSCALL_REWOUND };

static enum syscall_kind syscall_kind(long nr)
{
	static const long restarted[] = {
		SYS_read, SYS_readv, SYS_pread64, SYS_recvfrom, SYS_recvmsg, SYS_accept, SYS_accept4,
		SYS_poll, SYS_ppoll, SYS_select, SYS_pselect6, SYS_nanosleep, SYS_clock_nanosleep,
		SYS_wait4, SYS_waitid, SYS_pause, SYS_futex, SYS_rt_sigsuspend,
	};
	static const long rewound[] = {
		SYS_epoll_wait, SYS_epoll_pwait, SYS_epoll_pwait2, SYS_rt_sigtimedwait,
		SYS_semop, SYS_semtimedop, SYS_msgrcv,
	};
	for (size_t i = 0; i < sizeof(restarted) / sizeof(restarted[0]); i++)
		if (restarted[i] == nr)
			return SYSCALL_RESTARTED;
	for (size_t i = 0; i < sizeof(rewound) / sizeof(rewound[0]); i++)
		if (rewound[i] == nr)
			return SYSCALL_REWOUND;
	return SYSCALL_UNSAFE;
}

static int safe_syscall(long nr)
{
	return syscall_kind(nr) != SYSCALL_UNSAFE;
}

int inject_syscall_redoable(long nr)
{
	return safe_syscall(nr);
}

/* Whether a call that is rewound (SYSCALL_REWOUND) was given a timeout,
 * from its arguments: made again, it would start that timeout over, and
 * the program's timer would fire late.  Without one, the call made again
 * is the call the program made. */
static int rewound_call_times_out(long nr, const uint64_t args[6])
{
	switch (nr) {
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
		return (int)(uint32_t)args[3] >= 0; /* an int: -1 waits for good */
	case SYS_epoll_pwait2:
		return args[3] != 0; /* a timespec pointer */
	case SYS_rt_sigtimedwait:
		return args[2] != 0;
	case SYS_semtimedop:
		return args[3] != 0;
	default: /* semop, msgrcv */
		return 0;
	}
}

struct candidate {
	pid_t tid;
	/* 0 asleep in a call the kernel restarts, 1 in futex (maybe a lock's
	 * waiter), 2 in a call that is rewound and waits for good (an event
	 * loop's wait: the thread is idle, and the call made again is the
	 * same), 3 running, 4 in a call that is rewound and times out (its
	 * timeout would start over: taken only once the thread has had time
	 * to wake and run, which servers do at least every second) */
	int rank;
};

static int candidate_cmp(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	return x->rank != y->rank ? x->rank - y->rank : (x->tid > y->tid) - (x->tid < y->tid);
}

/* The target's threads, best first. */
static size_t list_candidates(pid_t pid, struct candidate **out)
{
	char dir[64];
	struct dirent *e;
	struct candidate *v = NULL;
	size_t n = 0, cap = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	*out = NULL;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char name[64];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		pid_t tid = atoi(e->d_name);
		snprintf(name, sizeof(name), "task/%d/comm", (int)tid);
		char *comm = proc_read(pid, name, NULL);
		int ours = comm && !strncmp(comm, "needle-", 7);
		free(comm);
		if (ours)
			continue;
		int rank = 3;
		snprintf(name, sizeof(name), "task/%d/syscall", (int)tid);
		char *buf = proc_read(pid, name, NULL);
		if (buf) {
			char *p = buf;
			long nr = strtol(p, &p, 10);
			uint64_t args[6];
			for (int i = 0; i < 6; i++)
				args[i] = strtoull(p, &p, 16);
			if (strncmp(buf, "running", 7) && nr >= 0) {
				enum syscall_kind kind = syscall_kind(nr);
				rank = kind == SYSCALL_UNSAFE	  ? -1
				       : kind == SYSCALL_REWOUND ? (rewound_call_times_out(nr, args) ? 4 : 2)
								 : nr == SYS_futex;
			}
			free(buf);
		}
		if (rank < 0)
			continue; /* in a call the C library may hold a lock across */
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct candidate *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = (struct candidate){ tid, rank };
	}
	closedir(d);
	qsort(v, n, sizeof(*v), candidate_cmp);
	*out = v;
	return n;
}

static int in_unsafe(const struct target *t, uint64_t pc)
{
	for (int i = 0; i < t->unsafe_cnt; i++)
		if (pc >= t->unsafe[i].lo && pc < t->unsafe[i].hi)
			return 1;
	return 0;
}

static int in_agent(const struct target *t, uint64_t pc)
{
	for (int i = 0; i < t->agent_cnt; i++)
		if (pc >= t->agent[i].lo && pc < t->agent[i].hi)
			return 1;
	return 0;
}

/* Scheduling.  Every remote call is a hand-off: the tracer resumes the
 * thread and sleeps, the thread runs and faults, the tracer wakes.  On a
 * machine whose CPUs are busy (the program's own threads spinning, a
 * load), each waits for a time slice behind them: a hold of 5-50 ms on 2
 * CPUs with 4 busy threads, for 0.3 ms of work.  So while it is held the
 * thread runs SCHED_FIFO, as the injecting process does (boost_self),
 * where the caller may set that (root, or RLIMIT_RTPRIO): both then run
 * as soon as they are woken.  The thread's own policy, nice value and
 * flags (sched_getattr) are put back before it is released, so it never
 * runs a program instruction under a policy it did not have. */
static void boost(struct visit *v)
{
	struct sched_attr_v1 fifo = { .size = sizeof(fifo), .policy = SCHED_FIFO, .rt_priority = 1 };

	v->boosted = 0;
	if (syscall(SYS_sched_getattr, v->tid, &v->sched, sizeof(v->sched), 0) == 0 &&
	    v->sched.policy != SCHED_FIFO && v->sched.policy != SCHED_RR && v->sched.policy != 6 /* SCHED_DEADLINE */ &&
	    syscall(SYS_sched_setattr, v->tid, &fifo, 0) == 0)
		v->boosted = 1;
}

static void unboost(struct visit *v)
{
	if (v->boosted) {
		v->sched.size = sizeof(v->sched);
		syscall(SYS_sched_setattr, v->tid, &v->sched, 0);
		v->boosted = 0;
	}
}

static void boost_self(void)
{
	struct sched_param p = { .sched_priority = 1 };
	sched_setscheduler(0, SCHED_FIFO, &p); /* where allowed; otherwise as it was */
}

static void release(const struct target *t, struct visit *v, struct inject_result *res)
{
	uint64_t held = now_ns() - v->stopped_at;

	unboost(v);
	inject_detach_delivering(t->pid, v->tid, v->held, v->held_cnt, v->group_stop);
	if (v->stopped_at && held > res->held_ns)
		res->held_ns = held;
}

/* A signal's delivery stop of tid: its siginfo kept in held, and 0 (the
 * thread goes on without it for now), or the signal to let through when
 * held is full. */
static int hold_signal(pid_t tid, siginfo_t *held, int *cnt, int sig)
{
	/* A signal that does not queue is pending once at most. */
	for (int i = 0; sig < SIGRTMIN && i < *cnt; i++)
		if (held[i].si_signo == sig)
			return 0;
	if (*cnt >= HELD_SIGNALS)
		return sig;
	siginfo_t *si = &held[(*cnt)++];
	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, si)) {
		memset(si, 0, sizeof(*si));
		si->si_signo = sig;
		si->si_code = SI_TKILL;
	}
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int inject_poll_stop(pid_t tid, int *status, uint64_t ns)
{
	uint64_t end = mono_ns() + ns;
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (mono_ns() >= end)
			return -ETIMEDOUT;
		struct timespec t = { 0, 20 * 1000 };
		nanosleep(&t, NULL);
	}
}

/* ... stopped, not gone: 0, -ESRCH or -ETIMEDOUT. */
static int poll_stop(pid_t tid, int *status, uint64_t ns)
{
	int e = inject_poll_stop(tid, status, ns);
	if (e == -ETIMEDOUT)
		return e;
	return e || WIFEXITED(*status) || WIFSIGNALED(*status) ? -ESRCH : 0;
}

/* The value of a signal sent again whose siginfo the kernel lets no
 * other process give (kill's, tgkill's, the kernel's own): this marker
 * and its index in held, replaced at its delivery stop. */
#define RESENT_MARK 0x6e65656400000000ull /* "need" */

/* Whether the kernel lets this process queue si for another one as it
 * is (rt_tgsigqueueinfo: a negative code other than tgkill's: sigqueue,
 * a POSIX timer, a message queue, asynchronous I/O). */
static int requeueable(const siginfo_t *si)
{
	return si->si_code < 0 && si->si_code != SI_TKILL;
}

void inject_detach_delivering(pid_t pid, pid_t tid, const siginfo_t *held, int cnt, int group_stop)
{
	int status, marked = 0;

	if (cnt > HELD_SIGNALS)
		cnt = HELD_SIGNALS;
	/* Each is queued again, in the order it came: as it was where the
	 * kernel allows it; else marked, to be given back its own siginfo
	 * at its delivery stop.  A signal that does not queue and is
	 * pending already is not queued twice (the kernel drops it). */
	for (int i = 0; i < cnt; i++) {
		siginfo_t si = held[i];
		if (!requeueable(&si)) {
			memset(&si, 0, sizeof(si));
			si.si_signo = held[i].si_signo;
			si.si_code = SI_QUEUE;
			si.si_pid = getpid();
			si.si_uid = getuid();
			si.si_value.sival_ptr = (void *)(uintptr_t)(RESENT_MARK | (uint64_t)i);
		}
		if (syscall(SYS_rt_tgsigqueueinfo, (int)pid, (int)tid, si.si_signo, &si) == 0)
			marked += !requeueable(&held[i]);
	}
	/* In a group stop (the process stopped by SIGSTOP meanwhile), a
	 * resume would take the thread out of it: let go, the signals
	 * pending; so too when none needs its siginfo given back. */
	if (!marked || group_stop) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return;
	}
	/* Each comes to a delivery stop as the thread goes on (before it
	 * runs an instruction: a pending signal it does not block is taken
	 * on the way back to user space); 100 ms for them all, after which
	 * those still pending (blocked meanwhile) keep the marked siginfo. */
	uint64_t end = mono_ns() + 100 * 1000 * 1000ull;
	ptrace(PTRACE_CONT, tid, NULL, NULL);
	while (marked) {
		uint64_t now = mono_ns();
		int e = now < end ? poll_stop(tid, &status, end - now) : -ETIMEDOUT;
		if (e == -ESRCH)
			return;
		if (e)
			break;
		if ((status >> 16) != 0) {
			ptrace(PTRACE_CONT, tid, NULL, NULL); /* an event, a group stop's report: on */
			continue;
		}
		int sig = WSTOPSIG(status);
		siginfo_t si;
		if (!ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) && si.si_code == SI_QUEUE && si.si_pid == getpid() &&
		    ((uint64_t)(uintptr_t)si.si_value.sival_ptr & ~0xffffffffull) == RESENT_MARK) {
			uint64_t k = (uint64_t)(uintptr_t)si.si_value.sival_ptr & 0xffffffffull;
			if (k < (uint64_t)cnt)
				ptrace(PTRACE_SETSIGINFO, tid, NULL, (void *)&held[k]);
			marked--;
		}
		if (!marked) {
			ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)sig);
			return;
		}
		ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
	}
	/* Stopped again before the detach: a detach of a running thread
	 * fails and leaves it traced.  The interrupt's stop comes unless
	 * the thread ends. */
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	for (;;) {
		int e = poll_stop(tid, &status, 1000 * 1000 * 1000ull);
		if (e == -ESRCH)
			return;
		if (e == -ETIMEDOUT)
			continue;
		if ((status >> 16) == PTRACE_EVENT_STOP)
			break;
		ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)((status >> 16) == 0 ? WSTOPSIG(status) : 0));
	}
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
}

/* Seize and stop tid; 0 with its state saved, 1 if it is not at a safe
 * point (let go again), negative errno. */
static int borrow(const struct target *t, pid_t tid, struct visit *v, struct inject_result *res)
{
	int status, e;

	memset(v, 0, sizeof(*v));
	v->tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
		e = -errno;
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return e;
	}
	for (;;) {
		if ((e = wait_stop(tid, &status, now_ns() + 2000000000ull))) {
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			return e;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		/* The interrupt's stop is PTRACE_EVENT_STOP; a signal that was
		 * on its way stops the thread first: hold it. */
		if ((status >> 16) == PTRACE_EVENT_STOP) {
			v->group_stop = WSTOPSIG(status) != SIGTRAP;
			break;
		}
		int pass = hold_signal(tid, v->held, &v->held_cnt, WSTOPSIG(status));
		ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)pass);
	}
	v->stopped_at = now_ns();
	boost(v);
	struct iovec iov = { v->xstate, sizeof(v->xstate) };
	if (ptrace(PTRACE_GETREGS, tid, NULL, &v->saved) || ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov)) {
		e = -errno;
		release(t, v, res);
		return e;
	}
	v->xstate_len = iov.iov_len;
	/* In a system call: one of the safe ones (it may have moved on
	 * since /proc was read).  In user code: not the C library's or the
	 * loader's, which may hold their locks.  Nowhere in a libneedle
	 * already there (a thread its patch batch stopped waits in its
	 * handler, and must not run while the batch rewrites code). */
	int in_syscall = (long long)v->saved.orig_rax >= 0;
	if (in_agent(t, v->saved.rip) ||
	    (in_syscall ? !safe_syscall((long)v->saved.orig_rax) : in_unsafe(t, v->saved.rip))) {
		release(t, v, res);
		res->passed_over++;
		return 1;
	}
	return 0;
}

/* Call fn with up to six arguments on the borrowed thread and wait for
 * its return (to address 0).  With sys_nr >= 0, fn is the "syscall; ret"
 * bytes and this is system call sys_nr (arguments in the kernel's
 * registers).  Runs on the visit's stack once there is one; the call that
 * maps it runs below the red zone of the thread's own stack, where it
 * writes nothing but the return address.  Its return value in *ret. */
static int remote_call(struct visit *v, uint64_t fn, const uint64_t a[6], long sys_nr, uint64_t *ret,
		       uint64_t deadline_ns)
{
	struct user_regs_struct call = v->saved, now;
	uint64_t zero = 0, sp;
	int status, e;

	if (v->stack)
		sp = (v->stack + VISIT_STACK - 4096) & ~15ull;
	else
		sp = (v->saved.rsp - 128 - 64) & ~15ull;
	sp -= 8; /* the return address, as after a call instruction */
	if ((e = mem_rw(v->tid, sp, &zero, sizeof(zero), 1)))
		return e;
	call.rip = fn;
	call.rsp = sp;
	call.rdi = a[0];
	call.rsi = a[1];
	call.rdx = a[2];
	call.rcx = a[3];
	call.r10 = a[3];
	call.r8 = a[4];
	call.r9 = a[5];
	call.rax = sys_nr >= 0 ? (uint64_t)sys_nr : 0;
	call.orig_rax = (unsigned long long)-1; /* no system call restart on resume */
	call.eflags &= ~0x400ull;                /* DF clear, as the ABI wants at a call */
	if (ptrace(PTRACE_SETREGS, v->tid, NULL, &call) || ptrace(PTRACE_CONT, v->tid, NULL, NULL))
		return -errno;
	for (;;) {
		int pass = 0;
		if ((e = wait_stop(v->tid, &status, deadline_ns)))
			return e;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGSEGV && (status >> 16) == 0 &&
		    !ptrace(PTRACE_GETREGS, v->tid, NULL, &now) && now.rip == 0) {
			*ret = now.rax;
			return 0;
		}
		if (WIFSTOPPED(status) && (status >> 16) == 0) {
			int sig = WSTOPSIG(status);
			if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE)
				return -EFAULT; /* the call itself faulted */
			pass = hold_signal(v->tid, v->held, &v->held_cnt, sig);
		}
		/* A held signal, or a group stop: the call goes on. */
		ptrace(PTRACE_CONT, v->tid, NULL, (void *)(uintptr_t)pass);
	}
}

/* Does the thread's PC follow a syscall instruction (0f 05)?  The
 * kernel's own restart steps back 2 bytes blindly; the check is cheap
 * insurance against an entry through another instruction. */
static int at_syscall_insn(const struct target *t, uint64_t pc)
{
	uint8_t insn[2];
	return !mem_rw(t->pid, pc - 2, insn, sizeof(insn), 0) && insn[0] == 0x0f && insn[1] == 0x05;
}

/* Put the thread back as it was and let it go. */
static int give_back(const struct target *t, struct visit *v, struct inject_result *res)
{
	struct iovec iov = { v->xstate, v->xstate_len };
	int err = 0;

	struct user_regs_struct back = v->saved;
	/* A sleep (nanosleep, clock_nanosleep, poll with a timeout) stopped
	 * with -ERESTART_RESTARTBLOCK would be restarted by the kernel through
	 * the thread's restart_block, which the calls made on it since have
	 * replaced: it would return EINTR.  It is started again instead, as
	 * it was called: a relative timeout starts over (the thread sleeps
	 * longer by the time it was held, never wakes early or with EINTR). */
	int restart_block = (long long)back.rax == -516; /* ERESTART_RESTARTBLOCK */
	/* A call the stop ended with EINTR is made again (syscall_kind()),
	 * unless a signal came meanwhile: that signal's EINTR is the
	 * program's, and it is delivered at release. */
	int eintr = (long long)back.rax == -EINTR && !v->held_cnt && safe_syscall((long)back.orig_rax);
	if ((long long)back.orig_rax >= 0 && (restart_block || eintr) && at_syscall_insn(t, back.rip)) {
		back.rax = back.orig_rax;
		back.rip -= 2; /* the syscall instruction */
		back.orig_rax = (unsigned long long)-1;
		res->rewound += eintr;
	}
	if (ptrace(PTRACE_SETREGSET, v->tid, (void *)NT_X86_XSTATE, &iov) ||
	    ptrace(PTRACE_SETREGS, v->tid, NULL, &back))
		err = -errno;
	res->borrowed_ns = now_ns() - v->stopped_at;
	release(t, v, res);
	return err;
}

/* The visit in one round trip.  Each remote call costs the thread 0.15
 * to 0.7 ms of hold on this 2-vCPU VM (the tracer and the thread must
 * both be scheduled in turn), so the whole sequence runs in one: mmap of
 * the visit's stack, dlopen, dlsym, the entry, and back, from code that
 * the tracer writes into the unused tail of the C library's last
 * executable page (past the end of its executable segment: no instruction
 * of the library is there, and no thread runs it).  That page is a
 * private file mapping: the write, through /proc/PID/mem as a debugger
 * writes a breakpoint, gives the target a copy of it with the same bytes
 * everywhere else, so threads running other code in the page are not
 * disturbed; the tail's bytes are put back after the visit.  The code
 * reaches its read-only data (struct visit_seq, the strings, also in the
 * tail) through rdi, starts on the thread's stack below the red zone
 * (remote_call), switches to the visit's stack for the calls, and returns
 * the visit stack's address (or -errno of its mmap) in rax.  The results
 * are left in the visit stack's top page (struct visit_out).  */
struct visit_seq {
	uint64_t dlopen, dlsym, dlerror;        /*  0,  8, 16 */
	uint64_t path, entry, entry_arg0;       /* 24, 32, 40 */
	uint64_t mode, stack_len, hand_over;    /* 48, 56, 64 */
};
struct visit_out {
	uint64_t handle, entry_fn, entry_ret, why, saved_rsp; /* 0, 8, 16, 24, 32 */
};
_Static_assert(sizeof(struct visit_seq) == 72 && sizeof(struct visit_out) == 40,
	       "the offsets are written in visit_seq_code");
extern const uint8_t visit_seq_code[], visit_seq_code_end[];
__asm__("	.section .rodata\n"
	"	.p2align 4\n"
	"visit_seq_code:\n"
	"	pushq	%rbx\n"
	"	pushq	%r12\n"
	"	pushq	%r13\n"             /* rsp 16-aligned from here on */
	"	movq	%rdi, %r12\n"
	"	xorl	%edi, %edi\n"
	"	movq	56(%r12), %rsi\n"
	"	movl	$3, %edx\n"         /* PROT_READ | PROT_WRITE */
	"	movl	$0x22, %r10d\n"     /* MAP_PRIVATE | MAP_ANONYMOUS */
	"	movq	$-1, %r8\n"
	"	xorl	%r9d, %r9d\n"
	"	movl	$9, %eax\n"         /* SYS_mmap */
	"	syscall\n"
	"	cmpq	$-4096, %rax\n"
	"	ja	9f\n"
	"	movq	%rax, %rbx\n"
	"	leaq	-4096(%rax,%rsi), %r13\n" /* the top page: struct visit_out */
	"	movq	%rsp, 32(%r13)\n"
	"	movq	%r13, %rsp\n"
	"	movq	24(%r12), %rdi\n"
	"	movl	48(%r12), %esi\n"
	"	callq	*0(%r12)\n"         /* dlopen(path, mode) */
	"	movq	%rax, 0(%r13)\n"
	"	testq	%rax, %rax\n"
	"	jz	2f\n"
	"	cmpq	$0, 32(%r12)\n"
	"	je	3f\n"
	"	movq	%rax, %rdi\n"
	"	movq	32(%r12), %rsi\n"
	"	callq	*8(%r12)\n"         /* dlsym(handle, entry) */
	"	movq	%rax, 8(%r13)\n"
	"	testq	%rax, %rax\n"
	"	jz	3f\n"
	"	movq	40(%r12), %rdi\n"
	"	xorl	%esi, %esi\n"
	"	cmpq	$0, 64(%r12)\n"
	"	cmovneq	%rbx, %rsi\n"
	"	callq	*%rax\n"            /* entry(arg, stack or 0) */
	"	movslq	%eax, %rax\n"
	"	movq	%rax, 16(%r13)\n"
	"	jmp	3f\n"
	"2:	callq	*16(%r12)\n"        /* dlerror() */
	"	movq	%rax, 24(%r13)\n"
	"3:	movq	32(%r13), %rsp\n"
	"	movq	%rbx, %rax\n"
	"9:	popq	%r13\n"
	"	popq	%r12\n"
	"	popq	%rbx\n"
	"	ret\n"
	"visit_seq_code_end:\n"
	"	.previous\n");

/* Room for the code, its data and the strings. */
#define SEQ_DATA_AT 256
#define SEQ_STRINGS_AT (SEQ_DATA_AT + sizeof(struct visit_seq))

/* The unused tail of the C library's executable segment, in the target:
 * the same file as ours, so the same place from its base.  0 if there is
 * too little room. */
static uint64_t libc_code_tail(const struct target *t, size_t need, size_t *len)
{
	Dl_info self;
	if (!dladdr((void *)dlopen, &self) || !self.dli_fbase)
		return 0;
	const ElfW(Ehdr) *eh = self.dli_fbase;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	uint64_t end = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && ph[i].p_vaddr + ph[i].p_memsz > end)
			end = ph[i].p_vaddr + ph[i].p_memsz;
	uint64_t at = (end + 63) & ~63ull, page_end = (end + 4095) & ~4095ull;
	if (!end || page_end - at < need)
		return 0;
	*len = (size_t)(page_end - at);
	return t->libc_base + at;
}

/* The tail's bytes, written before any thread is stopped (the write
 * copies the page, a TLB shootdown across the target's CPUs that would
 * otherwise count in the hold) and put back after the thread is given
 * back.  Nothing in them depends on which thread runs them. */
struct seq_tail {
	uint64_t at;     /* in the target, or 0: the calls are made one by one */
	size_t len;
	uint8_t *saved;  /* what the tail held */
	uint64_t path_at, entry_at, arg_at;
};

static void seq_prepare(const struct target *t, const struct inject_request *req, struct seq_tail *st)
{
	size_t path_len = req->lib_path ? strlen(req->lib_path) + 1 : 0;
	size_t entry_len = req->entry ? strlen(req->entry) + 1 : 0, arg_len = req->arg ? strlen(req->arg) + 1 : 0;
	size_t code_len = (size_t)(visit_seq_code_end - visit_seq_code), room = 0;
	size_t need = SEQ_STRINGS_AT + path_len + entry_len + arg_len;
	/* A call of code already there takes no dlopen: one by one. */
	uint64_t tail = t->errno_tpoff && code_len <= SEQ_DATA_AT && !req->entry_at ? libc_code_tail(t, need, &room) : 0;
	uint8_t *saved = tail ? malloc(need) : NULL, *img = saved ? calloc(1, need) : NULL;

	memset(st, 0, sizeof(*st));
	if (!img || mem_rw(t->pid, tail, saved, need, 0)) {
		free(saved);
		free(img);
		return;
	}
	uint64_t str = tail + SEQ_STRINGS_AT;
	struct visit_seq d = {
		.dlopen = t->dlopen, .dlsym = t->dlsym, .dlerror = t->dlerror, .path = str,
		.entry = req->entry ? str + path_len : 0, .entry_arg0 = arg_len ? str + path_len + entry_len : 0,
		.mode = RTLD_NOW, .stack_len = VISIT_STACK, .hand_over = (uint64_t)req->hand_over_stack,
	};
	memcpy(img, visit_seq_code, code_len);
	memcpy(img + SEQ_DATA_AT, &d, sizeof(d));
	memcpy(img + SEQ_STRINGS_AT, req->lib_path, path_len);
	if (entry_len)
		memcpy(img + SEQ_STRINGS_AT + path_len, req->entry, entry_len);
	if (arg_len)
		memcpy(img + SEQ_STRINGS_AT + path_len + entry_len, req->arg, arg_len);
	if (!mem_rw(t->pid, tail, img, need, 1)) {
		*st = (struct seq_tail){ tail, need, saved, d.path, d.entry, d.entry_arg0 };
		saved = NULL;
	}
	free(saved);
	free(img);
}

static void seq_restore(const struct target *t, struct seq_tail *st)
{
	if (st->at)
		mem_rw(t->pid, st->at, st->saved, st->len, 1);
	free(st->saved);
	memset(st, 0, sizeof(*st));
}

/* The visit in one round trip (see visit_seq_code), through the tail
 * seq_prepare wrote.  1 when there is none (the caller makes the calls
 * one by one), else 0 or negative errno (err says why). */
static int visit_run_seq(const struct target *t, struct visit *v, const struct inject_request *req,
			 const struct seq_tail *st, struct inject_result *res, uint64_t deadline, char *err,
			 size_t errlen)
{
	uint64_t ret = 0;
	int saved_errno = 0, e;

	if (!st->at)
		return 1;
	uint64_t errno_at = v->saved.fs_base + (uint64_t)t->errno_tpoff;
	if (mem_rw(t->pid, errno_at, &saved_errno, sizeof(saved_errno), 0))
		return 1;
	const uint64_t args[6] = { st->at + SEQ_DATA_AT };
	if ((e = remote_call(v, st->at, args, -1, &ret, deadline))) {
		snprintf(err, errlen, "dlopen in process %d %s", (int)t->pid,
			 e == -ETIMEDOUT ? "did not return within 10 s (the loader may stay locked)" : strerror(-e));
		return e;
	}
	if (ret > (uint64_t)-4096) {
		snprintf(err, errlen, "cannot map memory in process %d: %s", (int)t->pid, strerror((int)-(int64_t)ret));
		return (int)(int64_t)ret;
	}
	v->stack = ret;
	struct visit_out out;
	if ((e = mem_rw(t->pid, v->stack + VISIT_STACK - 4096, &out, sizeof(out), 0))) {
		snprintf(err, errlen, "cannot read process %d: %s", (int)t->pid, strerror(-e));
		return e;
	}
	res->handle = out.handle;
	if (!out.handle) {
		char why[512] = "";
		if (out.why && !mem_rw(t->pid, out.why, why, sizeof(why) - 1, 0))
			why[sizeof(why) - 1] = 0;
		snprintf(err, errlen, "dlopen(%s) failed in process %d: %s", req->lib_path, (int)t->pid,
			 why[0] ? why : "no reason given");
		e = -ENOENT;
	} else if (req->entry && !out.entry_fn) {
		snprintf(err, errlen, "%s not found in %s in process %d", req->entry, req->lib_path, (int)t->pid);
		e = -ENOENT;
	} else {
		res->entry_ret = (int64_t)out.entry_ret;
	}
	mem_rw(t->pid, errno_at, &saved_errno, sizeof(saved_errno), 1);
	if (!e && req->entry && req->hand_over_stack && !res->entry_ret) {
		v->handed_over = v->stack; /* unmapped by the entry's side, once released */
		return 0;
	}
	const uint64_t unmap_args[6] = { v->stack, VISIT_STACK };
	v->stack = 0; /* the munmap runs below the red zone */
	remote_call(v, t->syscall_ret, unmap_args, SYS_munmap, &ret, deadline);
	return e;
}

/* The calls, on a borrowed thread: in one round trip where the target
 * allows it, else one by one. */
static int visit_run(const struct target *t, struct visit *v, const struct inject_request *req,
		     const struct seq_tail *st, struct inject_result *res, char *err, size_t errlen)
{
	uint64_t deadline = now_ns() + 10000000000ull, ret = 0;
	int seq = visit_run_seq(t, v, req, st, res, deadline, err, errlen);
	if (seq <= 0)
		return seq;
	size_t path_len = req->lib_path ? strlen(req->lib_path) + 1 : 0;
	size_t entry_len = req->entry ? strlen(req->entry) + 1 : 0, arg_len = req->arg ? strlen(req->arg) + 1 : 0;
	int e;

	if (path_len + entry_len + arg_len > 3072) {
		snprintf(err, errlen, "path too long");
		return -ENAMETOOLONG;
	}
	const uint64_t map_args[6] = { 0, VISIT_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				       (uint64_t)-1, 0 };
	if ((e = remote_call(v, t->syscall_ret, map_args, SYS_mmap, &ret, deadline)) || ret > (uint64_t)-4096) {
		snprintf(err, errlen, "cannot map memory in process %d: %s", (int)t->pid,
			 strerror(e ? -e : (int)-(int64_t)ret));
		return e ? e : (int)(int64_t)ret;
	}
	v->stack = ret;
	/* errno is memory, not a register: the calls below may change the
	 * thread's, so it is read now and written back before the end. */
	const uint64_t none[6] = { 0 };
	uint64_t errno_at = t->errno_tpoff ? v->saved.fs_base + (uint64_t)t->errno_tpoff : 0;
	int saved_errno = 0;
	if (!errno_at && remote_call(v, t->errno_location, none, -1, &errno_at, deadline))
		errno_at = 0;
	if (errno_at && mem_rw(t->pid, errno_at, &saved_errno, sizeof(saved_errno), 0))
		errno_at = 0;
	/* The strings, in the top page of the visit's stack. */
	uint64_t str = v->stack + VISIT_STACK - 4096, path_at = str, entry_at = str + path_len,
		 arg_at = entry_at + entry_len;
	if ((path_len && (e = mem_rw(t->pid, path_at, (void *)req->lib_path, path_len, 1))) ||
	    (entry_len && (e = mem_rw(t->pid, entry_at, (void *)req->entry, entry_len, 1))) ||
	    (arg_len && (e = mem_rw(t->pid, arg_at, (void *)req->arg, arg_len, 1)))) {
		snprintf(err, errlen, "cannot write into process %d: %s", (int)t->pid, strerror(-e));
		goto unmap;
	}
	if (req->entry_at) {
		const uint64_t entry_args[6] = { arg_at, 0 };
		if ((e = remote_call(v, req->entry_at, entry_args, -1, &ret, deadline))) {
			snprintf(err, errlen, "the call in process %d: %s", (int)t->pid, strerror(-e));
			goto out; /* the stack may be in use still: left mapped */
		}
		res->entry_ret = (int64_t)(int32_t)ret;
		goto unmap;
	}
	const uint64_t open_args[6] = { path_at, RTLD_NOW };
	if ((e = remote_call(v, t->dlopen, open_args, -1, &res->handle, deadline))) {
		snprintf(err, errlen, "dlopen in process %d %s", (int)t->pid,
			 e == -ETIMEDOUT ? "did not return within 10 s (the loader may stay locked)" : strerror(-e));
		goto out; /* the stack may be in use still: left mapped */
	}
	if (!res->handle) {
		char why[512] = "";
		if (!remote_call(v, t->dlerror, none, -1, &ret, deadline) && ret && !mem_rw(t->pid, ret, why, sizeof(why) - 1, 0))
			why[sizeof(why) - 1] = 0;
		snprintf(err, errlen, "dlopen(%s) failed in process %d: %s", req->lib_path, (int)t->pid,
			 why[0] ? why : "no reason given");
		e = -ENOENT;
		goto unmap;
	}
	if (req->entry) {
		const uint64_t sym_args[6] = { res->handle, entry_at };
		if ((e = remote_call(v, t->dlsym, sym_args, -1, &ret, deadline)) || !ret) {
			snprintf(err, errlen, "%s not found in %s in process %d", req->entry, req->lib_path, (int)t->pid);
			e = e ? e : -ENOENT;
			goto unmap;
		}
		const uint64_t entry_args[6] = { arg_at, req->hand_over_stack ? v->stack : 0 };
		if ((e = remote_call(v, ret, entry_args, -1, &ret, deadline))) {
			snprintf(err, errlen, "%s in process %d: %s", req->entry, (int)t->pid, strerror(-e));
			goto out;
		}
		res->entry_ret = (int64_t)(int32_t)ret;
		if (req->hand_over_stack && !res->entry_ret) {
			/* Unmapped by the entry's side, once released. */
			v->handed_over = v->stack;
			if (errno_at)
				mem_rw(t->pid, errno_at, &saved_errno, sizeof(saved_errno), 1);
			return 0;
		}
	}
unmap:
	if (errno_at)
		mem_rw(t->pid, errno_at, &saved_errno, sizeof(saved_errno), 1);
	const uint64_t unmap_args[6] = { v->stack, VISIT_STACK };
	v->stack = 0; /* the munmap runs below the red zone */
	remote_call(v, t->syscall_ret, unmap_args, SYS_munmap, &ret, deadline);
out:
	return e;
}

/* One visit at a time per process: two would write the same tail of the
 * C library's page (seq_prepare), each over the code the other's thread
 * runs.  The lock is an abstract socket's name, which the kernel frees
 * when its holder exits however it ends; a second visitor waits for it
 * (10 s at most).  The descriptor, or negative errno. */
static int visit_lock(pid_t pid, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "needle-inject-%d", (int)pid);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		snprintf(err, errlen, "cannot create a socket: %s", strerror(errno));
		return -errno;
	}
	for (int tries = 0; tries < 1000; tries++) {
		if (!bind(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)))
			return fd;
		if (errno != EADDRINUSE)
			break;
		struct timespec t = { 0, 10 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	int e = errno == EADDRINUSE ? -EBUSY : -errno;
	close(fd);
	snprintf(err, errlen, e == -EBUSY ? "another needle record -p has been loading libneedle into process %d for 10 s"
					  : "cannot take the lock of process %d's visit: %s",
		 (int)pid, strerror(-e));
	return e;
}

/* The visit itself, in the child process. */
static int inject_here(pid_t pid, const struct inject_request *req, struct inject_result *res, char *err,
		       size_t errlen)
{
	struct target t;
	struct visit *v = malloc(sizeof(*v));
	int e;

	memset(res, 0, sizeof(*res));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* Held until this child exits (the descriptor is never closed). */
	if ((e = visit_lock(pid, err, errlen)) < 0) {
		free(v);
		return e;
	}
	if ((e = target_prepare(pid, &t, err, errlen))) {
		free(v);
		return e;
	}
	struct seq_tail st;
	seq_prepare(&t, req, &st);
	/* Rounds over the threads, best first, until one is at a safe point:
	 * running threads move on, so a later round may find one. */
	uint64_t give_up = now_ns() + 3000000000ull;
	int borrowed = 0;
	while (!borrowed && now_ns() < give_up) {
		struct candidate *c;
		size_t n = list_candidates(pid, &c);
		/* Every thread inside a system call that may hold a lock (a
		 * single-threaded server writing a reply) is a moment, not an
		 * answer: look again until the deadline, unless it is gone. */
		if (!n && kill(pid, 0)) {
			free(c);
			seq_restore(&t, &st);
			snprintf(err, errlen, "process %d has no thread that can be borrowed: it has exited", (int)pid);
			free(v);
			return -ESRCH;
		}
		if (!n) {
			free(c);
			struct timespec ts = { 0, 1000 * 1000 };
			nanosleep(&ts, NULL);
			continue;
		}
		/* A thread in a wait that times out is left to wake by itself
		 * for the first second. */
		int patient = now_ns() + 2000000000ull < give_up;
		for (size_t i = 0; i < n && !borrowed; i++) {
			if (c[i].rank == 4 && patient)
				continue;
			e = borrow(&t, c[i].tid, v, res);
			if (e == -EPERM || e == -EACCES) {
				free(c);
				seq_restore(&t, &st);
				free(v);
				snprintf(err, errlen, "cannot attach to process %d: %s", (int)pid, strerror(-e));
				return e;
			}
			borrowed = e == 0;
		}
		/* Waiting for a thread to wake from a timed wait: it runs for
		 * moments only when idle, look often. */
		long pause_ns = c[0].rank == 4 && patient ? 100 * 1000 : 2 * 1000 * 1000;
		free(c);
		if (!borrowed) {
			struct timespec ts = { 0, pause_ns };
			nanosleep(&ts, NULL);
		}
	}
	if (!borrowed) {
		seq_restore(&t, &st);
		snprintf(err, errlen, "no thread of process %d came to a safe point within 3 s (each was inside the C "
			 "library or the loader, or in a system call that may hold their locks)", (int)pid);
		free(v);
		return -EAGAIN;
	}
	res->tid = (uint32_t)v->tid;
	e = visit_run(&t, v, req, &st, res, err, errlen);
	int ge = give_back(&t, v, res);
	seq_restore(&t, &st); /* the thread is off the tail (or hung in the loader, not in it either) */
	if (v->handed_over) {
		/* The thread is off the stack now: the entry's side may unmap it. */
		uint64_t released = ATTACH_STACK_RELEASED;
		mem_rw(pid, v->handed_over, &released, sizeof(released), 1);
	}
	if (!e && ge) {
		snprintf(err, errlen, "cannot restore the state of thread %d of process %d: %s", (int)v->tid, (int)pid,
			 strerror(-ge));
		e = ge;
	}
	free(v);
	return e;
}

struct inject_reply {
	struct inject_result res;
	int err;
	char msg[512];
};

int inject_library(pid_t pid, const struct inject_request *req, struct inject_result *res, char *err, size_t errlen)
{
	int pipefd[2];
	struct inject_reply reply;

	if (pipe2(pipefd, O_CLOEXEC)) {
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(errno));
		return -errno;
	}
	pid_t child = fork();
	if (child < 0) {
		int e = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		snprintf(err, errlen, "cannot fork: %s", strerror(-e));
		return e;
	}
	if (child == 0) {
		/* Outlives needle record if it is killed: the thread must be
		 * given back whatever happens to the parent. */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		struct sigaction alarm_act = { .sa_handler = on_alarm }; /* no SA_RESTART */
		sigaction(SIGALRM, &alarm_act, NULL);
		close(pipefd[0]);
		memset(&reply, 0, sizeof(reply));
		boost_self();
		reply.err = inject_here(pid, req, &reply.res, reply.msg, sizeof(reply.msg));
		if (write(pipefd[1], &reply, sizeof(reply)) != (ssize_t)sizeof(reply))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	ssize_t n;
	do
		n = read(pipefd[0], &reply, sizeof(reply));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(reply)) {
		snprintf(err, errlen, "the process that attaches to %d failed", (int)pid);
		return -EIO;
	}
	*res = reply.res;
	if (reply.err)
		snprintf(err, errlen, "%s", reply.msg);
	return reply.err;
}
