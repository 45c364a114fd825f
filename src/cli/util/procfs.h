/* procfs.h - reading another process's /proc files, the one way the
 * command does it: a whole small file at once, or its memory map a line
 * at a time.
 *
 * Invariants: nothing here is cached (a process changes between two
 * reads) and nothing keeps a descriptor past the call that returns the
 * data, except an open maps_reader until maps_close. */
#ifndef NEEDLE_CLI_PROCFS_H
#define NEEDLE_CLI_PROCFS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The whole of /proc/PID/NAME ("stat", "task/TID/syscall"),
 * NUL-terminated (malloc'ed; *len its length without the NUL, if len is
 * not NULL); NULL with errno. */
char *proc_read(pid_t pid, const char *name, size_t *len);
/* Process pid's name (/proc/PID/comm) into out, "?" when it cannot be
 * read. */
void proc_comm(pid_t pid, char *out, size_t len);

/* One line of /proc/PID/maps: "lo-hi perms offset maj:min inode path". */
struct maps_line {
	uint64_t lo, hi, offset;
	char perms[5];           /* "r-xp" */
	unsigned dev_major, dev_minor;
	uint64_t inode;
	const char *path;        /* "" for an anonymous mapping; valid until the next maps_next */
};

struct maps_reader {
	FILE *f;
	char line[PATH_MAX + 128];
};

/* 0, or -1 with errno. */
int maps_open(struct maps_reader *m, pid_t pid);
/* 1 with the next line in *l, 0 at the end (lines that do not parse are
 * skipped). */
int maps_next(struct maps_reader *m, struct maps_line *l);
void maps_close(struct maps_reader *m);

#endif
