/* export_dir.c - exports that are directories (export_dir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/export/export_dir.h"
#include "cli/util/cli_util.h"

int export_dir_begin(struct export_dir *d, const char *dir)
{
	struct stat st;
	d->dir = dir;
	d->err = 0;
	if (!lstat(dir, &st)) {
		cli_error("%s exists: remove it or give another directory with -o", dir);
		return -1;
	}
	snprintf(d->tmp, sizeof(d->tmp), "%s.tmp.%d", dir, (int)getpid());
	if (mkdir(d->tmp, 0755)) {
		cli_error("cannot create %s: %s", d->tmp, strerror(errno));
		return -1;
	}
	return 0;
}

static int fail(struct export_dir *d, const char *what)
{
	if (!d->err)
		cli_error("cannot write %s/%s: %s", d->dir, what, strerror(errno));
	d->err = 1;
	return -1;
}

int export_dir_put(struct export_dir *d, const char *name, const void *p, size_t n, int append)
{
	char path[4608];
	if (d->err)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", d->tmp, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
	if (fd < 0)
		return fail(d, name);
	const unsigned char *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			close(fd);
			return fail(d, name);
		}
		b += w;
		n -= (size_t)w;
	}
	if (close(fd))
		return fail(d, name);
	return 0;
}

void export_dir_abort(struct export_dir *d)
{
	char path[4608];
	/* Only the files written here: no subdirectories. */
	DIR *dir = opendir(d->tmp);
	if (dir) {
		struct dirent *e;
		while ((e = readdir(dir))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(path, sizeof(path), "%s/%s", d->tmp, e->d_name);
			unlink(path);
		}
		closedir(dir);
	}
	rmdir(d->tmp);
}

int export_dir_commit(struct export_dir *d)
{
	if (d->err) {
		export_dir_abort(d);
		return -1;
	}
	if (rename(d->tmp, d->dir)) {
		cli_error("cannot rename %s to %s: %s", d->tmp, d->dir, strerror(errno));
		export_dir_abort(d);
		return -1;
	}
	return 0;
}
