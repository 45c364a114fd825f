/* view_common.h - opening the trace for a view, with the error message
 * every view prints the same way. */
#ifndef NEEDLE_VIEW_COMMON_H
#define NEEDLE_VIEW_COMMON_H

#include <stdio.h>

#include "reader/trace_reader.h"

/* Open path (default needle.data); prints the error and returns NULL.  A
 * file whose recording did not finish opens, with one warning line. */
struct trace *view_open(const char *path);

/* --tid's argument: 0, or -1 after printing why it is not a thread id. */
int view_parse_tid(const char *arg, uint32_t *tid);

/* After a view's options: refuse leftover arguments, open the trace and
 * check that tid (if not 0) is in it.  NULL after printing the error, with
 * *status the exit status to return. */
struct trace *view_start(const char *view, int argc, char **argv, int optind_now, const char *input, uint32_t tid,
			 int *status);
/* Close the trace at the end of a view.  With NEEDLE_VIEW_WORK set in the
 * environment, first print on stderr the inner-loop steps the reader and
 * the view took ("needle: view work: STEPS steps, EVENTS events"): a test
 * compares them across traces to check that work grows with the events,
 * not with the depth of the stacks. */
void view_close(struct trace *t);

/* Run the iterator to the end, calling fn per event; prints errors.
 * Returns 0, or 1 if the trace turned out damaged. */
int view_each_event(struct trace *t, uint32_t tid, int (*fn)(const struct trace_event *ev, void *arg), void *arg);
/* The same, with every call's node in tree (trace_event.node). */
int view_each_event_tree(struct trace *t, uint32_t tid, struct call_tree *tree,
			 int (*fn)(const struct trace_event *ev, void *arg), void *arg);
/* The same, with every call marked by mark_fn (trace_iter_init_mark). */
int view_each_event_mark(struct trace *t, uint32_t tid, trace_mark_fn mark_fn, void *mark_arg,
			 int (*fn)(const struct trace_event *ev, void *arg), void *arg);

/* Output.  A view stops as soon as a write fails (view_output_failed,
 * checked after each event, remembers why), and view_close_output flushes
 * and closes the stream, standard output included, so that an error at
 * the last flush or at close is seen too.  Either way the view prints one
 * message, "cannot write NAME: reason", and exits non-zero. */
int view_output_failed(FILE *out);
/* A large buffer for a stream that is not a terminal (views that write a
 * line per event): fewer copies and system calls.  Before any output. */
void view_buffer_output(FILE *out);

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

/* Formatting without printf, for the lines written per event.  As
 * cli_format_duration ("  1.234 us"), exactly. */
void view_format_duration(char *buf, size_t len, uint64_t ns);
/* The values of an event's data block (needle record -A / -R): arguments
 * as "key=\"user:42\", arg2=5, ...", return values as "5" or, for a
 * struct with named fields, "{x=1, y=2}" (what follows "= ").  Names and
 * enumerators come from the trace's SEC_ARGS section when it has one
 * (t may be NULL: names by register).  Returns the length written. */
size_t view_format_values(char *buf, size_t len, struct trace *t, const struct trace_event *ev);
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
/* v in decimal at p; returns the number of digits. */
int view_format_u64(char *p, uint64_t v);
/* 0, or 1 after printing the message. */
int view_close_output(FILE *out, const char *name);

#endif
