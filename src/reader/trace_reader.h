/* trace_reader.h - reads needle.data for the views, streaming: metadata is
 * loaded, chunks are indexed by offset and decoded lazily, one event at a
 * time per thread, and events of all threads come out merged in time
 * order.
 *
 * Invariants:
 *  - a thread is (tid, serial); version 1 files have serial 0 everywhere;
 *  - per event the work is O(1) plus O(log threads) for the merge, except
 *    the frames an exit or a cut closes (each frame is closed once);
 *  - memory grows with the threads, the chunks (an index entry each) and
 *    the deepest stack, never with the number of events;
 *  - a file whose recording did not finish (no END section, a section cut
 *    short at the end) is read up to its last complete section: the file
 *    is marked incomplete and the views say so; damage anywhere else
 *    (a bad CRC, an impossible length) is an error. */
#ifndef NEEDLE_TRACE_READER_H
#define NEEDLE_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reader/arg_names.h"
#include "reader/call_tree.h"
#include "format/thread_stack.h"
#include "format/trace_format.h"

struct trace_site {
	uint32_t id;
	uint32_t module;
	uint64_t func_ip;
	const char *name;
	const char *sym;   /* the symbol as recorded (name may be demangled) */
	uint32_t func_size; /* the function's bytes (SITE_SIZES), 0 unknown */
	uint32_t flags;    /* TRACE_SITE_* */
};

/* The site is no function of the program but an event the reader shows
 * as a call: "linux:schedule", each time off the CPU of a trace recorded
 * with -E linux:schedule (trace.sched_site).  replay writes it as uftrace
 * does, a comment with its duration. */
#define TRACE_SITE_EVENT 1u

/* A module's load bias and build id (MODULE_BIAS); bias
 * TRACE_BIAS_UNKNOWN, id_len 0 when the file gives none. */
#define TRACE_BIAS_UNKNOWN UINT64_MAX
struct trace_module_id {
	uint64_t bias;
	uint8_t id_len;
	uint8_t id[32];
};

struct trace_chunk_ref {
	uint64_t offset;     /* of the section payload */
	uint64_t length;
	uint64_t seq;
	uint32_t lost_before;
	uint32_t event_count;
	uint64_t base;       /* raw clock of its first event's delta base */
};

/* A name the kernel gave a thread (KEV_COMM: --kernel=comm), kept by the
 * reader for trace_thread_name_at. */
struct trace_rename {
	uint64_t raw;   /* when (raw clock) */
	uint32_t exec;  /* KEV_COMM_EXEC: the name an exec gave */
	char name[16];
};

/* A KERNEL section of a thread (--kernel): its events are read when the
 * thread's cursor reaches them. */
struct trace_kernel_ref {
	uint64_t offset;     /* of the section payload */
	uint64_t length;
	uint64_t seq;
	uint32_t first;      /* its events from this one on (a tid's section split between two threads) */
	uint32_t count;
};

struct placeholder;
struct data_sym;
struct src_lines;

struct trace_thread {
	uint32_t tid;
	uint32_t serial;          /* 0 in version 1 files */
	char name[64];            /* the name in its latest chunk, else the THREAD section's */
	struct trace_chunk_ref *chunks;
	size_t chunk_cnt, chunk_cap;
	uint64_t events, lost;
	uint64_t name_seq;        /* seq of the chunk the name was taken from, + 1 */
	/* Its kernel events (needle record --kernel), by seq: those of its
	 * tid from the start of its first chunk to the start of the next
	 * thread of that tid (a program exec'ed, a recycled tid). */
	struct trace_kernel_ref *kernel;
	size_t kernel_cnt, kernel_cap;
	uint64_t kernel_events;
	/* Its process and that process's parent (a TASKS record); 0 when the
	 * file has none (older files, an unfinished recording). */
	uint32_t pid, ppid;
	/* The names the kernel gave it, in time order (--kernel=comm). */
	struct trace_rename *renames;
	size_t rename_cnt;
};

struct trace {
	FILE *f;
	char path[4096];
	struct trace_file_header header;
	int version;
	int tracer;
	struct sec_clock clock;
	int have_clock;
	int clock_guessed;        /* no CLOCK section (incomplete file): estimated */
	struct sec_process process;
	char **argv;
	int have_process;
	struct sec_attach attach;  /* recorded by attaching to a running process */
	int have_snapshot;
	struct sec_snapshot snapshot; /* a snapshot of overwrite rings (needle record --snapshot) */
	char *objects;             /* SEC_OBJECTS text, or NULL */
	char *info;                /* SEC_INFO text ("KEY\tVALUE" lines), or NULL */
	/* SEC_PROBES: each USDT probe's "provider:name", by its index
	 * (KEV_PROBE's a); NULL where the section named none. */
	char **probe_names;
	size_t probe_cnt;
	unsigned sched;           /* TRACE_SCHED_*: how intervals off the CPU are read (trace_set_sched) */
	uint32_t sched_site;      /* TRACE_SCHED_CALLS: the site of linux:schedule (TRACE_SITE_EVENT) */
	char *view_opts;           /* SEC_VIEW_OPTS: NUL-terminated words, or NULL */
	size_t view_opts_len;
	struct arg_names arg_names; /* SEC_ARGS: the recorded values' names */
	int have_attach;
	struct sec_end end;       /* without an END section: totals of the chunks read */
	int have_end;
	int incomplete;           /* the recording did not finish writing the file */
	uint64_t tail_bytes;      /* bytes at the end not read (a section cut short) */
	uint64_t size;            /* of the file */
	uint64_t lost_in_chunks;  /* losses the chunks attribute to a thread */
	uint64_t kernel_events[KEV_KINDS]; /* by kind (index 0: all) */
	uint64_t kernel_lost;     /* records the kernel dropped (sec_kernel.lost) */
	int kernel_recorded;      /* a KERNEL section, of events or the marker: --kernel was on */
	char **modules;
	size_t module_cnt;
	struct trace_module_id *module_ids; /* by module: its load bias and build id (MODULE_BIAS) */
	size_t module_ids_cnt;
	struct trace_site *sites; /* by id */
	size_t site_cap;
	char *names;              /* arena of site names */
	size_t names_len, names_cap;
	char **owned;             /* demangled names */
	size_t owned_cnt;
	struct placeholder **placeholders; /* "site#N" names, by site */
	size_t placeholder_cnt, placeholder_cap;
	struct trace_thread *threads;
	size_t thread_cnt, thread_cap;
	uint32_t *thread_slots;   /* hash of (tid, serial) -> index + 1 */
	size_t thread_slot_cap;
	uint64_t first_raw;       /* smallest chunk base */
	double ns_per_raw;
	uint64_t work;            /* inner-loop steps of the reader and views (NEEDLE_VIEW_WORK) */
	uint32_t *by_ip;          /* site ids sorted by func_ip (trace_site_at), built at first use */
	size_t by_ip_cnt;
	int by_ip_built;
	struct data_sym *data_syms; /* the objects' data symbols by address (data_syms.c), at first use */
	size_t data_sym_cnt, data_sym_cap;
	int data_syms_loaded;
	struct src_lines *src_lines; /* each site's source file and line (src_lines.c), at first use */
};

/* Module m's load bias, or TRACE_BIAS_UNKNOWN (an older file). */
static inline uint64_t trace_module_bias(const struct trace *t, size_t m)
{
	return m < t->module_ids_cnt ? t->module_ids[m].bias : TRACE_BIAS_UNKNOWN;
}

/* Module m's build id (*len bytes), or NULL when the file does not say. */
static inline const uint8_t *trace_module_build_id(const struct trace *t, size_t m, size_t *len)
{
	if (m >= t->module_ids_cnt || !t->module_ids[m].id_len)
		return NULL;
	*len = t->module_ids[m].id_len;
	return t->module_ids[m].id;
}

/* The process thread (an index) ran in: its TASKS record's, else the
 * recorded process's (an older file, an unfinished recording). */
static inline uint32_t trace_thread_pid(const struct trace *t, size_t thread)
{
	return thread < t->thread_cnt && t->threads[thread].pid ? t->threads[thread].pid : t->process.pid;
}

/* Open and index a trace.  On failure returns NULL and puts in err a
 * message that says what is wrong with the file. */
struct trace *trace_open(const char *path, char *err, size_t errlen);
void trace_close(struct trace *t);
/* Check the CRC of every chunk (open checks the other sections).  0, or
 * -1 with err saying which chunk is damaged. */
int trace_verify(struct trace *t, char *err, size_t errlen);

/* The function's name; "site#N" for a site the file has no name for (its
 * metadata was never written). */
const char *trace_site_name(struct trace *t, uint32_t site);
/* How the iterators read the intervals off the CPU (--kernel=switch, -E
 * linux:schedule), as uftrace's schedule events:
 *   TRACE_SCHED_CALLS       each one inside a call is a call of
 *                           t->sched_site, "linux:schedule", entered when
 *                           the thread left the CPU and exited when it came
 *                           back (outside any call it is left out)
 *   TRACE_SCHED_FULL        ... and those outside any call too
 *   TRACE_SCHED_NO_PREEMPT  none where the thread was preempted (it was
 *                           runnable), only where it blocked
 *   TRACE_SCHED_NONE        none at all
 * Without CALLS an interval is a TEV_KERNEL event.  A trace recorded
 * with -E linux:schedule opens with CALLS; views change it before they
 * iterate (0, or -ENOMEM). */
#define TRACE_SCHED_CALLS 1u
#define TRACE_SCHED_FULL 2u
#define TRACE_SCHED_NO_PREEMPT 4u
#define TRACE_SCHED_NONE 8u
int trace_set_sched(struct trace *t, unsigned mode);
/* The INFO section's value of key (needle record's "KEY\tVALUE" lines,
 * file-format.md), not NUL-terminated: its length in *len; NULL if the
 * trace has none.  after: a value this returned, to find the key's next
 * line (keys such as "event" repeat). */
const char *trace_info_value(const struct trace *t, const char *key, const char *after, size_t *len);
/* How C++ names are shown: simple (the default at open: "ns::Cls::get"),
 * full ("ns::Cls::get(int) const"), or no (the symbol, "_ZNK2ns3Cls3getEi"),
 * as uftrace's --demangle. */
enum trace_demangle { TRACE_DEMANGLE_SIMPLE, TRACE_DEMANGLE_FULL, TRACE_DEMANGLE_NO };
void trace_set_demangle(struct trace *t, enum trace_demangle mode);
/* The site whose function starts at ip (a function pointer's value), or
 * NULL.  The first call sorts the sites (memory: one word per site). */
const struct trace_site *trace_site_at(struct trace *t, uint64_t ip);
/* The data symbol (a global, a static variable) at addr in the recorded
 * process, by the objects' files (data_syms.c), or NULL. */
const char *trace_data_at(struct trace *t, uint64_t addr);
void trace_data_free(struct trace *t);
/* Where site's function is defined in its source (DWARF's declaration
 * file and line, from the object's file or its separate debug file, as
 * the trace placed it): 1 with *file and *line set, 0 when not known (no
 * line information, the file gone or rebuilt).  The first call reads
 * the objects; each site is looked up once.  *file lives as long as t. */
int trace_site_srcline(struct trace *t, uint32_t site, const char **file, unsigned *line);
void trace_src_lines_free(struct trace *t);
/* The names of the values site's function records (SEC_ARGS), or NULL. */
const struct arg_names_func *trace_site_arg_names(struct trace *t, uint32_t site);
/* Nanoseconds since the first event of the trace. */
uint64_t trace_ns(const struct trace *t, uint64_t raw);
/* The thread's name at ns (trace_ns's time) in a trace with names
 * recorded (--kernel=comm), else the name it ends with (th->name).
 * Before the first name the kernel gave it, the name it began with: a
 * thread is named as the thread that created it, most often its
 * process's first thread, whose name then is taken; a process's first
 * thread, as its parent process's; the recorded program's first
 * thread, by its file (the kernel's name after an exec).  A thread with
 * no rename kept its name: th->name.  Memory: the renames only. */
const char *trace_thread_name_at(const struct trace *t, const struct trace_thread *th, uint64_t ns);
/* CLOCK_MONOTONIC nanoseconds of the trace's first event (the CLOCK
 * section's line through its samples), for views that print absolute
 * times as uftrace does; 1 s when the trace has no usable clock. */
uint64_t trace_monotonic_base(const struct trace *t);
/* The first thread with this tid, or NULL. */
struct trace_thread *trace_thread_find(struct trace *t, uint32_t tid);

enum trace_event_kind {
	TEV_ENTRY = 1,
	TEV_EXIT = 2,
	TEV_LOST = 3,     /* events were dropped here (count in .lost) */
	TEV_SWITCH = 4,   /* the thread switched to coroutine context .site */
	TEV_KERNEL = 5,   /* the kernel's side of the thread (.kev): a system call, off the CPU, a fault */
};

/* Flags of an exit. */
#define TEV_UNMATCHED 0x1 /* its own exit was lost or unwound: closed by an outer exit */
#define TEV_OPEN 0x2      /* never returned before the trace ended */
#define TEV_ORPHAN 0x4    /* an exit whose entry is not in the trace */
#define TEV_UNWOUND 0x8   /* ended by longjmp, an exception or thread exit */
#define TEV_FLAT 0x10     /* an entry with no exit (recorded by the function tracer) */
/* Returned while events were being dropped: closed where the loss begins
 * (.ns is the thread's last event before it, so .ns - .entry_ns is only
 * a lower bound of the duration). */
#define TEV_EXIT_LOST 0x20
/* An entry a forked child's thread begins inside: its process's parent
 * had the call open when it forked (file-format.md), and the child's
 * recording enters it again at its first event.  Views show no line for
 * it; its exit, which carries the flag too, closes it as any other, with
 * no duration in replay (the call began in the parent). */
#define TEV_INHERITED 0x40
/* A call open where a snapshot's window of the thread begins (the chunk
 * says which, file-format.md): its entry carries TEV_INHERITED too (no
 * line, not a call of the window), and its exit this flag, with an
 * entry_ns that is only the window's start. */
#define TEV_BEFORE 0x80
/* Exits whose duration is not known. */
#define TEV_UNTIMED (TEV_OPEN | TEV_ORPHAN | TEV_EXIT_LOST | TEV_BEFORE)

struct trace_event {
	uint64_t ns;
	uint64_t entry_ns;  /* exits: when the call began */
	uint64_t child_ns;  /* exits: time spent in traced children */
	/* Exits (--kernel): time the call spent in system calls and off the
	 * CPU, its children's included. */
	uint64_t syscall_ns, offcpu_ns;
	uint64_t lost;
	uint32_t tid;
	uint32_t thread;    /* index in trace.threads */
	uint32_t site;
	uint32_t depth;     /* nesting depth of the call, 0 = outermost */
	uint32_t node;      /* call tree node of the call (iterations with a tree) */
	uint32_t mark;      /* entries and exits: the view's mark of the call (trace_iter_init_mark) */
	uint8_t kind;
	uint8_t flags;
	uint16_t data_len;        /* bytes at data: values captured (-A / -R), 0 if none */
	const uint8_t *data;      /* valid until a few more events of the thread are read */
	/* TEV_KERNEL: the event as recorded; .ns is its start, and
	 * kev_ns its length in nanoseconds.  .site and .mark are those of
	 * the thread's innermost call open (UINT32_MAX and 0 outside any).
	 * A USDT probe's (KEV_PROBE): data is its name, "provider:name"
	 * (data_len bytes, no NUL), or NULL when the trace names none. */
	struct kernel_event kev;
	uint64_t kev_ns;
};

#define TRACE_DATA_RING 8
#define TRACE_DATA_MAX 1024

struct trace_cursor;

/* A view's mark for a call, from its entry (trace_iter_init_mark). */
typedef uint32_t (*trace_mark_fn)(const struct trace_event *entry, void *arg);

struct trace_iter {
	struct trace *t;
	struct call_tree *tree;
	trace_mark_fn mark;
	void *mark_arg;
	struct trace_cursor *cursors;
	size_t cursor_cnt;
	size_t *heap;
	size_t heap_cnt;
	struct trace_cursor *last; /* cursor of the last event returned */
	char err[256];
};

/* Iterate over all threads (tid 0) or those with one tid.  0 or -1 with
 * it->err set. */
int trace_iter_init(struct trace_iter *it, struct trace *t, uint32_t tid);
/* The same, and give every call its node in tree (trace_event.node). */
int trace_iter_init_tree(struct trace_iter *it, struct trace *t, uint32_t tid, struct call_tree *tree);
/* The same (tree may be NULL), and give every call the mark fn returns
 * for its entry: fn sees each entry as it is decoded, its data valid,
 * possibly a few events before the view does, and the mark comes back in
 * trace_event.mark with the entry and with the call's exit, whichever
 * way the call ends (returned, unwound, exit lost, still open).  What a
 * view keeps per call of a thread (a group, the arguments until the
 * return value is known) follows coroutine switches and losses this way
 * without a stack of its own.  Exits whose entry is not in the trace and
 * entries of the function tracer (no exit) are marked too: 0 for the
 * former, fn's value for the latter. */
int trace_iter_init_mark(struct trace_iter *it, struct trace *t, uint32_t tid, struct call_tree *tree,
			 trace_mark_fn fn, void *arg);
/* One thread alone, trace.threads[index]: its events in its own order,
 * at a cost that does not grow with the other threads (a view that
 * goes thread by thread). */
int trace_iter_init_thread(struct trace_iter *it, struct trace *t, uint32_t index);
/* 1: an event, 0: the end, -1: the file is damaged (it->err says how). */
int trace_iter_next(struct trace_iter *it, struct trace_event *ev);
/* The next event of the same thread as the last one returned, without
 * consuming it: 1, 0 (none) or -1. */
int trace_iter_peek_same_thread(struct trace_iter *it, struct trace_event *ev);
/* Is the event trace_iter_next gives next the same thread's as the one it
 * gave last (no other thread's event comes between them in time)? */
int trace_iter_next_is_same_thread(const struct trace_iter *it);
void trace_iter_free(struct trace_iter *it);

#endif
