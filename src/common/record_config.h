/* record_config.h - what needle record asks the agent to record: one
 * type, and one codec for the bytes that carry it.
 *
 * The same bytes go three ways: to a program needle record starts (a
 * memfd whose descriptor is the only thing in its environment,
 * RECORD_CONFIG_ENV), to a running process after the attach hello
 * (common/attach_protocol.h), and from `needle ctl` to a live recording
 * (common/ctl_protocol.h: the fields given are the fields changed).  The
 * agent decodes them once, where they arrive.
 *
 * Every field is declared once, in RECORD_CONFIG_INTS or
 * RECORD_CONFIG_STRINGS below: its tag on the wire, its name in struct
 * record_config, for strings the most bytes it may hold, and what it
 * means.  A new option is a line here, its parser in needle record, and
 * its user in the agent.
 *
 * Encoding (little-endian, as the only architecture needle runs on):
 *
 *   header   u32 magic RECORD_CONFIG_MAGIC, u16 version, u16 header
 *            bytes (16), u32 body bytes, u32 zero
 *   body     fields, each: u16 tag, u16 zero, u32 length, then length
 *            bytes: an integer is 8 bytes (int64), a string its bytes
 *            without a NUL (an empty string is a field of length 0)
 *
 * Invariants: a tag appears at most once; a decoder refuses a version,
 * a tag or a length it does not know, and a body that does not end where
 * the header says, so that no half-understood request is ever applied.
 * A field that is absent is 0 or NULL, and its bit in `present` is clear.
 */
#ifndef NEEDLE_RECORD_CONFIG_H
#define NEEDLE_RECORD_CONFIG_H

/* x86-64's PLT entry: what -Z (record and views) takes for the size of a
 * library call, as uftrace sees a call the program makes to a library. */
#define PLT_ENTRY_BYTES 16

#include <stddef.h>
#include <stdint.h>

#define RECORD_CONFIG_MAGIC 0x4746434eu /* "NCFG" */
#define RECORD_CONFIG_VERSION 1
#define RECORD_CONFIG_HEADER 16

/* The environment variable of a program needle record starts: "FD", or
 * "FD ctl=PID" with --ctl (PID: the process needle record started, the
 * one that serves the control socket; `needle ctl` reads it back from
 * /proc/PID/environ to explain a process that does not answer). */
#define RECORD_CONFIG_ENV "NEEDLE_CONFIG"

#define RECORD_CONFIG_GLOBS_MAX (64u << 20) /* bytes of a list of globs, triggers or filters */
#define RECORD_CONFIG_ARGS_MAX (64u << 20)  /* --auto-args: a line per function */

/* X(tag, name, meaning) - integers (tags 1-31). */
#define RECORD_CONFIG_INTS(X)                                                                          \
	X(1, graph, "1 function_graph, 0 function")                                                    \
	X(2, depth, "function_graph levels recorded (0: unlimited)")                                   \
	X(3, ctl, "serve needle ctl (1), or not (0)")                                                  \
	X(4, sites, "RECORD_SITES_*: compiled, relocated or all entries (0: the default)")         \
	X(5, libcall, "RECORD_LIBCALL_*: whose library calls are recorded") \
	X(6, max_string, "--max-string (0: the agent's default)")                                      \
	X(7, trigger_gap_ns, "--snapshot-interval: least time between two trigger requests")           \
	X(8, trigger_after_ns, "--trigger-after: the rings freeze this long after a trigger")          \
	X(9, buf_fd, "a started program's descriptor of the trace buffer (attach: sent with the hello)") \
	X(10, meta_fd, "... and of the meta file")                                                      \
	X(11, min_size, "-Z: functions of fewer bytes than this are not patched (0: any size)")      \
	X(12, image, "0: the program needle record started; N: the Nth program a traced process exec'ed into") \
	X(13, rec_pid, "needle record's pid, where an exec'ing process opens the buffer and meta file again") \
	X(14, rec_buf_fd, "needle record's descriptor of the trace buffer (/proc/rec_pid/fd/N)")       \
	X(15, rec_meta_fd, "... and of the meta file (0 with rec_pid: exec'ed programs are not followed)") \
	X(16, no_follow_exec, "--no-follow-exec: the programs it exec's are not recorded")           \
	X(17, patch_keeps_libcalls, "1: -P selects the program's functions, library calls follow --libcall (uftrace's -P)") \
	X(18, start_paused, "--disable: nothing is recorded until a trace_on trigger or signal") \
	X(19, estimate_return, "--estimate-return: function_graph with no return hooked; a call ends at the next entry at or above its stack") \
	X(20, subtree_optional, "1: -F naming no function leaves the recording unfiltered, as uftrace's does (run as uftrace)") \
	X(21, watch, "-W: RECORD_WATCH_* bits, what each recorded event notes when it changed")

/* X(tag, name, most bytes, meaning) - strings (tags 32-63). */
#define RECORD_CONFIG_STRINGS(X)                                                                      \
	X(32, filter, RECORD_CONFIG_GLOBS_MAX, "-P: globs of the functions patched (NULL: all)")       \
	X(33, notrace, RECORD_CONFIG_GLOBS_MAX, "-U: globs of functions not patched")                  \
	X(34, subtree, RECORD_CONFIG_GLOBS_MAX, "-F: calls recorded with their subtrees, nothing else (GLOB[\\tPOS])") \
	X(35, drop, RECORD_CONFIG_GLOBS_MAX, "-N: calls not recorded, nor their subtrees (GLOB[\\tPOS])")  \
	X(36, triggers, RECORD_CONFIG_GLOBS_MAX, "--trigger lines (agent/record/trigger.h)")           \
	X(37, args, RECORD_CONFIG_ARGS_MAX, "-A / -R / --auto-args lines (agent/record/args.h)")       \
	X(38, arg_filters, RECORD_CONFIG_GLOBS_MAX, "-F value filter lines (agent/record/args.h)")      \
	X(39, orig_ld_preload, 65536, "a started program's LD_PRELOAD before libneedle was added")   \
	X(40, trace_on, RECORD_CONFIG_GLOBS_MAX, "-T FUNC@trace_on: recording resumes at their entry (GLOB[\\tm=MODULE])") \
	X(41, trace_off, RECORD_CONFIG_GLOBS_MAX, "-T FUNC@trace_off: recording pauses at their entry")  \
	X(42, finish, RECORD_CONFIG_GLOBS_MAX, "-T FUNC@finish: recording ends after their entry")      \
	X(43, signals, 4096, "--signal: lines SIG<tab>on|off|finish")                                   \
	X(44, syms, RECORD_CONFIG_ARGS_MAX, "--with-syms: OBJECT<tab>ADDR<tab>SIZE<tab>NAME lines, names for stripped objects")

/* watch's bits */
enum { RECORD_WATCH_CPU = 1 };
/* libcall's values */
enum { RECORD_LIBCALL_PROGRAM, RECORD_LIBCALL_NEST, RECORD_LIBCALL_NONE, RECORD_LIBCALL_ALL };
/* sites' values (the agent's SITE_KINDS_*) */
enum { RECORD_SITES_DEFAULT, RECORD_SITES_COMPILED, RECORD_SITES_RELOCATED, RECORD_SITES_ALL };

struct record_config {
	uint64_t present; /* bit 1 << tag for each field the bytes carried (or the encoder is to send) */
#define RECORD_CONFIG_INT_MEMBER(tag, name, what) int64_t name;
	RECORD_CONFIG_INTS(RECORD_CONFIG_INT_MEMBER)
#undef RECORD_CONFIG_INT_MEMBER
#define RECORD_CONFIG_STRING_MEMBER(tag, name, max, what) char *name; /* newline-separated lines */
	RECORD_CONFIG_STRINGS(RECORD_CONFIG_STRING_MEMBER)
#undef RECORD_CONFIG_STRING_MEMBER
	char *storage; /* decoded: the strings' one allocation (record_config_free) */
};

/* The bit of field `name` in present: RECORD_CONFIG_BIT(RECORD_CONFIG_TAG_depth). */
enum record_config_tag {
#define RECORD_CONFIG_TAG_ENUM(tag, name, ...) RECORD_CONFIG_TAG_##name = tag,
	RECORD_CONFIG_INTS(RECORD_CONFIG_TAG_ENUM) RECORD_CONFIG_STRINGS(RECORD_CONFIG_TAG_ENUM)
#undef RECORD_CONFIG_TAG_ENUM
};
#define RECORD_CONFIG_BIT(tag) (1ull << (tag))
/* Set an integer field and mark it present (sent even when 0). */
#define RECORD_CONFIG_SET(c, name, v) \
	((c)->name = (v), (c)->present |= RECORD_CONFIG_BIT(RECORD_CONFIG_TAG_##name))
#define RECORD_CONFIG_HAS(c, name) (((c)->present >> RECORD_CONFIG_TAG_##name) & 1)

/* The bytes of c: every integer that is present or not 0, every string
 * that is not NULL.  Into *out (malloc'ed, *len bytes): 0, or -ENOMEM,
 * or -E2BIG when a string is longer than its field may be. */
int record_config_encode(const struct record_config *c, uint8_t **out, size_t *len);
/* How many bytes a config whose header is at p (RECORD_CONFIG_HEADER
 * bytes) takes, header included: 0 if the header is not one this
 * decoder reads. */
size_t record_config_length(const uint8_t *p);
/* Decode len bytes into *c (its strings copied into c->storage).  0,
 * -EPROTO (not a config this decoder reads, whole), or -ENOMEM. */
int record_config_decode(const uint8_t *p, size_t len, struct record_config *c);
void record_config_free(struct record_config *c);
/* Where the 8 bytes of integer field tag are in the len bytes p (a
 * config this codec wrote): their offset, or 0 when the field is absent.
 * For a copy of the bytes with a few integers changed, written without
 * encoding again (an exec's config, agent/record/exec_follow.c). */
size_t record_config_int_offset(const uint8_t *p, size_t len, unsigned tag);

#endif
