/* recorder.h - the function and function_graph tracers: a consumer that
 * writes entry/exit events into the shared trace buffer of `needle record`. */
#ifndef NEEDLE_RECORDER_H
#define NEEDLE_RECORDER_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/record_config.h"

#include <stddef.h>
#include <stdint.h>

/* What a recording asks for.  The two descriptors are the recorder's:
 * closed once read, whatever happens. */
struct recorder_start_cfg {
	int buf_fd;                   /* memfd of the shared buffer */
	int meta_fd;                  /* where the module and site tables go */
	int ctl_polled;               /* serve `needle ctl` from the caller's loop, not a thread (control.h) */
	/* What needle record asked for (common/record_config.h): read only
	 * during the call (the recorder keeps copies of what it needs). */
	const struct record_config *config;
};

/* Attach the recorder as cfg asks.  Not under the control mutex (the
 * recorder uses the public API).  1 when recording, negative errno on
 * failure, also reported to the reader through the buffer header and the
 * meta file.  -EBUSY: a recording is already running. */
int recorder_start(const struct recorder_start_cfg *cfg);
/* A program needle record started: its configuration (RECORD_CONFIG_ENV),
 * read and decoded at the first call.  1 with *config set, 0 when the
 * environment carries none, negative errno when it carries one that
 * cannot be read (the environment is then restored). */
int recorder_env_config(const struct record_config **config);
/* recorder_start with that configuration; 0 when there is none. */
int recorder_start_from_env(void);
/* End the recording in a process that runs on (detach): sites unpatched,
 * the control socket closed (its thread gone), the buffer unmapped, and
 * AGENT_DETACHED in its header.  0 (also when not recording) or negative
 * errno, and then the recording goes on. */
int recorder_stop(void);
/* End the copy of a recording that a fork left in this process (needle
 * record lets go of such children when the recording ends, through a
 * session of their own): as recorder_stop, but the buffer's header is
 * left as the recording's own process has it.  0 (also when there is
 * nothing to end) or negative errno, -EDEADLK when the fork left the
 * recorder's lock held. */
int recorder_release_copy(void);

/* Is a recording on in this process (not a forked child of it), so that
 * an object dlopen'ed now should be traced? */
int recorder_wants_new_objects(void);
/* An object was dlopen'ed: discover its functions, name them in the meta
 * file, and trace those the recording's filters select.  Called after the
 * loader returned (its lock released, the object's constructors run). */
void recorder_object_loaded(void);
/* The calling thread is inside the C library's dlopen (1) or out of it
 * (0): a call whose return address lies in no object known yet comes
 * from an object being loaded (a constructor), not from the program. */
void recorder_thread_loading(int loading);
/* Counters in the trace buffer's header for threads that run untraced,
 * for the agent to wire to the thread-state pool (NULLs when not
 * recording). */
void recorder_untraced_counters(_Atomic uint64_t **refused, _Atomic uint64_t **shared_tls);

/* The agent could not start: tell `needle record` why (if it asked). */
void recorder_report_failure(int err);
/* The same, through the descriptors of an attached session (closed). */
void recorder_report_failure_fds(int buf_fd, int meta_fd, int err);

/* An exec followed (exec_follow.c): the descriptors the program it
 * becomes inherits, all at numbers out of its way and without
 * close-on-exec.  The agent of that program reads the config, maps the
 * buffer and the meta file, and closes all three before main. */
struct exec_follow {
	int config_fd; /* its RECORD_CONFIG_ENV: this config with the next image number */
	int buf_fd, meta_fd;
};
/* Ready an exec to be followed: 0, or -errno and nothing left open
 * (-ENOENT: this process is not a program needle record started and
 * records, or its needle record is older; -EACCES: needle record's
 * descriptors cannot be opened from here, such as after a change of
 * user).  Allocates nothing: safe in a vfork child. */
int recorder_exec_prepare(struct exec_follow *f);
/* The exec failed, or was not made: closes them (errno kept). */
void recorder_exec_abandon(struct exec_follow *f);
/* libneedle's path found, for the programs exec'ed (exec_follow.c). */
void exec_follow_init(void);
/* A record line for needle record about an exec not followed (META_NOTE). */
void recorder_exec_note(const char *line);

#endif
