/* kernel.c - the kernel's side of each traced thread: its system calls,
 * its time off the CPU, the page faults it takes and the names it is
 * given, on the same timeline as its function calls (needle record
 * --kernel=switch,syscall,fault,comm).
 *
 * Source: perf_event_open, one ring per CPU for the traced process
 * (pid, cpu, inherit: its exec, threads and children are followed; the
 * kernel refuses a ring to an inherited per-thread event), every event
 * of a CPU redirected into that CPU's ring (PERF_EVENT_IOC_SET_OUTPUT),
 * each sample led by its event's id (PERF_SAMPLE_IDENTIFIER).  Context
 * switches come from PERF_RECORD_SWITCH (a dummy event: allowed to any
 * user for a process of their own, and it says whether the thread was
 * preempted), system calls from the raw_syscalls tracepoints and the
 * S/D state of a blocked thread from sched:sched_switch (both need root
 * or kernel.perf_event_paranoid <= -1), faults from the software fault
 * events in user mode, names from PERF_RECORD_COMM (a dummy event with
 * comm set: a rename by prctl(PR_SET_NAME) or pthread_setname_np, and the
 * program's name at each exec).  What cannot be opened is left out and named in
 * one line; the recording never fails for it.
 *
 * Time: the events carry CLOCK_MONOTONIC_RAW (use_clockid), mapped onto
 * the trace's raw clock through samples of both taken at each drain: the
 * TSC and CLOCK_MONOTONIC_RAW run at a fixed ratio, where CLOCK_MONOTONIC
 * is slewed by NTP (an error of microseconds within a second: a system
 * call shown before the call that made it).  The perf clock's own TSC
 * parameters (cap_user_time_zero) are not offered on every machine,
 * virtual ones among them.
 *
 * Invariants:
 *  - The rings are read only by needle record's main thread, between
 *    the program's start and record_finish; a record is taken out
 *    (data_tail advanced, release) only once copied.
 *  - Records of the CPUs are merged in time order before they are
 *    paired (a thread's switch out on one CPU and in on another), and
 *    only up to a horizon a little in the past, so that a record
 *    published late by another CPU still comes before what follows it.
 *  - A thread's events are written in order of their start time: an
 *    event is held while an interval that began before it is still open
 *    (a system call around a switch). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli/record/kernel.h"
#include "common/tsc.h"
#include "format/trace_writer.h"

#define RING_PAGES 1024             /* data pages per CPU: 4 MiB, */
#define RING_PAGES_MIN 64           /* down to 256 KiB when the mlock limit refuses */
#define HORIZON_NS 2000000ull       /* records younger than this wait for the next drain */
#define SECTION_EVENTS 65536        /* events per KERNEL section at most */

enum sample_type { S_ENTER, S_EXIT, S_SWITCH_OUT, S_SWITCH_IN, S_SCHED_OUT, S_FAULT, S_WAKING, S_COMM, S_PROBE, S_LOST };

struct kernel_sample {
	uint64_t time; /* CLOCK_MONOTONIC ns */
	uint64_t a, b;
	uint32_t pid, tid, cpu;
	uint16_t type;  /* enum sample_type */
	uint16_t flags;
};

/* An event of a ring: its id (PERF_SAMPLE_IDENTIFIER), what it is. */
struct ring_event {
	uint64_t id;
	int fd;
	uint16_t kind; /* enum sample_type */
	uint16_t major;
};

struct kernel_ring {
	int fd;                   /* the event that owns the ring */
	struct ring_event *ev;    /* every event writing into it, by id once opened */
	size_t ev_cnt, ev_cap;
	void *base;
	size_t size; /* the data area */
};

struct kernel_thread {
	uint32_t tid; /* 0: a free slot */
	uint64_t seq;
	int sys_open, off_open;
	uint64_t sys_start, sys_nr, off_start;
	uint32_t sys_cpu, off_cpu;
	uint16_t off_state, next_state;
	uint32_t waker;  /* the thread that woke it while off the CPU, 0: not seen */
	int exec_gone;   /* exec'ed a program not recorded (--no-follow-exec) */
	int comm_reads, agent; /* agent: one of libneedle's threads, left out (agent_thread) */
	struct kernel_event *ev; /* complete, not yet written */
	size_t ev_cnt, ev_cap;
	struct kernel_event *kept; /* --snapshot: the newest, a ring (keep) */
	size_t kept_first, kept_cnt, kept_cap;
};

static uint64_t monotonic_raw_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* A TSC reading and the CLOCK_MONOTONIC_RAW of the same instant: the
 * pair read closest together of a few tries (a first clock_gettime
 * faults in the vDSO's data page, 30 us here), the TSC at the middle. */
static void clock_pair(uint64_t *raw, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t t0 = tsc_read(), n = monotonic_raw_ns(), t1 = tsc_read();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*raw = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

static int agent_thread(struct kernel_thread *t);

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int kernel_parse(const char *list, unsigned *bits, char *why, size_t whylen)
{
	char *copy = strdup(list), *save = NULL;
	if (!copy) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	int err = 0;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "switch"))
			*bits |= KERNEL_SWITCH;
		else if (!strcmp(w, "syscall"))
			*bits |= KERNEL_SYSCALL;
		else if (!strcmp(w, "fault"))
			*bits |= KERNEL_FAULT;
		else if (!strcmp(w, "comm"))
			*bits |= KERNEL_COMM;
		else if (!strcmp(w, "all"))
			*bits |= KERNEL_SWITCH | KERNEL_SYSCALL | KERNEL_FAULT | KERNEL_COMM;
		else {
			snprintf(why, whylen, "--kernel: unknown '%s' (switch, syscall, fault, comm or all)", w);
			err = -1;
			break;
		}
	}
	free(copy);
	if (!err && !*bits) {
		snprintf(why, whylen, "--kernel needs a list: switch, syscall, fault, comm or all");
		err = -1;
	}
	return err;
}

/* A tracepoint's id and the offset of one field of its payload, from
 * tracefs; 0 when it cannot be read (no tracefs, no permission). */
static const char *const tracefs_roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
#define TRACEFS_ROOTS (sizeof(tracefs_roots) / sizeof(tracefs_roots[0]))

/* tracefs is not mounted at boot on every machine (a container's, a
 * minimal install's): mounted where the kernel made its mount point,
 * once, as perf and libtracefs do, when neither place has it.  It stays
 * mounted after needle exits, like theirs: a tracefs mount holds nothing
 * of needle's (its uprobes are removed by kernel_close), and unmounting
 * it under another tracer that found it since would break that one.  A
 * failure (not root, no tracefs in the kernel) is left to the callers,
 * which name what they then leave out. */
static void tracefs_mount_once(void)
{
	static int tried;

	if (tried)
		return;
	tried = 1;
	for (size_t r = 0; r < TRACEFS_ROOTS; r++) {
		char path[64];
		snprintf(path, sizeof(path), "%s/events", tracefs_roots[r]);
		if (access(path, F_OK) == 0)
			return;
	}
	(void)mount("nodev", tracefs_roots[0], "tracefs", 0, NULL);
}

static int tracepoint(const char *event, const char *field, uint32_t *id, uint16_t *off)
{
	char path[256], line[512];

	tracefs_mount_once();
	for (size_t r = 0; r < TRACEFS_ROOTS; r++) {
		snprintf(path, sizeof(path), "%s/events/%s/id", tracefs_roots[r], event);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		unsigned v = 0;
		int ok = fscanf(f, "%u", &v) == 1;
		fclose(f);
		if (!ok)
			continue;
		snprintf(path, sizeof(path), "%s/events/%s/format", tracefs_roots[r], event);
		if (!(f = fopen(path, "r")))
			continue;
		char want[64];
		int found = 0;
		snprintf(want, sizeof(want), " %s;", field);
		while (!found && fgets(line, sizeof(line), f)) {
			char *at = strstr(line, want), *o = strstr(line, "offset:");
			if (at && o && at < o) {
				*off = (uint16_t)strtoul(o + 7, NULL, 10);
				found = 1;
			}
		}
		fclose(f);
		if (found) {
			*id = v;
			return 1;
		}
	}
	return 0;
}

static void attr_base(struct perf_event_attr *a, uint32_t type, uint64_t config, uint64_t sample_type)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = type;
	a->config = config;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | sample_type;
	a->sample_id_all = 1;
	a->inherit = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC_RAW;
	a->exclude_hv = 1;
}

/* Open one event of pid on ring's CPU into the ring (the first one owns
 * it). */
static int ring_add(struct kernel_ring *ring, struct perf_event_attr *a, pid_t pid, int cpu, uint16_t kind,
		    uint16_t major, int *err)
{
	if (ring->ev_cnt == ring->ev_cap) {
		size_t cap = ring->ev_cap ? 2 * ring->ev_cap : 8;
		struct ring_event *v = realloc(ring->ev, cap * sizeof(*v));
		if (!v) {
			*err = ENOMEM;
			return -1;
		}
		ring->ev = v;
		ring->ev_cap = cap;
	}
	int fd = perf_open(a, pid, cpu);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	if (ring->fd < 0) {
		/* 4 MiB a CPU where the user may lock that much (root), less
		 * down to 256 KiB (perf_event_mlock_kb, 516 KiB a user by
		 * default): a million system calls a second fill 1 MiB in
		 * 10 ms, the time between two reads. */
		size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = RING_PAGES;
		void *m;
		while ((m = mmap(NULL, (1 + pages) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED &&
		       pages > RING_PAGES_MIN)
			pages /= 4;
		if (m == MAP_FAILED) {
			*err = errno;
			close(fd);
			return -1;
		}
		ring->fd = fd;
		ring->base = m;
		ring->size = pages * page;
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd)) {
		*err = errno;
		close(fd);
		return -1;
	}
	uint64_t id = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id)) {
		*err = errno;
		if (fd != ring->fd)
			close(fd);
		return -1;
	}
	ring->ev[ring->ev_cnt++] = (struct ring_event){ .id = id, .fd = fd, .kind = kind, .major = major };
	return 0;
}

static int ring_event_cmp(const void *x, const void *y)
{
	const struct ring_event *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

static const char *refusal(int err)
{
	return err == EACCES || err == EPERM ? "needs root or kernel.perf_event_paranoid <= -1"
	       : err == ENOENT || err == ENODEV ? "not offered by this kernel"
						: strerror(err);
}

static void left_out(struct kernel_rec *k, const char *what, const char *why)
{
	size_t n = strlen(k->left_out);
	if (strstr(k->left_out, what))
		return;
	snprintf(k->left_out + n, sizeof(k->left_out) - n, "%s%s (%s)", n ? "; " : "", what, why);
}

/* The events asked for, of one task (a process not started yet, or a
 * thread of a running one: its children inherit them), on every CPU. */
static void open_task(struct kernel_rec *k, pid_t pid)
{
	struct perf_event_attr a;

	for (int cpu = 0; cpu < k->ring_cnt; cpu++) {
		struct kernel_ring *ring = &k->rings[cpu];
		int err = 0;
		if (k->asked & KERNEL_SWITCH) {
			attr_base(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 0);
			a.context_switch = 1;
			a.exclude_kernel = 1;
			if (!ring_add(ring, &a, pid, cpu, S_SWITCH_IN, 0, &err))
				k->got |= KERNEL_SWITCH;
			else if (err != ENODEV)
				left_out(k, "switch", refusal(err));
			if (k->have_sched && (k->got & KERNEL_SWITCH)) {
				attr_base(&a, PERF_TYPE_TRACEPOINT, k->switch_id, PERF_SAMPLE_RAW);
				if (ring_add(ring, &a, pid, cpu, S_SCHED_OUT, 0, &err) && err != ENODEV)
					left_out(k, "switch's S/D states", refusal(err));
			}
			/* Wakeups a traced thread makes: who woke a blocked
			 * thread, when it was one of the program's. */
			if (k->have_waking && (k->got & KERNEL_SWITCH)) {
				attr_base(&a, PERF_TYPE_TRACEPOINT, k->waking_id, PERF_SAMPLE_RAW);
				if (ring_add(ring, &a, pid, cpu, S_WAKING, 0, &err) && err != ENODEV)
					left_out(k, "wakers", refusal(err));
			}
		}
		if (k->have_sys) {
			attr_base(&a, PERF_TYPE_TRACEPOINT, k->enter_id, PERF_SAMPLE_RAW);
			int e1 = ring_add(ring, &a, pid, cpu, S_ENTER, 0, &err);
			attr_base(&a, PERF_TYPE_TRACEPOINT, k->exit_id, PERF_SAMPLE_RAW);
			if (!e1 && !ring_add(ring, &a, pid, cpu, S_EXIT, 0, &err))
				k->got |= KERNEL_SYSCALL;
			else if (err != ENODEV)
				left_out(k, "syscall", refusal(err));
		}
		if (k->asked & KERNEL_FAULT) {
			int ok = 1;
			for (int major = 0; major < 2 && ok; major++) {
				attr_base(&a, PERF_TYPE_SOFTWARE,
					  major ? PERF_COUNT_SW_PAGE_FAULTS_MAJ : PERF_COUNT_SW_PAGE_FAULTS_MIN,
					  PERF_SAMPLE_IP | PERF_SAMPLE_ADDR);
				a.exclude_kernel = 1;
				ok = !ring_add(ring, &a, pid, cpu, S_FAULT, (uint16_t)major, &err);
			}
			if (ok)
				k->got |= KERNEL_FAULT;
			else if (err != ENODEV)
				left_out(k, "fault", refusal(err));
		}
		if (k->asked & KERNEL_PROBE) {
			/* Each probe's tracepoint (open_probes), inherited as
			 * the others are. */
			int ok = 1;
			for (size_t i = 0; ok && i < k->probe_cnt; i++) {
				if (!k->probes[i].id) {
					ok = 0;
					break;
				}
				attr_base(&a, PERF_TYPE_TRACEPOINT, k->probes[i].id, 0);
				if (ring_add(ring, &a, pid, cpu, S_PROBE, (uint16_t)i, &err)) {
					/* ENODEV: a CPU that is offline, as
					 * for the other kinds. */
					if (err != ENODEV)
						left_out(k, "USDT probes", refusal(err));
					ok = 0;
				}
			}
			if (ok && k->probe_cnt)
				k->got |= KERNEL_PROBE;
		}
		if (k->asked & KERNEL_COMM) {
			/* A dummy event that never samples: its side-band
			 * records of renames and execs are the point. */
			attr_base(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 0);
			a.comm = 1;
			a.comm_exec = 1;
			a.exclude_kernel = 1;
			if (!ring_add(ring, &a, pid, cpu, S_COMM, 0, &err))
				k->got |= KERNEL_COMM;
			else if (err != ENODEV)
				left_out(k, "comm", refusal(err));
		}
	}
}

/* A process's start time (clock ticks since boot, /proc/PID/stat's 22nd
 * field), 0 if it is gone. */
static unsigned long long proc_start(int pid)
{
	char path[64], buf[1024];
	unsigned long long start = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* After the command's ")": state is field 3, start time field 22. */
	char *q = strrchr(buf, ')');
	if (q && sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			&start) != 1)
		start = 0;
	return start;
}

/* Remove the uprobes of needle records that are gone (killed before their
 * kernel_close): group needle_PID_START whose PID is no longer the process
 * that started then.  The whole list is read first: the kernel serves the
 * file by position in a list that each removal shortens. */
static void remove_stale_probes(const char *events, int fd)
{
	FILE *f = fopen(events, "re");
	char line[4096 + 128], def[128];
	char (*gone)[96] = NULL;
	size_t cnt = 0;

	while (f && fgets(line, sizeof(line), f)) {
		int owner = 0;
		unsigned long long start = 0;
		char event[64];
		if (sscanf(line, "p:needle_%d_%llu/%63s", &owner, &start, event) != 3 || owner <= 0 ||
		    proc_start(owner) == start)
			continue;
		char (*v)[96] = realloc(gone, (cnt + 1) * sizeof(*v));
		if (!v)
			break;
		gone = v;
		snprintf(gone[cnt++], sizeof(gone[0]), "needle_%d_%llu/%s", owner, start, event);
	}
	if (f)
		fclose(f);
	/* One write each (the kernel takes a definition per write); one that
	 * fails (in use by a live needle of another pid namespace) stops
	 * nothing. */
	for (size_t i = 0; i < cnt; i++) {
		int n = snprintf(def, sizeof(def), "-:%s\n", gone[i]);
		(void)!write(fd, def, (size_t)n);
	}
	free(gone);
}

/* The uprobes stay in tracefs if needle record is killed (SIGKILL) before
 * it takes them out; the next needle record -E removes a dead one's
 * (remove_stale_probes), but until then they are there for every tool
 * to see.  So a janitor waits beside it: /bin/sh in a session of its own
 * (a Ctrl-C to needle record's group does not reach it), reading a pipe
 * whose only writer is this process (close-on-exec, never the
 * program's).  When this process is gone, however it ended, the read
 * ends, and the janitor takes out what is left of the group, again for
 * a second while the kernel is still closing the events (a probe with an
 * open event cannot be removed); after a normal end, nothing is left and
 * it exits at once.  Not having one (no /bin/sh) is no error. */
static void start_janitor(struct kernel_rec *k)
{
	static const char script[] =
		"while read -r x; do :; done\n"
		"for i in 1 2 3 4 5 6 7 8 9 10; do\n"
		"  left=$(sed -n \"s|^p:\\($1/p[0-9]*\\) .*|\\1|p\" \"$0\")\n"
		"  [ -z \"$left\" ] && exit 0\n"
		"  for p in $left; do echo \"-:$p\"; done >>\"$0\" 2>/dev/null\n"
		"  sleep 0.1\n"
		"done\n";
	int p[2];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return;
	char *argv[] = { "sh", "-c", (char *)script, k->uprobe_events, k->probe_group, NULL };
	int ok = !posix_spawn_file_actions_init(&fa);
	ok = ok && !posix_spawn_file_actions_adddup2(&fa, p[0], 0) &&
	     !posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) &&
	     !posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	int attr_ok = !posix_spawnattr_init(&attr);
	if (attr_ok) {
		sigset_t none;
		sigemptyset(&none);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
	}
	if (ok && attr_ok && !posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ)) {
		k->janitor_fd = p[1];
		k->have_janitor = 1;
		k->janitor_pid = pid;
	} else {
		close(p[1]);
	}
	close(p[0]);
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
}

/* -E PROVIDER:NAME: each probe a uprobe made in tracefs
 * ("p:needle_PID_START/pN OBJECT:OFFSET(SEMAPHORE)", START the process's
 * start time, so that a pid reused, or the same pid in another container,
 * is told apart), opened as a tracepoint, as perf probe does.  Not the
 * uprobe PMU: the kernel reads its path from the opener's memory again
 * for each inherited copy, in the task that forks (clone fails with
 * EFAULT), and a system-wide one would count up the semaphores of every
 * process that maps the object.  A tracepoint event is inherited like the
 * others, and the kernel installs the breakpoint, and counts the
 * semaphore, only in the processes the events are of.  Removed by
 * kernel_close (remove_probes). */
static void open_probes(struct kernel_rec *k)
{
	char path[256], def[4096 + 128];
	int fd = -1;

	tracefs_mount_once();
	for (size_t r = 0; r < TRACEFS_ROOTS && fd < 0; r++) {
		snprintf(k->uprobe_events, sizeof(k->uprobe_events), "%s/uprobe_events", tracefs_roots[r]);
		fd = open(k->uprobe_events, O_WRONLY | O_APPEND | O_CLOEXEC);
	}
	if (fd < 0) {
		left_out(k, "USDT probes", errno == EACCES || errno == EPERM ? "tracefs's uprobe_events needs root"
										 : "no tracefs with uprobe_events");
		k->uprobe_events[0] = 0;
		return;
	}
	remove_stale_probes(k->uprobe_events, fd);
	snprintf(k->probe_group, sizeof(k->probe_group), "needle_%d_%llu", (int)getpid(), proc_start((int)getpid()));
	start_janitor(k);
	for (size_t i = 0; i < k->probe_cnt; i++) {
		struct kernel_probe *p = &k->probes[i];
		if (strpbrk(p->object, " \t\n")) {
			left_out(k, "USDT probes", "an object's path has a space");
			break;
		}
		int n = p->sema_off ? snprintf(def, sizeof(def), "p:%s/p%zu %s:%#llx(%#llx)\n", k->probe_group, i,
					       p->object, (unsigned long long)p->off, (unsigned long long)p->sema_off)
				    : snprintf(def, sizeof(def), "p:%s/p%zu %s:%#llx\n", k->probe_group, i, p->object,
					       (unsigned long long)p->off);
		if (write(fd, def, (size_t)n) != n) {
			left_out(k, "USDT probes", strerror(errno));
			break;
		}
		p->made = 1;
		snprintf(path, sizeof(path), "%.*s/events/%s/p%zu/id",
			 (int)(strlen(k->uprobe_events) - strlen("/uprobe_events")), k->uprobe_events, k->probe_group, i);
		FILE *idf = fopen(path, "re");
		unsigned id = 0;
		if (!idf || fscanf(idf, "%u", &id) != 1 || !id) {
			if (idf)
				fclose(idf);
			left_out(k, "USDT probes", "tracefs made no event of a uprobe");
			break;
		}
		fclose(idf);
		p->id = id;
	}
	close(fd);
}

/* Take needle's uprobes out of tracefs (their events closed first: the
 * kernel refuses to remove one in use), each that was made. */
static void remove_probes(struct kernel_rec *k)
{
	char def[128];

	if (!k->uprobe_events[0])
		return;
	int fd = open(k->uprobe_events, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return;
	for (size_t i = 0; i < k->probe_cnt; i++) {
		if (!k->probes[i].made)
			continue;
		int n = snprintf(def, sizeof(def), "-:%s/p%zu\n", k->probe_group, i);
		if (write(fd, def, (size_t)n) == n)
			k->probes[i].made = 0;
		k->probes[i].id = 0;
	}
	close(fd);
	k->uprobe_events[0] = 0;
	if (k->have_janitor) {
		close(k->janitor_fd); /* nothing left: it exits */
		k->have_janitor = 0;
	}
}

/* What every task's events share: the rings (one per CPU), the
 * tracepoints' ids, the clock's first sample, room for descriptors. */
static int open_begin(struct kernel_rec *k)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);

	clock_pair(&k->raw_a, &k->ns_a);
	k->raw_b = k->raw_a;
	k->ns_b = k->ns_a;
	if (cpus < 1)
		cpus = 1;
	if (!(k->rings = calloc((size_t)cpus, sizeof(*k->rings))))
		return -1;
	k->ring_cnt = (int)cpus;
	for (int i = 0; i < k->ring_cnt; i++)
		k->rings[i].fd = -1;
	/* A descriptor per task, CPU and kind: a running process's threads
	 * take hundreds. */
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (k->asked & KERNEL_SYSCALL) {
		k->have_sys = tracepoint("raw_syscalls/sys_enter", "id", &k->enter_id, &k->off_nr) &&
			      tracepoint("raw_syscalls/sys_exit", "ret", &k->exit_id, &k->off_ret) &&
			      tracepoint("raw_syscalls/sys_exit", "id", &k->exit_id, &k->off_exit_nr);
		if (!k->have_sys)
			left_out(k, "syscall", "the raw_syscalls tracepoints cannot be read: needs root and tracefs");
	}
	if (k->asked & KERNEL_PROBE)
		open_probes(k);
	if (k->asked & KERNEL_SWITCH) {
		k->have_sched = tracepoint("sched/sched_switch", "prev_state", &k->switch_id, &k->off_prev_state);
		k->have_waking = tracepoint("sched/sched_waking", "pid", &k->waking_id, &k->off_wakee);
	}
	return 0;
}

static int open_end(struct kernel_rec *k)
{
	int any = 0;
	for (int i = 0; i < k->ring_cnt; i++) {
		struct kernel_ring *ring = &k->rings[i];
		qsort(ring->ev, ring->ev_cnt, sizeof(*ring->ev), ring_event_cmp);
		any |= ring->fd >= 0;
	}
	if ((k->got & KERNEL_SWITCH) && !k->have_sched)
		left_out(k, "switch's S/D states and wakers",
			 "the sched tracepoints need root: blocked threads are shown as blocked");
	return any ? 0 : -1;
}

int kernel_open(struct kernel_rec *k, pid_t pid)
{
	k->root_pid = (uint32_t)pid;
	if (open_begin(k))
		return -1;
	open_task(k, pid);
	return open_end(k);
}

int kernel_add_probe(struct kernel_rec *k, const char *object, const char *shown, const char *name, uint64_t off,
		     uint64_t sema_off)
{
	if (k->probe_cnt >= KERNEL_PROBES_MAX)
		return -1;
	struct kernel_probe *v = realloc(k->probes, (k->probe_cnt + 1) * sizeof(*v));
	if (!v)
		return -1;
	k->probes = v;
	struct kernel_probe *p = &v[k->probe_cnt];
	*p = (struct kernel_probe){
		.object = strdup(object), .shown = strdup(shown), .name = strdup(name), .off = off, .sema_off = sema_off
	};
	if (!p->object || !p->shown || !p->name) {
		free(p->object);
		free(p->shown);
		free(p->name);
		return -1;
	}
	k->probe_cnt++;
	return 0;
}

static int tid_cmp(const void *x, const void *y)
{
	pid_t a = *(const pid_t *)x, b = *(const pid_t *)y;
	return a < b ? -1 : a > b;
}

int kernel_open_process(struct kernel_rec *k, pid_t pid)
{
	char path[64];
	pid_t *done = NULL;
	size_t done_cnt = 0, done_cap = 0;

	if (open_begin(k))
		return -1;
	/* Threads created while the first ones are opened are inherited only
	 * by then: read the list again until it holds no new one. */
	for (int round = 0, fresh = 1; fresh && round < 16; round++) {
		fresh = 0;
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		DIR *d = opendir(path);
		if (!d)
			break;
		for (struct dirent *e; (e = readdir(d));) {
			pid_t tid = (pid_t)atoi(e->d_name);
			if (tid <= 0 || (done_cnt && bsearch(&tid, done, done_cnt, sizeof(*done), tid_cmp)))
				continue;
			if (done_cnt == done_cap) {
				size_t cap = done_cap ? 2 * done_cap : 64;
				pid_t *v = realloc(done, cap * sizeof(*v));
				if (!v)
					break;
				done = v;
				done_cap = cap;
			}
			/* Not libneedle's own threads (the session's,
			 * needle-attach, named before this runs). */
			struct kernel_thread probe = { .tid = (uint32_t)tid };
			if (!agent_thread(&probe))
				open_task(k, tid);
			done[done_cnt++] = tid;
			qsort(done, done_cnt, sizeof(*done), tid_cmp);
			fresh = 1;
		}
		closedir(d);
	}
	free(done);
	return open_end(k);
}

static struct kernel_thread *thread_of(struct kernel_rec *k, uint32_t tid)
{
	if (k->thread_cnt * 2 >= k->thread_cap) {
		size_t cap = k->thread_cap ? 2 * k->thread_cap : 64;
		struct kernel_thread *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < k->thread_cap; i++) {
			if (!k->threads[i].tid)
				continue;
			size_t h = k->threads[i].tid * 2654435761u % cap;
			while (v[h].tid)
				h = (h + 1) % cap;
			v[h] = k->threads[i];
		}
		free(k->threads);
		k->threads = v;
		k->thread_cap = cap;
	}
	size_t h = tid * 2654435761u % k->thread_cap;
	while (k->threads[h].tid && k->threads[h].tid != tid)
		h = (h + 1) % k->thread_cap;
	if (!k->threads[h].tid) {
		k->threads[h].tid = tid;
		k->thread_cnt++;
		agent_thread(&k->threads[h]);
	}
	return &k->threads[h];
}

/* CLOCK_MONOTONIC_RAW ns -> the trace's raw clock. */
static uint64_t to_raw(const struct kernel_rec *k, uint64_t ns)
{
	if (!k->clock_tsc)
		return ns + k->mono_offset;
	if (k->ns_b == k->ns_a)
		return k->raw_a;
	__int128 d = (__int128)((int64_t)(ns - k->ns_a)) * (__int128)(k->raw_b - k->raw_a) / (__int128)(k->ns_b - k->ns_a);
	return (uint64_t)((__int128)k->raw_a + d);
}

static void emit(struct kernel_rec *k, struct kernel_thread *t, uint16_t kind, uint16_t flags, uint64_t start,
		 uint64_t end, uint64_t a, uint64_t b, uint32_t cpu)
{
	if (t->exec_gone)
		return;
	if (t->ev_cnt == t->ev_cap) {
		size_t cap = t->ev_cap ? 2 * t->ev_cap : 64;
		struct kernel_event *v = realloc(t->ev, cap * sizeof(*v));
		if (!v) {
			k->lost++;
			return;
		}
		t->ev = v;
		t->ev_cap = cap;
	}
	uint64_t rs = to_raw(k, start), re = to_raw(k, end);
	t->ev[t->ev_cnt++] = (struct kernel_event){
		.time = rs, .dur = re > rs ? re - rs : 0, .a = a, .b = b, .kind = kind, .flags = flags, .cpu = cpu
	};
	k->counts[kind]++;
}

static uint16_t state_of(uint64_t prev_state)
{
	/* TASK_INTERRUPTIBLE 1, TASK_UNINTERRUPTIBLE 2; TASK_RUNNING (0) or
	 * the kernel's "preempted" report (TASK_REPORT_MAX) are runnable. */
	if (prev_state & 2)
		return KEV_STATE_DISK;
	if (prev_state & 1)
		return KEV_STATE_SLEEPING;
	return KEV_STATE_PREEMPTED;
}

static void pair(struct kernel_rec *k, const struct kernel_sample *s)
{
	if (s->type == S_LOST) {
		for (size_t i = 0; i < k->thread_cap; i++)
			k->threads[i].sys_open = k->threads[i].off_open = 0;
		return;
	}
	struct kernel_thread *t = thread_of(k, s->tid);
	if (!t)
		return;
	/* A process that exec'ed a program not recorded (--no-follow-exec):
	 * its threads' events from then on are that program's. */
	for (size_t g = 0; g < k->gone_cnt; g++)
		if (k->gone[g] == s->pid)
			t->exec_gone = 1;
	switch (s->type) {
	case S_ENTER:
		t->sys_open = 1;
		t->sys_start = s->time;
		t->sys_nr = s->a;
		t->sys_cpu = s->cpu;
		break;
	case S_EXIT:
		/* An exit whose entry came before the recording (or was lost)
		 * is left out: its length is not known. */
		if (t->sys_open && t->sys_nr == s->a)
			emit(k, t, KEV_SYSCALL, 0, t->sys_start, s->time, t->sys_nr, s->b, t->sys_cpu);
		t->sys_open = 0;
		/* --no-follow-exec: a program exec'ed is not recorded, its
		 * kernel events neither (the thread goes on as another
		 * program). */
		if (k->no_follow_exec && (s->a == SYS_execve || s->a == SYS_execveat) && !s->b) {
			/* Not the exec that started the program. */
			if (s->tid == k->root_pid && !k->root_exec_seen)
				k->root_exec_seen = 1;
			else if (k->gone_cnt < KERNEL_GONE_MAX)
				k->gone[k->gone_cnt++] = s->pid;
		}
		break;
	case S_SCHED_OUT:
		t->next_state = state_of(s->a);
		break;
	case S_SWITCH_OUT:
		t->off_open = 1;
		t->off_start = s->time;
		t->off_cpu = s->cpu;
		t->off_state = s->flags ? KEV_STATE_PREEMPTED : t->next_state ? t->next_state : KEV_STATE_BLOCKED;
		if (t->off_state == KEV_STATE_PREEMPTED && !s->flags)
			t->off_state = KEV_STATE_BLOCKED;
		t->next_state = 0;
		break;
	case S_SWITCH_IN:
		if (t->off_open)
			emit(k, t, KEV_OFFCPU, t->off_state, t->off_start, s->time, t->waker, 0, t->off_cpu);
		t->off_open = 0;
		t->waker = 0;
		break;
	case S_WAKING: {
		/* s->tid woke s->a: kept for s->a's switch in, if it is off
		 * the CPU now (a wakeup of a running thread changes
		 * nothing). */
		struct kernel_thread *w = thread_of(k, (uint32_t)s->a);
		if (w && w->off_open && s->time >= w->off_start && !w->waker)
			w->waker = s->tid;
		break;
	}
	case S_FAULT:
		emit(k, t, KEV_FAULT, s->flags, s->time, s->time, s->a, s->b, s->cpu);
		break;
	case S_COMM:
		emit(k, t, KEV_COMM, s->flags, s->time, s->time, s->a, s->b, s->cpu);
		break;
	case S_PROBE:
		emit(k, t, KEV_PROBE, 0, s->time, s->time, s->a, 0, s->cpu);
		break;
	default:
		break;
	}
}

static int sample_cmp(const void *x, const void *y)
{
	const struct kernel_sample *a = x, *b = y;
	return a->time < b->time ? -1 : a->time > b->time;
}

static int event_cmp(const void *x, const void *y)
{
	const struct kernel_event *a = x, *b = y;
	return a->time < b->time ? -1 : a->time > b->time;
}

static void push_sample(struct kernel_rec *k, const struct kernel_sample *s)
{
	if (k->pending_cnt == k->pending_cap) {
		size_t cap = k->pending_cap ? 2 * k->pending_cap : 1024;
		struct kernel_sample *v = realloc(k->pending, cap * sizeof(*v));
		if (!v) {
			k->lost++;
			return;
		}
		k->pending = v;
		k->pending_cap = cap;
	}
	k->pending[k->pending_cnt++] = *s;
}

/* What the event of id is (ring->ev sorted by id: a process's threads
 * times the CPUs times the kinds may be thousands). */
static int ring_kind(const struct kernel_ring *ring, uint64_t id, uint16_t *major)
{
	size_t lo = 0, hi = ring->ev_cnt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ring->ev[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ring->ev_cnt || ring->ev[lo].id != id)
		return -1;
	*major = ring->ev[lo].major;
	return ring->ev[lo].kind;
}

/* One record of ring (its bytes copied out, size bytes). */
static void parse_record(struct kernel_rec *k, const struct kernel_ring *ring, const uint8_t *rec, size_t size)
{
	struct perf_event_header h;
	memcpy(&h, rec, sizeof(h));
	const uint8_t *p = rec + sizeof(h), *end = rec + size;
	struct kernel_sample s = { 0 };
	uint64_t v[8];

	if (h.type == PERF_RECORD_LOST) {
		/* id, lost, then sample_id: pid, tid; time; cpu; identifier.
		 * Which threads lost what is not said: every pairing open then
		 * is dropped (S_LOST), so that no entry is paired with an exit
		 * across the gap. */
		if (end - p >= 16 + 16) {
			memcpy(v, p, 32);
			k->lost += v[1];
			s.time = v[3];
			s.type = S_LOST;
			push_sample(k, &s);
		}
		return;
	}
	if (h.type == PERF_RECORD_SWITCH) {
		/* sample_id: pid, tid; time; cpu, res; identifier */
		if (end - p < 32)
			return;
		uint32_t pt[2];
		memcpy(pt, p, 8);
		memcpy(&s.time, p + 8, 8);
		memcpy(&s.cpu, p + 16, 4);
		s.pid = pt[0];
		s.tid = pt[1];
		int out = (h.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
		s.type = out ? S_SWITCH_OUT : S_SWITCH_IN;
		s.flags = out && (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
		push_sample(k, &s);
		return;
	}
	if (h.type == PERF_RECORD_COMM) {
		/* pid, tid, the name (NUL-terminated, padded to 8 bytes),
		 * then sample_id: pid, tid; time; cpu, res; identifier. */
		if (end - p < 8 + 8 + 32)
			return;
		uint32_t pt[2];
		memcpy(pt, p, 8);
		const uint8_t *id_at = end - 32;
		memcpy(&s.time, id_at + 8, 8);
		memcpy(&s.cpu, id_at + 16, 4);
		s.pid = pt[0];
		s.tid = pt[1];
		char name[16] = { 0 };
		size_t n = (size_t)(id_at - (p + 8));
		memcpy(name, p + 8, n < sizeof(name) - 1 ? n : sizeof(name) - 1);
		name[sizeof(name) - 1] = 0;
		memset(name + strlen(name), 0, sizeof(name) - strlen(name));
		memcpy(&s.a, name, 8);
		memcpy(&s.b, name + 8, 8);
		s.type = S_COMM;
		s.flags = (h.misc & PERF_RECORD_MISC_COMM_EXEC) ? KEV_COMM_EXEC : 0;
		push_sample(k, &s);
		return;
	}
	if (h.type != PERF_RECORD_SAMPLE || end - p < 8)
		return;
	/* IDENTIFIER, [IP], TID, TIME, [ADDR], CPU, [RAW] */
	uint64_t id;
	memcpy(&id, p, 8);
	p += 8;
	uint16_t major = 0;
	int kind = ring_kind(ring, id, &major);
	if (kind < 0)
		return;
	uint64_t ip = 0, addr = 0;
	if (kind == S_FAULT) {
		if (end - p < 8)
			return;
		memcpy(&ip, p, 8);
		p += 8;
	}
	if (end - p < 16)
		return;
	uint32_t pt[2];
	memcpy(pt, p, 8);
	memcpy(&s.time, p + 8, 8);
	p += 16;
	if (kind == S_FAULT) {
		if (end - p < 8)
			return;
		memcpy(&addr, p, 8);
		p += 8;
	}
	if (end - p < 8)
		return;
	memcpy(&s.cpu, p, 4);
	p += 8;
	s.pid = pt[0];
	s.tid = pt[1];
	s.type = (uint16_t)kind;
	if (kind == S_PROBE) {
		s.a = major; /* the probe's index */
		push_sample(k, &s);
		return;
	}
	if (kind == S_FAULT) {
		s.a = addr;
		s.b = ip;
		s.flags = major ? KEV_FAULT_MAJOR : 0;
	} else {
		uint32_t raw_size;
		if (end - p < 4)
			return;
		memcpy(&raw_size, p, 4);
		const uint8_t *raw = p + 4;
		if ((size_t)(end - raw) < raw_size)
			return;
		if (kind == S_WAKING) {
			/* The waker is the thread the sample is of; the woken
			 * one, the tracepoint's pid (a pid_t). */
			int32_t wakee;
			if ((size_t)k->off_wakee + 4 > raw_size)
				return;
			memcpy(&wakee, raw + k->off_wakee, 4);
			s.a = (uint64_t)(uint32_t)wakee;
			push_sample(k, &s);
			return;
		}
		uint16_t off = kind == S_ENTER ? k->off_nr : kind == S_EXIT ? k->off_ret : k->off_prev_state;
		int64_t val;
		if ((size_t)off + 8 > raw_size || (kind == S_EXIT && (size_t)k->off_exit_nr + 8 > raw_size))
			return;
		memcpy(&val, raw + off, 8);
		if (kind == S_EXIT) {
			int64_t nr;
			memcpy(&nr, raw + k->off_exit_nr, 8);
			s.a = (uint64_t)nr;
			s.b = (uint64_t)val;
		} else {
			s.a = (uint64_t)val;
		}
	}
	push_sample(k, &s);
}

static void ring_read(struct kernel_rec *k, struct kernel_ring *ring)
{
	struct perf_event_mmap_page *meta = ring->base;
	uint8_t *data = (uint8_t *)ring->base + sysconf(_SC_PAGESIZE);
	/* Acquire: pairs with the kernel's release of data_head, the
	 * records before the head that says they are there. */
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	uint8_t rec[65536];

	while (tail < head) {
		struct perf_event_header h;
		size_t off = tail % ring->size;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(off + i) % ring->size];
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		for (size_t i = 0; i < h.size; i++)
			rec[i] = data[(off + i) % ring->size];
		parse_record(k, ring, rec, h.size);
		tail += h.size;
	}
	/* Release: the copies above before the space is handed back. */
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

/* Write t's events that begin before limit, in order. */
/* Is thread t one of libneedle's own (needle-attach, needle-ctl), whose
 * events are not the program's?  Its name is read when its first event
 * is seen (-p: the session thread is named before the events are opened)
 * and again at its first flush, a drain later (a thread started since
 * names itself first thing); a thread gone by then is kept. */
static int agent_thread(struct kernel_thread *t)
{
	if (t->comm_reads < 2 && !t->agent) {
		char path[64], comm[32] = "";
		t->comm_reads++;
		snprintf(path, sizeof(path), "/proc/%u/comm", t->tid);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				t->agent = !strncmp(comm, "needle-", 7);
			fclose(f);
		}
	}
	return t->agent;
}

/* ev[0..n) of thread tid as KERNEL sections, numbered from *seq. */
static int write_sections(struct kernel_rec *k, struct trace_writer *w, uint32_t tid, uint64_t *seq,
			  const struct kernel_event *ev, size_t n, long *bytes)
{
	for (size_t done = 0; done < n;) {
		size_t cnt = n - done < SECTION_EVENTS ? n - done : SECTION_EVENTS;
		size_t len = sizeof(struct sec_kernel) + cnt * sizeof(struct kernel_event);
		uint8_t *buf = malloc(len);
		if (!buf)
			return -ENOMEM;
		uint64_t lost = k->lost - k->lost_written;
		struct sec_kernel hdr = { .version = SEC_KERNEL_VERSION, .tid = tid, .seq = (*seq)++,
					  .count = (uint32_t)cnt, .lost = lost > UINT32_MAX ? UINT32_MAX : (uint32_t)lost };
		memcpy(buf, &hdr, sizeof(hdr));
		memcpy(buf + sizeof(hdr), ev + done, cnt * sizeof(struct kernel_event));
		int err = trace_writer_section(w, SEC_KERNEL, buf, len);
		free(buf);
		if (err)
			return err;
		*bytes += (long)len;
		k->written += cnt;
		k->lost_written += hdr.lost;
		done += cnt;
	}
	return 0;
}

/* The file's last KERNEL section, of tid 0 and no event: the kernel's
 * events were recorded, even if none came (a process asleep throughout),
 * and the losses not said yet. */
static int write_marker(struct kernel_rec *k, struct trace_writer *w, long *bytes)
{
	uint64_t lost = k->lost - k->lost_written;
	struct sec_kernel hdr = { .version = SEC_KERNEL_VERSION, .tid = 0, .seq = 0, .count = 0,
				  .lost = lost > UINT32_MAX ? UINT32_MAX : (uint32_t)lost };
	int err = trace_writer_section(w, SEC_KERNEL, &hdr, sizeof(hdr));
	if (!err) {
		*bytes += (long)sizeof(hdr);
		k->lost_written += hdr.lost;
	}
	return err;
}

/* --snapshot: the thread's newest events, in a ring that grows to
 * k->keep_max (as many events as the snapshot's rings hold bytes, over
 * the size of one: a thread's kernel past reaches at least as far back
 * as its calls unless it makes more kernel events than calls). */
static void keep(struct kernel_rec *k, struct kernel_thread *t, const struct kernel_event *ev, size_t n)
{
	size_t max = k->keep_max ? k->keep_max : KEEP_EVENTS_MIN;
	for (size_t i = 0; i < n; i++) {
		if (t->kept_cnt == t->kept_cap && t->kept_cap < max) {
			/* Not wrapped yet: kept_first is 0, the order holds. */
			size_t cap = t->kept_cap ? 2 * t->kept_cap : 1024;
			struct kernel_event *v = realloc(t->kept, (cap < max ? cap : max) * sizeof(*v));
			if (!v)
				return;
			t->kept = v;
			t->kept_cap = cap < max ? cap : max;
		}
		if (!t->kept_cap)
			return;
		t->kept[(t->kept_first + t->kept_cnt) % t->kept_cap] = ev[i];
		if (t->kept_cnt < t->kept_cap)
			t->kept_cnt++;
		else
			t->kept_first = (t->kept_first + 1) % t->kept_cap;
	}
}

/* Write t's events that begin before limit, in order (w NULL: keep them
 * for the snapshots). */
static int flush_thread(struct kernel_rec *k, struct kernel_thread *t, uint64_t limit, struct trace_writer *w,
			long *bytes)
{
	if (!t->ev_cnt)
		return 0;
	if (agent_thread(t)) {
		t->ev_cnt = 0;
		return 0;
	}
	qsort(t->ev, t->ev_cnt, sizeof(*t->ev), event_cmp);
	size_t n = 0;
	while (n < t->ev_cnt && t->ev[n].time < limit)
		n++;
	if (w) {
		int err = write_sections(k, w, t->tid, &t->seq, t->ev, n, bytes);
		if (err)
			return err;
	} else {
		keep(k, t, t->ev, n);
	}
	memmove(t->ev, t->ev + n, (t->ev_cnt - n) * sizeof(*t->ev));
	t->ev_cnt -= n;
	return 0;
}

long kernel_write_kept(struct kernel_rec *k, struct trace_writer *w, const uint32_t *tids, const uint64_t *from,
		       size_t n)
{
	long bytes = 0;
	uint64_t oldest = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (from[i] < oldest)
			oldest = from[i];
	for (size_t i = 0; i < k->thread_cap; i++) {
		struct kernel_thread *t = &k->threads[i];
		if (!t->tid || !t->kept_cnt)
			continue;
		/* From the thread's oldest function event in the snapshot; a
		 * thread with none there, from the snapshot's oldest. */
		uint64_t since = oldest;
		for (size_t j = 0; j < n; j++)
			if (tids[j] == t->tid)
				since = from[j];
		struct kernel_event *v = malloc(t->kept_cnt * sizeof(*v));
		if (!v)
			return -ENOMEM;
		size_t cnt = 0;
		for (size_t e = 0; e < t->kept_cnt; e++) {
			const struct kernel_event *ev = &t->kept[(t->kept_first + e) % t->kept_cap];
			if (ev->time >= since)
				v[cnt++] = *ev;
		}
		uint64_t seq = 0;
		int err = write_sections(k, w, t->tid, &seq, v, cnt, &bytes);
		free(v);
		if (err)
			return err < 0 ? err : -err;
	}
	int err = write_marker(k, w, &bytes);
	return err ? (err < 0 ? err : -err) : bytes;
}

long kernel_drain(struct kernel_rec *k, struct trace_writer *w, int clock_tsc, int final)
{
	long bytes = 0;

	k->clock_tsc = clock_tsc;
	clock_pair(&k->raw_b, &k->ns_b);
	k->mono_offset = monotonic_ns() - monotonic_raw_ns();
	for (int i = 0; i < k->ring_cnt; i++)
		if (k->rings[i].fd >= 0)
			ring_read(k, &k->rings[i]);
	qsort(k->pending, k->pending_cnt, sizeof(*k->pending), sample_cmp);
	/* A snapshot (KERNEL_DRAIN_NOW) takes everything published so far:
	 * the call that fired its trigger ended just now. */
	uint64_t horizon = final == KERNEL_DRAIN_FINAL ? UINT64_MAX
			   : final == KERNEL_DRAIN_NOW ? k->ns_b
						       : k->ns_b - HORIZON_NS;
	size_t used = 0;
	while (used < k->pending_cnt && k->pending[used].time < horizon)
		pair(k, &k->pending[used++]);
	memmove(k->pending, k->pending + used, (k->pending_cnt - used) * sizeof(*k->pending));
	k->pending_cnt -= used;
	for (size_t i = 0; i < k->thread_cap; i++) {
		struct kernel_thread *t = &k->threads[i];
		if (!t->tid)
			continue;
		/* What began before an interval still open waits for it. */
		uint64_t limit = UINT64_MAX;
		if (final != KERNEL_DRAIN_FINAL && t->sys_open)
			limit = to_raw(k, t->sys_start);
		if (final != KERNEL_DRAIN_FINAL && t->off_open && to_raw(k, t->off_start) < limit)
			limit = to_raw(k, t->off_start);
		int err = flush_thread(k, t, limit, w, &bytes);
		if (err)
			return err < 0 ? err : -err;
	}
	if (final == KERNEL_DRAIN_FINAL && w) {
		int err = write_marker(k, w, &bytes);
		if (err)
			return err < 0 ? err : -err;
	}
	return bytes;
}

void kernel_pause(struct kernel_rec *k, int pause)
{
	/* On the events of the process's threads, and through them on
	 * those their children inherited. */
	for (int i = 0; i < k->ring_cnt; i++)
		for (size_t e = 0; e < k->rings[i].ev_cnt; e++)
			ioctl(k->rings[i].ev[e].fd, pause ? PERF_EVENT_IOC_DISABLE : PERF_EVENT_IOC_ENABLE, 0);
	k->paused = pause;
	/* What a thread had open across a pause cannot be closed: its end
	 * is not seen.  Its start is forgotten (at the pause, and again at
	 * the resume for one read since), never paired with a later end. */
	for (size_t i = 0; i < k->thread_cap; i++)
		k->threads[i].sys_open = k->threads[i].off_open = 0;
}

void kernel_stop(struct kernel_rec *k)
{
	kernel_pause(k, 1);
}

void kernel_close(struct kernel_rec *k)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < k->ring_cnt; i++) {
		struct kernel_ring *ring = &k->rings[i];
		for (size_t e = 0; e < ring->ev_cnt; e++)
			if (ring->ev[e].fd != ring->fd)
				close(ring->ev[e].fd);
		free(ring->ev);
		if (ring->fd >= 0) {
			munmap(ring->base, ring->size + page);
			close(ring->fd);
		}
	}
	free(k->rings);
	remove_probes(k);
	for (size_t i = 0; i < k->probe_cnt; i++) {
		free(k->probes[i].object);
		free(k->probes[i].shown);
		free(k->probes[i].name);
	}
	free(k->probes);
	k->probes = NULL;
	k->probe_cnt = 0;
	for (size_t i = 0; i < k->thread_cap; i++) {
		free(k->threads[i].ev);
		free(k->threads[i].kept);
	}
	free(k->threads);
	free(k->pending);
	k->rings = NULL;
	k->threads = NULL;
	k->pending = NULL;
	k->ring_cnt = 0;
	k->thread_cap = k->thread_cnt = 0;
	k->pending_cnt = k->pending_cap = 0;
}
