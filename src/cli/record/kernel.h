/* kernel.h - the kernel's side of each traced thread (needle record
 * --kernel=switch,syscall,fault,comm), read with perf_event_open (kernel.c). */
#ifndef NEEDLE_RECORD_KERNEL_H
#define NEEDLE_RECORD_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/trace_format.h"

/* --snapshot: events kept per thread at least (kernel_rec.keep_max). */
#define KEEP_EVENTS_MIN 32768

/* What --kernel asks for (a bit per KEV_* kind). */
#define KERNEL_SWITCH (1u << KEV_OFFCPU)
#define KERNEL_SYSCALL (1u << KEV_SYSCALL)
#define KERNEL_FAULT (1u << KEV_FAULT)
#define KERNEL_COMM (1u << KEV_COMM)
#define KERNEL_PROBE (1u << KEV_PROBE) /* -E PROVIDER:NAME: USDT probes, as uprobes (kernel_add_probe) */

struct kernel_ring;
struct kernel_thread;

struct kernel_rec {
	unsigned asked, got;       /* KERNEL_* asked for, and opened */
	int paused;                /* needle ctl PID kernel off */
	size_t keep_max;           /* --snapshot: events kept per thread at most (kernel.c's keep) */
	int no_follow_exec;        /* --no-follow-exec: a thread's events end at its exec */
	uint32_t root_pid;         /* the program started (its first exec is needle's) */
	int root_exec_seen;
	/* Processes that exec'ed a program not recorded (--no-follow-exec):
	 * their events are left out from then on. */
#define KERNEL_GONE_MAX 256
	uint32_t gone[KERNEL_GONE_MAX];
	size_t gone_cnt;
	int clock_tsc;             /* the trace's raw clock is the TSC (else CLOCK_MONOTONIC ns) */
	/* CLOCK_MONOTONIC_RAW -> TSC: two samples of both, taken when the
	 * events were opened and at the latest drain. */
	struct kernel_ring *rings; /* one per CPU (fd -1: none opened there) */
	int ring_cnt;
	/* The tracepoints' payload: the offsets of their fields. */
	uint32_t enter_id, exit_id, switch_id, waking_id;
	int have_sys, have_sched, have_waking; /* their tracepoints can be read */
	uint16_t off_nr, off_ret, off_exit_nr, off_prev_state, off_wakee;
	uint64_t raw_a, ns_a, raw_b, ns_b; /* ns: CLOCK_MONOTONIC_RAW */
	uint64_t mono_offset;      /* CLOCK_MONOTONIC - CLOCK_MONOTONIC_RAW, for a trace timed by the former */
	/* The threads seen, by tid (open addressing). */
	struct kernel_thread *threads;
	size_t thread_cap, thread_cnt;
	/* Records read but not yet in order (kernel.c). */
	struct kernel_sample *pending;
	size_t pending_cnt, pending_cap;
	uint64_t written, lost;    /* events in the file; records the kernel dropped (PERF_RECORD_LOST) */
	uint64_t lost_written;     /* ... of which the file says (sec_kernel.lost) */
	uint64_t counts[KEV_KINDS];
	char left_out[256];        /* what could not be opened and why, one line */
	/* -E PROVIDER:NAME: the USDT probes to open, by index (KEV_PROBE's a). */
	struct kernel_probe {
		char *object, *name; /* the file (as the kernel is to open it), "provider:name" */
		char *shown;         /* the file as the trace names it (a -p target's mapping: its path) */
		uint64_t off, sema_off; /* in the file (sema_off 0: no semaphore) */
		uint32_t id;    /* its tracepoint's id once made in tracefs, 0: none */
		int made;       /* defined in tracefs: to be removed */
	} *probes;
	size_t probe_cnt;
	char uprobe_events[64]; /* tracefs's uprobe_events, where ours were made ("": none) */
	char probe_group[48];   /* their group there, needle_PID_START */
	/* The write end of the pipe whose closing (this process's end, a
	 * SIGKILL's too) tells the janitor to take the group out of tracefs
	 * (open_probes); have_janitor: it was started. */
	int janitor_fd;
	int have_janitor;
	pid_t janitor_pid; /* a child of needle record's that is not the program's */
};
#define KERNEL_PROBES_MAX 65535 /* an index fits ring_event.major */
/* Add a USDT probe for kernel_open (before it): 0, or -1 (out of memory,
 * too many). */
int kernel_add_probe(struct kernel_rec *k, const char *object, const char *shown, const char *name, uint64_t off,
		     uint64_t sema_off);

/* Parse --kernel's LIST ("switch,syscall,fault,comm", repeatable: bits add up).
 * 0, or -1 with why filled in. */
int kernel_parse(const char *list, unsigned *bits, char *why, size_t whylen);

/* Open what k->asked for pid (a process not started yet: its exec, its
 * threads and children are followed).  Never fails the recording: what
 * the kernel or the user's privileges refuse is left out and named in
 * k->left_out.  0, or -1 when nothing at all could be opened. */
int kernel_open(struct kernel_rec *k, pid_t pid);
/* The same for a running process: each of its threads, and what they
 * start from now on. */
int kernel_open_process(struct kernel_rec *k, pid_t pid);
/* Stop recording (needle record -p detaches): what was recorded stays to
 * be drained. */
void kernel_stop(struct kernel_rec *k);
/* needle ctl PID kernel off (1) / on (0). */
void kernel_pause(struct kernel_rec *k, int pause);

struct trace_writer;
/* Read what the kernel has written so far and write every thread's
 * events that are complete and in order as KERNEL sections, or keep the
 * newest of each thread for the snapshots when w is NULL (final: all of
 * them, intervals still open left out; KERNEL_DRAIN_NOW: every record
 * published so far, not only those a little older).  clock_tsc: the trace's raw
 * clock is the TSC (else CLOCK_MONOTONIC).  Returns the sections' bytes
 * written, or negative errno of the writer. */
enum { KERNEL_DRAIN = 0, KERNEL_DRAIN_FINAL = 1, KERNEL_DRAIN_NOW = 2 };
long kernel_drain(struct kernel_rec *k, struct trace_writer *w, int clock_tsc, int final);

/* --snapshot: the events kept, into a snapshot's file: each thread's from
 * from[i] on, tids[i] a thread with function events in the snapshot (a
 * thread with none: from the oldest of from).  Bytes written, or negative
 * errno of the writer. */
long kernel_write_kept(struct kernel_rec *k, struct trace_writer *w, const uint32_t *tids, const uint64_t *from,
		       size_t n);

void kernel_close(struct kernel_rec *k);

#endif
