/* trace_format.h - the needle.data file format (docs/file-format.md).
 *
 *   file header (64 bytes)
 *   section*: { u32 type, u32 crc32(payload), u64 payload length, payload }
 *
 * All integers are little-endian.  Every payload is covered by its CRC, so
 * a corrupted file is reported as such, and the END section comes last,
 * so a file whose recording did not finish is known to be incomplete.
 *
 * Version 2 (written now) differs from version 1 (still read) only in the
 * chunk header: it adds the thread's open-call depth, its serial and its
 * name.  A reader takes the version from the file header and the chunk
 * header size from the version. */
#ifndef NEEDLE_TRACE_FORMAT_H
#define NEEDLE_TRACE_FORMAT_H

#include <stdint.h>

#define TRACE_MAGIC "NEEDLE\0\1"
#define TRACE_VERSION 4     /* written: 3 adds data blocks (TAG_DATA), 4 packed ones (TAG_DATA_PACKED) */
#define TRACE_VERSION_MIN 1 /* the oldest version read */
#define TRACE_MAX_SECTION (64u << 20) /* no section is larger; a bigger length means corruption */

struct trace_file_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;   /* 64 */
	uint64_t flags;         /* none defined */
	uint8_t reserved[40];
};

struct trace_section_header {
	uint32_t type;          /* enum trace_section */
	uint32_t crc32;         /* zlib crc32 of the payload */
	uint64_t length;        /* payload bytes */
};

enum trace_section {
	SEC_CLOCK = 1,   /* struct sec_clock */
	SEC_PROCESS = 2, /* struct sec_process + argv strings, NUL-separated */
	SEC_MODULE = 3,  /* u32 index + path (not NUL-terminated) */
	SEC_SITES = 4,   /* records: u32 site id, u32 module, u64 func ip, u16 name length, name */
	SEC_THREAD = 5,  /* u32 tid + name */
	SEC_CHUNK = 6,   /* struct sec_chunk + encoded events */
	SEC_END = 7,     /* struct sec_end */
	SEC_ATTACH = 8,  /* struct sec_attach: the trace was recorded by attaching (needle record -p) */
	SEC_OBJECTS = 9, /* text: what discovery made of each object's functions (see file-format.md) */
	SEC_SNAPSHOT = 10, /* struct sec_snapshot: the file is a snapshot of overwrite rings (--snapshot) */
	SEC_ARGS = 11,   /* text: the names of recorded values, from DWARF (see file-format.md) */
	SEC_VIEW_OPTS = 12, /* the views' default options (record's -t, -T, ...): NUL-terminated words */
	SEC_SITE_SIZES = 13, /* records: u32 site id, u32 function bytes, of sites of the SITES sections before */
	SEC_KERNEL = 14, /* struct sec_kernel + struct kernel_event records: one thread's, in time order */
	SEC_TASKS = 15,  /* struct task_record records: each thread's process and its parent */
	SEC_INFO = 16,   /* text: "KEY<tab>VALUE" lines, the machine and the program's use of it (file-format.md) */
	SEC_PROBES = 17, /* text: the USDT probes -E asked for, "INDEX<tab>PROVIDER:NAME<tab>OBJECT<tab>OFFSET" lines */
	SEC_MODULE_BIAS = 18, /* records of MODULE_BIAS_RECORD bytes: u32 module index, u64 load bias, u8 build id
			       * length, 3 zero, 32 bytes of build id, of modules of the MODULE sections before */
};

#define MODULE_BIAS_RECORD 48

/* A thread lifetime (tid, serial, as its chunks name it) and the process
 * it ran in: pid, and the process's parent (ppid), read by the thread at
 * its first chunk.  A process whose ppid is no pid of the trace is a root
 * of the task tree (the recorded program's, an attached one's). */
struct task_record {
	uint32_t tid;
	uint32_t serial;
	uint32_t pid;
	uint32_t ppid;
};

/* The kernel's side of a thread (needle record --kernel): what it did in
 * the kernel or off the CPU, read with perf_event_open. */
enum kernel_event_kind {
	KEV_SYSCALL = 1, /* a system call: a = number, b = return value (-errno) */
	KEV_OFFCPU = 2,  /* off the CPU for dur: flags = enum kev_state, a = the thread that woke it (0: not seen) */
	KEV_FAULT = 3,   /* a page fault taken in user code: a = address, b = ip, flags KEV_FAULT_MAJOR */
	KEV_COMM = 4,    /* the thread's name (comm) changed: a, b = the new name, NUL-padded; flags KEV_COMM_EXEC */
	KEV_PROBE = 5,   /* a USDT probe fired (-E PROVIDER:NAME): a = its index in the PROBES section */
	KEV_KINDS = 6,
};

/* How a thread left the CPU. */
enum kev_state {
	KEV_STATE_PREEMPTED = 1, /* runnable (R): preempted */
	KEV_STATE_SLEEPING = 2,  /* S: blocked, interruptible */
	KEV_STATE_DISK = 3,      /* D: blocked, uninterruptible */
	KEV_STATE_BLOCKED = 4,   /* blocked, S or D not known (no sched_switch tracepoint) */
};
#define KEV_FAULT_MAJOR 1
#define KEV_COMM_EXEC 1 /* KEV_COMM: the name an exec gave (the program's), not a rename */

#define SEC_KERNEL_VERSION 1
struct sec_kernel {
	uint32_t version; /* SEC_KERNEL_VERSION: a reader refuses another */
	uint32_t tid;
	uint64_t seq;     /* the thread's KERNEL sections, numbered from 0: read in this order */
	uint32_t count;   /* struct kernel_event records that follow */
	uint32_t lost;    /* records the kernel dropped (its rings full), of any thread, since the last section */
};

struct kernel_event {
	uint64_t time;  /* raw clock: the system call's entry, the switch out, the fault */
	uint64_t dur;   /* raw clock units: in the system call, off the CPU; 0 for a fault */
	uint64_t a, b;  /* by kind (enum kernel_event_kind) */
	uint16_t kind;  /* enum kernel_event_kind */
	uint16_t flags; /* KEV_OFFCPU: enum kev_state; KEV_FAULT: KEV_FAULT_MAJOR; KEV_COMM: KEV_COMM_EXEC */
	uint32_t cpu;   /* where it began */
};

/* How an attached recording ended. */
enum attach_end {
	ATTACH_END_DETACHED = 1, /* needle record detached; the process ran on */
	ATTACH_END_EXITED = 2,   /* the process exited */
	ATTACH_END_LOST = 3,     /* the agent's session ended on its own (exec, or killed) */
	/* The process ended and needle record learnt how: SEC_PROCESS's
	 * wait status says it (an exit status, or the signal that killed
	 * it).  ATTACH_END_EXITED is then a process whose end was seen but
	 * not how (a kernel that does not tell it to a process that is not
	 * the parent): its wait status is 0 and means nothing. */
	ATTACH_END_ENDED = 4,
};

/* Written instead of a wait status when needle record attached to a
 * running process: SEC_PROCESS then holds its pid and command line, and a
 * wait status of 0 (but with ATTACH_END_ENDED, see above); the clock's first sample (raw0, ns0) is taken when
 * needle record -p began, so the first event's time says how long
 * attaching took. */
struct sec_attach {
	uint64_t attach_realtime_ns; /* CLOCK_REALTIME when needle record -p began */
	uint64_t detach_realtime_ns; /* ... and when the recording ended */
	uint64_t max_hold_ns;        /* longest time a thread of the process was held stopped: the most of the three below */
	uint64_t detach_ns;          /* from asking the agent to detach to its answer (0: not asked) */
	uint32_t end;                /* enum attach_end */
	uint32_t borrowed_tid;       /* the thread that loaded libneedle */
	/* Since version 2 of the section (SEC_ATTACH_V1_SIZE before). */
	uint64_t borrowed_hold_ns;   /* the borrowed thread's hold */
	uint64_t stop_window_max_ns; /* longest stop of the agent's patch batches (threads in its stop handler) */
	uint64_t outside_hold_max_ns; /* longest hold from outside of a thread that blocks the stop signal */
	uint64_t stops;              /* the agent's patch batches that stopped or held a thread */
};
#define SEC_ATTACH_V1_SIZE 40

/* A snapshot of needle record --snapshot: the newest events of every
 * thread when it was taken.  A thread's calls entered before its oldest
 * kept event have exits without entries (read as such, TEV_ORPHAN). */
struct sec_snapshot {
	uint32_t reason;          /* enum trace_snapshot_reason */
	uint32_t number;          /* 1, 2, ... within the recording; 0 for the last one */
	uint32_t trigger_tid;     /* the thread whose call fired the trigger, or 0 */
	uint32_t trigger_site;    /* that function's site id (trigger reasons) */
	uint64_t asked_ns;        /* when it was asked for, ns since the recording began */
	uint64_t copied_ns;       /* when the copy began, likewise */
	uint64_t duration_ns;     /* the call that fired a duration trigger: its length */
	uint64_t chunks_dropped;  /* chunks written over while being copied (not in the file) */
	char trigger[64];         /* the trigger as given (NUL-padded), or "" */
};

enum trace_snapshot_reason {
	TRACE_SNAPSHOT_END = 1,      /* the program ended */
	TRACE_SNAPSHOT_CRASH = 2,    /* the program died of a signal */
	TRACE_SNAPSHOT_SIGNAL = 3,   /* SIGUSR2 to needle record */
	TRACE_SNAPSHOT_CTL = 4,      /* needle ctl PID snapshot */
	TRACE_SNAPSHOT_ENTERED = 5,  /* --trigger FUNC */
	TRACE_SNAPSHOT_DURATION = 6, /* --trigger FUNC>DURATION */
	TRACE_SNAPSHOT_DETACHED = 7, /* needle record -p ended its recording; the process runs on */
};

enum trace_clock_source { TRACE_CLOCK_TSC = 1, TRACE_CLOCK_MONOTONIC = 2 };
enum trace_tracer { TRACER_FUNCTION_GRAPH = 1, TRACER_FUNCTION = 2 };

/* raw clock -> ns: ns0 + (raw - raw0) * (ns1 - ns0) / (raw1 - raw0) */
struct sec_clock {
	uint32_t source;
	uint32_t pad;
	uint64_t raw0, ns0, raw1, ns1;
};

struct sec_process {
	uint32_t pid;
	int32_t wait_status;    /* as from waitpid(2) */
	uint32_t tracer;        /* enum trace_tracer */
	uint32_t wake_mode;     /* 0 wait, 1 poll, 2 buffer-percent */
	uint32_t wake_arg;      /* poll interval in ms, or percent */
	uint32_t argc;
	uint64_t buffer_bytes;
};

/* Events of one chunk: per event a varint tag, then a varint delta from the
 * previous event's time (the first from base).
 *   tag & 3 == 0: entry of site tag >> 2; with TAG_SITE_FLAT (bit 21 of the
 *                 site) set, an entry with no exit to come (function tracer)
 *   tag & 3 == 1: exit of the innermost open frame
 *   tag & 3 == 2: exit of site tag >> 2 (not the innermost open frame)
 *   tag & 3 == 3: the innermost open frame was unwound (longjmp, exception,
 *                 thread exit) without returning */
struct sec_chunk_v1 {
	uint32_t tid;
	uint32_t lost_before;   /* events the thread dropped just before this chunk */
	uint64_t seq;           /* the thread's chunk number */
	uint64_t base;          /* raw clock */
	uint32_t event_count;
	uint32_t salvaged;      /* 1: taken from a thread that never published it */
};

/* Version 2: the version 1 fields, then what a reader needs to keep each
 * thread's nesting right across losses and recycled thread ids. */
struct sec_chunk {
	uint32_t tid;
	uint32_t lost_before;
	uint64_t seq;
	uint64_t base;
	uint32_t event_count;
	uint32_t salvaged;      /* CHUNK_SALVAGED | CHUNK_ENTERED_BEFORE */
	/* Calls of the thread whose entry is recorded and whose exit was
	 * still to come when it took this chunk.  After lost events (and only
	 * then) writer and readers cut the thread's stack of open calls back
	 * to this depth: the calls above it returned while events were being
	 * dropped, and their exits are lost. */
	uint32_t open_depth;
	/* The thread is (tid, serial): two threads that had the same tid (a
	 * recycled id, a forked child) have different serials.  Chunks are
	 * numbered (seq) per (tid, serial). */
	uint32_t serial;
	char comm[16];          /* the thread's name when it took this chunk */
};

/* Bits of sec_chunk.salvaged.  CHUNK_SALVAGED: taken from a thread that
 * never published it.  CHUNK_ENTERED_BEFORE (a snapshot): the first
 * open_depth events enter the calls the thread had open where its window
 * begins, outermost first, at the chunk's base time (their own times are
 * not recorded). */
#define CHUNK_SALVAGED 1u
#define CHUNK_ENTERED_BEFORE 2u

_Static_assert(sizeof(struct sec_chunk_v1) == 32, "version 1 chunk header is 32 bytes");
_Static_assert(sizeof(struct sec_chunk) == 56, "version 2 chunk header is 56 bytes");
_Static_assert(sizeof(struct sec_kernel) == 24, "KERNEL section header is 24 bytes");
_Static_assert(sizeof(struct kernel_event) == 40, "a kernel event is 40 bytes");

#define TAG_ENTRY 0u
#define TAG_EXIT_TOP 1u
#define TAG_EXIT_SITE 2u
#define TAG_UNWIND_TOP 3u
/* In an entry's site: no exit will follow (the function tracer). */
#define TAG_SITE_FLAT (1u << 21)
/* An entry tag whose site is at least TAG_SWITCH_BASE is a context switch
 * (swapcontext): site - TAG_SWITCH_BASE is TAG_SWITCH_TO | id when the
 * thread enters context id, the bare id of the context it leaves. */
#define TAG_SWITCH_BASE (1u << 22)
#define TAG_SWITCH_TO (1u << 21)
#define TAG_CONTEXT_MASK (TAG_SWITCH_TO - 1)
/* An entry tag whose site is TAG_DATA (version 3) carries the values
 * captured at the event before it (needle record -A / -R): instead of a
 * delta, a varint byte count, then that many bytes of items: per value
 * a u64 item word (kind | index << 8 | format << 16 | bits << 24 |
 * value bytes << 32; kind 0 argN, 1 fpargN, 2 retval, 3 a float retval)
 * and the value's bytes, 8 for every kind so far. */
#define TAG_DATA (1u << 23)
/* Version 4: the same block packed, where that is smaller.  Instead of a
 * delta, a varint byte count of what follows it; then a varint word count
 * W; then W varints, word i as varint_zigzag(w[i] - r[i]) (varint.h: d << 1 ^
 * d >> 63, in 64-bit two's complement), where r is the chunk's data
 * block before this one, raw or packed, word by word: r[i] = 0 past its
 * first TRACE_DATA_REF_WORDS words or its end, and for the chunk's first
 * block.  The same function's values come back block after block with
 * the same item words, which then take a byte each. */
#define TAG_DATA_PACKED (TAG_DATA | 1u)
#define TRACE_DATA_REF_WORDS 64u
/* The file's own constants: the trace buffer's (EV_*, shm_layout.h) may
 * change with the agent, the file's may not.  The writer translates. */

struct sec_end {
	uint64_t events;
	uint64_t lost_events;
	uint64_t chunks;
	uint64_t producer_wakeups;
	uint64_t salvaged_chunks;
	uint64_t sites_traced;
	/* Threads that ran untraced (each counted once): the agent's pool of
	 * thread states was full, or the thread shared another's TLS (a raw
	 * clone without CLONE_SETTLS).  Not in files of needle before these
	 * fields: an END of 48 bytes reads them as 0. */
	uint64_t threads_refused;
	uint64_t threads_shared_tls;
	/* Functions whose calls were recorded entry-only (their returns
	 * lead into generated code).  An END of 64 bytes reads it as 0. */
	uint64_t funcs_entry_only;
	/* The trace file could not be written to the end (the disk filled,
	 * EFBIG): the errno, and of lost_events those drained but not
	 * written.  0 when it was whole.  An END of 72 bytes reads them as 0. */
	uint64_t write_errno;
	uint64_t events_unwritten;
};
#define SEC_END_V1_SIZE 48u
#define SEC_END_V2_SIZE 64u
#define SEC_END_V3_SIZE 72u

#endif
