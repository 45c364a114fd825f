/* view_format.h - what views and exports write per event, without
 * printf where a view writes a line per event: a growing output buffer,
 * the replay line's prefix, an event's values, and the integers views
 * compare them with (view_format.c). */
#ifndef NEEDLE_VIEW_FORMAT_H
#define NEEDLE_VIEW_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "reader/trace_reader.h"

/* A growing byte buffer for the output built per event (a replay line, a
 * JSON object, a protobuf packet): reserve, then write at p + len.  An
 * allocation failure sets oom and makes every later reserve fail, so a
 * view checks once, at the end. */
struct view_buf {
	char *p;
	size_t len, cap;
	int oom;
};
/* Room for more bytes past len: 0, or -1 (oom set). */
int view_buf_reserve(struct view_buf *b, size_t more);
void view_buf_put(struct view_buf *b, const void *s, size_t n);

/* The values of an event's data block (needle record -A / -R): arguments
 * as "key=\"user:42\", arg2=5, ...", return values as "5" or, for a
 * struct with named fields, "{x=1, y=2}" (what follows "= ").  Names and
 * enumerators come from the trace's SEC_ARGS section when it has one
 * (t may be NULL: names by register).  Returns the length written. */
size_t view_format_values(char *buf, size_t len, struct trace *t, const struct trace_event *ev);
/* uftrace's -T FUNC@read= readings of a data block: whether it has some,
 * and one comment's text: "read:proc/statm (size=6812KB, rss=780KB,
 * shared=716KB)", "read:page-fault (major=0, minor=188)" (faults), or
 * with entry (the entry's block, data the exit's) their differences,
 * "diff:proc/statm (size=+0KB, ...)".  1 when written, 0 when the block
 * has not those readings. */
int view_has_reads(const uint8_t *data, size_t n);
/* needle record -W cpu: the CPU a data block notes its thread ran on
 * ("watch:cpu (cpu=1)", uftrace's comment): 1 when written, 0 when the
 * block notes none.  view_has_reads counts it as a reading. */
int view_format_watch(char *buf, size_t len, const uint8_t *data, size_t n);
/* The same CPU as a number: 1 with *cpu set, 0 when the block notes none. */
int view_watch_cpu(const uint8_t *data, size_t n, uint64_t *cpu);
/* The readings of a data block (its ARG_KIND_READ items) into v, by
 * ARG_READ_* index; returns a bit (1 << index) per index found.  v has
 * VIEW_READINGS slots (ARG_READ_LAST + 1: this header leaves the record
 * layout's names to the files that decode it). */
#define VIEW_READINGS 6
unsigned view_readings(const uint8_t *data, size_t n, uint64_t v[VIEW_READINGS]);
int view_format_reads(char *buf, size_t len, const uint8_t *data, size_t n, const uint8_t *entry, size_t entry_n,
		      int faults);
/* How replay writes values.  VIEW_VALUES_EXACT (the form above, and what
 * every export keeps): each argument named, each float as the shortest
 * text that reads back as the same value.  VIEW_VALUES_UFTRACE (replay's
 * default, so that uftrace's users read their graphs as before): values
 * alone, in order ("-1, 2"), floats as printf's %f; a struct's fields keep
 * their names, they are part of its value. */
enum view_values_style { VIEW_VALUES_UFTRACE, VIEW_VALUES_EXACT };
size_t view_format_values_style(char *buf, size_t len, struct trace *t, const struct trace_event *ev,
				enum view_values_style style);
/* One value at a time, from *at (0 to begin): its name ("key", "arg1",
 * "retval") and its text.  1 with a value, 0 when there is none left. */
int view_value_next(struct trace *t, const struct trace_event *ev, size_t *at, char *name, size_t name_len,
		    char *val, size_t val_len);
/* An integer from the command line (replay --ret-eq): decimal or 0x hex,
 * with an optional '-' ("-1", "0x7f", "-0x10").  Kept as sign and
 * magnitude, so that every value of a signed or an unsigned 64-bit format
 * can be given. */
struct view_int {
	uint64_t mag;
	int neg; /* never with mag 0 */
};
/* 0, or -1 if s is not such an integer (or does not fit). */
int view_parse_int(const char *s, struct view_int *v);
/* Whether the return value in an exit's data block equals v, compared as
 * the number its format says: d, c (a char: signed on x86-64), e and b as
 * signed integers of their bits, u, x and p as unsigned ones (a negative
 * v equals none), f numerically; a
 * string (s) as its pointer: NULL is 0, an unreadable pointer its
 * address, a string that was read equals no v.  1, 0, or -1 when the
 * block has no return value, or one of several values (a struct). */
int view_ret_equals(const uint8_t *data, size_t n, const struct view_int *v);
/* "%10s [%6u] | " into buf (at least 48 bytes); returns its length. */
int view_format_prefix(char *buf, const char *dur, uint32_t tid);
/* A kernel event (TEV_KERNEL) as replay shows it: a system call as
 * "read() = 42" and a comment with its time in the kernel, time off the
 * CPU, a page fault and a thread's new name as comments (the last as
 * uftrace's event: linux:task-name (comm="NAME")).  Returns the length. */
size_t view_format_kernel(char *buf, size_t len, const struct trace_event *ev);
/* KEV_COMM's name, NUL-terminated: into name (16 bytes). */
void view_kernel_comm(const struct kernel_event *k, char name[16]);
/* A kernel event as a slice's name and its detail, for the exports: the
 * system call's name and its result; the thread state off the CPU, as
 * Perfetto names them ("Runnable (Preempted)", "Sleeping",
 * "Uninterruptible Sleep", "Blocked"); "page fault (minor)" and its
 * address; "task-name" and the name. */
void view_kernel_slice(const struct trace_event *ev, char *name, size_t name_len, char *detail, size_t detail_len);
/* A system call's name by its x86-64 number ("syscall_N" for one the
 * table does not know): into buf. */
const char *view_syscall_name(uint64_t nr, char *buf, size_t len);
/* The prefix of a graph node's line (line set: its branch "+-") or of
 * the blank line between siblings, as uftrace draws it: a "|" for each
 * open level that has siblings still to come (graph, graph --task). */
void view_print_indent(const uint8_t *open, uint32_t indent, int line);

#endif
