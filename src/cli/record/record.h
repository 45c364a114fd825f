/* record.h - what the parts of `needle record` share.
 *
 *   cmd_record.c   the command: a program's life, start to end
 *   options.c      the command line, into struct record_opts
 *   session.c      one recording's trace file, for all three below:
 *                  set-up, first sections, closing sections
 *   spawn.c        starting the program; finding the processes it left
 *   attach.c       -p PID: recording a process that is already running
 *   release.c      letting go of the children forked during a recording
 *   agent_session.c  the socket of a session with an agent (attach.c,
 *                  release.c)
 *   snapshot.c     --snapshot: the flight recorder's snapshots
 *   hold.c         threads held with ptrace for the agent's patch batches
 *   drain.c        the shared buffer: creating it, draining, salvaging
 *   meta.c         the agent's meta file and the metadata sections
 *   output.c       the trace file: refusing bad output, locking,
 *                  keeping what reached the disk when it fills
 *
 * This folder may include cli/args, cli/inject, cli/util, format and
 * common.  Calls run one way: cmd_record.c -> attach.c, snapshot.c ->
 * release.c -> agent_session.c, session.c -> output.c, meta.c, drain.c;
 * nothing calls back up into cmd_record.c.
 */
#ifndef NEEDLE_RECORD_H
#define NEEDLE_RECORD_H

#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "cli/args/args.h"
#include "cli/record/kernel.h"
#include "common/record_config.h"
#include "common/shm_layout.h"
#include "format/trace_writer.h"
#include "cli/util/remote.h"

struct record_opts {
	/* What the agent gets (common/record_config.h), filled here as the
	 * options are read: graph, depth, ctl, sites, libcall, max_string,
	 * trigger_gap_ns, trigger_after_ns, filter (-P), notrace (-U),
	 * subtree (-F), drop (-N), triggers; args and arg_filters from
	 * values once resolved; buf_fd, meta_fd and orig_ld_preload by the
	 * start-up (spawn.c). */
	struct record_config agent;
	/* needle record's own */
	const char *output;
	const char *with_syms;   /* --with-syms PATH (agent.syms holds its names) */
	const char *host, *port; /* --host, --port: the trace goes to needle recv there */
	char *probe_globs;       /* -E PROVIDER:NAME: USDT probes, newline-separated globs */
	int match_regex; /* --match: 0 by the pattern's look, 1 regex, 2 glob */
	int wake_mode;
	int wake_arg;   /* poll ms or percent */
	uint64_t buffer_bytes;
	uint32_t chunk_bytes;
	int force;      /* --force: overwrite a file that is not a needle trace */
	int bind_now;   /* --no-pltbind: the program runs with LD_BIND_NOW=1 */
	int srcline;    /* --srcline: nothing to record (the views read DWARF); live shows the lines */
	unsigned kernel; /* --kernel: KERNEL_* (kernel.h) */
	unsigned kernel_events; /* -E: RECORD_EVENT_* (uftrace's events, from the kernel's) */
	pid_t attach_pid;      /* -p: record this running process */
	uint64_t duration_ns;  /* --duration: stop after this long (0: no limit) */
	int snapshot;          /* --snapshot: overwrite rings, snapshots (snapshot.c) */
	int print_time;        /* --time: the program's times when it ends (uftrace's) */
	char *trigger_text;    /* the first --trigger as given, for the file */
	unsigned max_snapshots;     /* --max-snapshots (0: no limit) */
	struct arg_plan values;     /* -A, -R, --auto-args, -F value filters (cli/args) */
	/* What the views apply by default (SEC_VIEW_OPTS, uftrace's
	 * default.opts): -t TIME, -T, -H, --disable, -F GLOB@depth=N, as
	 * NUL-terminated words. */
	char *view_opts;
	size_t view_opts_len;
	/* --otlp-endpoint URL, --otlp-spans GLOB (newline list), and -t's
	 * duration: the spans sent while recording. */
	const char *otlp_endpoint;
	char *otlp_spans;
	uint64_t time_filter_ns;
};

/* The file's tracer (TRACER_* of shm_layout.h) for what the agent runs. */
static inline uint32_t record_tracer(const struct record_opts *o)
{
	return o->agent.graph ? TRACER_FUNCTION_GRAPH : TRACER_FUNCTION;
}

struct seen_thread {
	uint32_t tid;
	char name[17];
};

/* A point of the trace file where a section ends, and what the file holds
 * up to there. */
struct out_mark {
	uint64_t end;
	uint64_t events, chunks, salvaged;
};

#define OUT_MARKS 64

struct record_out {
	const char *path;
	int fd;
	FILE *f;
	int regular;    /* a regular file: it can be truncated */
	int created;    /* the file did not exist before: removed if unused */
	int begun;      /* the header is written: the old contents are gone */
	int err;        /* first write error (positive errno): no chunk written after */
	int have_base;
	int remote;     /* a connection to needle recv (--host): path is "NAME at HOST:PORT" */
	char where[REMOTE_NAME_MAX + 300];
	struct out_mark base;            /* after the header and the symbols */
	struct out_mark marks[OUT_MARKS]; /* the last chunks written, a ring */
	unsigned mark_next, mark_cnt;
	uint64_t committed; /* the writer's bytes at the newest mark */
	char *buf;          /* stdio's buffer (out_buffer), or NULL */
};

/* A program image's numbering as the trace's (meta.c): the exec'ed
 * programs of a recording each count their site ids and module indexes
 * from 0, the trace has one numbering.  site[L] is local site L's id in
 * the trace plus one (0: not named yet), mod[L] likewise. */
struct image_map {
	uint32_t *site, *mod;
	uint32_t site_cap, mod_cap;
	/* Every site named so far kept its own id: its chunks are written
	 * as they are (the first image's, as long as no other came between). */
	int identity;
};

/* -E EVENT: uftrace's events needle takes from the kernel's side. */
#define RECORD_EVENT_SCHEDULE 1u /* linux:schedule: each time off the CPU, read as a call */

struct recording {
	struct record_opts *o;
	struct shm_header *shm;
	int buf_fd, meta_fd;
	long meta_off;             /* meta file read up to here (whole lines) */
	struct image_map *images;  /* by image number (meta_protocol.h's I records) */
	size_t image_cnt;
	uint32_t meta_image;       /* the image whose records are being read */
	uint32_t next_site, next_module; /* the trace's first ids no image has */
	char *notes;               /* exec'ed programs not traced: one line each, said at the end */
	size_t notes_len;
	char *objects;             /* its object lines so far (SEC_OBJECTS) */
	size_t objects_len;
	pid_t pid;
	struct trace_writer w;
	struct record_out out;
	struct seen_thread *threads;
	size_t thread_cnt, thread_cap;
	/* Each thread lifetime's process and parent (SEC_TASKS), noted once
	 * per (tid, serial): task_slots hashes them to tasks[] index + 1. */
	struct task_record *tasks;
	size_t task_cnt, task_cap;
	uint32_t *task_slots;
	size_t task_slot_cap;
	uint64_t raw0, ns0;     /* clock samples when the program started */
	uint64_t raw1, ns1;     /* ... and when the recording ended */
	uint64_t drained;       /* events taken from the buffer, written or not */
	uint64_t sites_traced;  /* from the agent's meta file */
	int status;             /* the program's wait status */
	struct rusage usage;    /* the program's resource use, when have_usage (wait4) */
	int have_usage;
	uint64_t exit_ns;       /* CLOCK_MONOTONIC when the program was reaped */
	char *exe;              /* the program's file (the trace's module 0), or NULL */
	char **argv;            /* the program's command line */
	int attached;           /* -p: attach describes how */
	struct sec_attach attach;
	const struct sec_snapshot *snapshot; /* written with the closing sections, if set */
	struct kernel_rec kernel;  /* --kernel (kernel.c) */
	uint64_t snapshot_lost;    /* a snapshot's lost events: those its chunks say were dropped */
	/* --otlp-endpoint: the follower of what is drained (see below). */
	const struct record_stream_ops *stream;
	void *stream_arg;
};

/* A follower of the recording: needle record --otlp-endpoint's span
 * stream (otlp_stream.c, in the layer above, sets record_stream_open
 * before cmd_record runs).  Called on needle record's draining thread,
 * never the program's: each function's name as the meta file gives it
 * (site ids the trace's), each chunk's events as they are drained (site
 * ids translated), and finish at the end, which sends what is left
 * within its own deadline and says in line what became of the spans. */
struct record_stream_ops {
	void (*site)(void *arg, uint32_t id, const char *name);
	void (*chunk)(void *arg, const struct sec_chunk *hdr, const uint64_t *events, uint32_t n);
	void (*finish)(void *arg, char *line, size_t len);
};
/* Starts the follower of r (its options in r->o), or returns NULL after
 * saying why. */
extern void *(*record_stream_open)(struct recording *r, const struct record_stream_ops **ops);

/* Bumped by the SIGCHLD handler: a wait that began after the program
 * ended, or after a descendant did, must not sleep. */
extern volatile sig_atomic_t record_sigchld;
/* Set by SIGINT/SIGTERM once the program itself has exited. */
extern volatile sig_atomic_t record_stop;

/* cmd_record.c */
int cmd_record(int argc, char **argv);

/* options.c: the index of the program's argv in argv (-p: optind), or -1
 * after saying why. */
int record_parse_opts(int argc, char **argv, struct record_opts *o);

/* session.c: what starting a program and attaching share */
/* Before the program starts or the process is touched: the values' plan
 * against the DWARF of exe (and of its libraries: pid's mapped ones, or
 * those exe loads when pid is 0), its C++ patterns, the trace file, the
 * buffer and the meta file.  0, or -1 after saying why (the trace file
 * let go as it was). */
int record_prepare(struct recording *r, const char *exe, pid_t pid);
/* The agent records: replace the file, write the symbols and a clock. */
void record_begin(struct recording *r);
/* Drain and salvage what is left, write the closing sections and say what
 * was recorded.  0, or 1 if the file could not be written in full. */
int record_finish(struct recording *r);
/* --kernel: the kernel's events read so far into the file (final: all). */
void record_kernel_drain(struct recording *r, int final);
/* --kernel with --snapshot: the kernel's events read so far, each
 * thread's newest kept for the snapshots (now: all published so far, for
 * the snapshot being written). */
void record_kernel_keep(struct recording *r, int now);
/* Write the header, the symbols and a first clock, quietly (a snapshot). */
void record_begin_file(struct recording *r);
/* The closing sections (record_out_finish's tail). */
int record_write_tail(struct recording *r, const struct out_mark *m, int minimal);

/* meta.c: a chunk of image img's events in the trace's site ids, in
 * place (nothing to do for an image whose ids are the trace's).  Data
 * blocks and context switches are left as they are. */
void record_translate_events(struct recording *r, uint32_t img, uint64_t *ev, uint32_t n);
/* One site id of image img in the trace's. */
uint32_t record_translate_site(struct recording *r, uint32_t img, uint32_t site);
/* The image maps let go (a snapshot's copy of the recording). */
void record_images_free(struct recording *r);

/* attach.c */
/* needle record -p: exit status of needle record. */
int record_attach(struct recording *r, const char *agent);

/* agent_session.c */
/* Is process pid in needle record's network namespace, where the abstract
 * socket of a session can be reached (1 also when it cannot be told)? */
int record_same_netns(pid_t pid);
/* Listen under a fresh abstract name (written to name): the socket, or -1. */
int agent_session_listen(char *name, size_t len);
/* The connection of process pid on lfd, within timeout_ms, or -1. */
int agent_session_accept(int lfd, pid_t pid, int timeout_ms);
/* All of p[0..n) sent: 0, or -1. */
int agent_session_send(int fd, const uint8_t *p, size_t n);
/* What the agent sent, read without waiting (its messages printed): 1
 * once it said ATTACH_DETACHED, -1 when the session ended (end of file,
 * an error, or a line of libneedle-boot.so, left unread), else 0. */
int agent_session_read(int sock);

/* release.c */
struct record_hold;
/* The recording has ended in its own process (except): every other
 * process that still maps its buffer, a child forked while it ran, is
 * asked to end its copy too, and runs on untraced; the buffer is drained
 * meanwhile.  Holds for their threads are served by hold (retargeted),
 * which must no longer serve except.  What could not be let go is said,
 * one line each.  How many processes were let go. */
size_t record_release_forked(struct recording *r, struct record_hold *hold, pid_t except);
/* Process pid keeps the copy of a recording that ended without letting
 * go of it (its needle record was killed): the buffer of inode ino, which
 * nobody reads.  Let go of it as above: 0, or -1 with why in err;
 * -EBUSY when its libneedle is still in that recording's session (one
 * stopped during its start-up, which it lets go of when that ends). */
int record_release_orphan(pid_t pid, ino_t ino, char *err, size_t errlen);
/* Does process pid map the buffer (the memfd "needle-buffer" of inode
 * ino)? */
int record_maps_buffer(pid_t pid, ino_t ino);

/* spawn.c */
/* The signals whose disposition needle record changes for itself; which of
 * them the caller had ignored (bit per signal number), noted before any is
 * changed, so that the program gets them as the caller left them. */
#define RECORD_OWN_SIGNALS { SIGINT, SIGQUIT, SIGXFSZ, SIGTERM, SIGHUP, SIGCHLD }
void record_note_inherited_signals(void);
int record_signal_was_ignored(int sig);
int record_find_agent(char *out, size_t len);
int record_find_program(const char *prog, char *out, size_t len);

/* Start the program with the agent preloaded; with kernel (--kernel), its
 * events are opened on the child before it execs. */
pid_t record_spawn(char **argv, const char *agent, int buf_fd, int meta_fd, const struct record_opts *o,
		   struct kernel_rec *kernel, int *exec_errno);
/* Processes descended from needle record that still map the buffer of
 * inode buf_ino: up to max PIDs in pids; returns how many were found. */
size_t record_descendants(ino_t buf_ino, pid_t *pids, size_t max);


/* snapshot.c */
/* Copy the newest events of every thread and write them as a trace file:
 * OUTPUT.N (N = info->number), or OUTPUT itself when final (r->out, open
 * since the start, is then used and closed).  0, or -1 after saying why. */
int record_snapshot(struct recording *r, const struct sec_snapshot *info, int final);
void record_snapshot_free(void);
/* Before the program starts: FILE.1 must be absent or a needle trace;
 * FILE (open in r->out) is let go until the last snapshot.  0 or -1. */
int record_snapshot_check(struct recording *r);

/* When snapshots are taken: requests (SIGUSR2, needle ctl, triggers) at
 * most --max-snapshots, --snapshot-interval apart, --trigger-after late. */
struct snapshot_service {
	int started, pending, said_skip;
	uint64_t handled, last_ns, due_ns;
	sig_atomic_t signals_seen;
	unsigned taken;
	struct sec_snapshot next;
};
/* SIGUSR2 asks for a snapshot (installed before the program starts). */
void snapshot_catch_sigusr2(void);
/* The agent records: read its result, say how to ask for snapshots. */
void snapshot_service_start(struct snapshot_service *ss, struct recording *r);
/* Take the snapshot due, if any; how long to wait before the next look. */
uint64_t snapshot_service_poll(struct snapshot_service *ss, struct recording *r);
/* Sleep until a request (the buffer's wake word moved from word), a
 * signal, or ns. */
void snapshot_service_wait(struct snapshot_service *ss, struct recording *r, uint32_t word, uint64_t ns);
/* The recording is over: the pending snapshot, then the last one (into
 * OUTPUT, for reason TRACE_SNAPSHOT_CRASH always, else only without
 * triggers).  1 if it could not be written in full. */
int snapshot_service_end(struct snapshot_service *ss, struct recording *r, uint32_t reason);

/* drain.c */
void record_note_thread(struct recording *r, uint32_t tid, const char comm[16]);
/* A chunk's thread lifetime and its process (shm_chunk.pid, ppid), for
 * the TASKS section; a pid of 0 (nothing read) is not noted. */
void record_note_task(struct recording *r, uint32_t tid, uint32_t serial, uint32_t pid, uint32_t ppid);
struct shm_header *record_buffer_create(const struct record_opts *o, int *fd_out);
size_t record_drain(struct recording *r, int final);
/* Like record_drain (not final), but max chunks at most: a loop that also
 * waits for an answer of the agent's sees it between two portions. */
size_t record_drain_some(struct recording *r, size_t max);
void record_salvage(struct recording *r);
/* Sleep until the buffer is worth draining (the wake-up mode decides),
 * a SIGCHLD arrives after sigchld_seen was sampled, a stop request, or
 * max_ms (-1: the --poll interval, or a second as a safety net). */
void record_wait(struct recording *r, sig_atomic_t sigchld_seen, int max_ms);
int record_buffer_ready(struct recording *r);

/* meta.c */
/* The meta file the agent writes (common/meta_protocol.h), sized: its
 * descriptor, or -1 with errno. */
int record_meta_create(void);
void record_write_symbols(struct recording *r);
void record_read_result(struct recording *r, uint64_t *sites_traced, char *agent_err, size_t errlen);
void record_write_threads(struct recording *r);
void record_write_process(struct recording *r, int status, char **argv);
/* sysinfo.c: the INFO section (the machine, the program's use of it). */
void record_write_info(struct recording *r);

/* probes.c: -E PROVIDER:NAME.  Resolve the patterns to the USDT probes
 * of exe and libs (into r->kernel): 0, or -1 with the error said. */
struct program_libs;
int record_probes_resolve(struct recording *r, const char *exe, const struct program_libs *libs);
/* The PROBES section, if probes were asked for. */
void record_write_probes(struct recording *r);

/* output.c */
int record_out_open(struct record_out *out, const char *path, int force);
int record_out_begin(struct recording *r);
void record_out_commit(struct recording *r);
/* The same, if anything was written since the newest mark.  Chunks are
 * committed by the drain (the end of each pass) and every
 * OUT_COMMIT_BYTES within one, not one by one: each commit is a write
 * and an lseek, and with a chunk's worth apiece (16 KiB of events, a few
 * KiB in the file) those were a fifth of needle record's time when the
 * program outran it (-A values at 10M calls a second). */
#define OUT_COMMIT_BYTES (1u << 20)
void record_out_commit_pending(struct recording *r);
/* Write the closing sections with tail(r, mark, minimal); on a write
 * error, step back over the last chunks until they fit.  0: the file is
 * complete; 1: complete but shorter than what was drained; -1: no END. */
int record_out_finish(struct recording *r, int (*tail)(struct recording *, const struct out_mark *, int minimal),
		      struct out_mark *kept);
/* --host: connect to needle recv at host:port and have it ready to store
 * the trace as name (the output's file name), before the program starts.
 * 0, or -1 with the error said. */
int record_out_connect(struct record_out *out, const char *host, const char *port, const char *name);
/* --host, the file's last section sent: end the stream and wait for the
 * receiver's word that it stored all of it.  0, or -1 with the error
 * said. */
int record_out_confirm(struct record_out *out);
/* Close FILE, the lock with it. */
void record_out_close(struct record_out *out);
/* Nothing was recorded: a file created for the recording is removed, an
 * older one is left as it was.  Closes FILE. */
void record_out_abandon(struct record_out *out);

#endif
