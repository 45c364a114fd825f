/* export_dir.h - an export that is a directory (uftrace's data
 * directory, a CTF trace): written as DIR.tmp.PID and renamed to DIR when
 * whole, so that a DIR that exists is a complete export; a DIR that
 * exists already is refused, never overwritten. */
#ifndef NEEDLE_EXPORT_DIR_H
#define NEEDLE_EXPORT_DIR_H

#include <stddef.h>

struct export_dir {
	const char *dir;  /* the final name */
	char tmp[4200];   /* where it is written */
	int err;          /* a write failed (said once) */
};

/* 0, or -1 after printing why (DIR exists, or the directory cannot be
 * made). */
int export_dir_begin(struct export_dir *d, const char *dir);
/* Write a whole buffer to the file name in it (appending when append):
 * 0, or -1 after printing the first failure ("cannot write DIR/name"). */
int export_dir_put(struct export_dir *d, const char *name, const void *p, size_t n, int append);
/* Rename it to DIR: 0, or -1 after printing why (it is then removed). */
int export_dir_commit(struct export_dir *d);
/* Remove what was written (an export that failed). */
void export_dir_abort(struct export_dir *d);

#endif
