/* procfs.c - /proc files of another process (procfs.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/util/procfs.h"

char *proc_read(pid_t pid, const char *name, size_t *len)
{
	char path[64];
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	if (!buf || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		int e = errno;
		free(buf);
		errno = e;
		return NULL;
	}
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				break;
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

void proc_comm(pid_t pid, char *out, size_t len)
{
	char *c = proc_read(pid, "comm", NULL);
	snprintf(out, len, "%s", c ? c : "?");
	out[strcspn(out, "\n")] = 0;
	free(c);
}

int maps_open(struct maps_reader *m, pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	m->f = fopen(path, "re");
	return m->f ? 0 : -1;
}

int maps_next(struct maps_reader *m, struct maps_line *l)
{
	while (m->f && fgets(m->line, sizeof(m->line), m->f)) {
		unsigned long long lo, hi, off, ino;
		int at = 0;
		if (sscanf(m->line, "%llx-%llx %4s %llx %x:%x %llu %n", &lo, &hi, l->perms, &off, &l->dev_major,
			   &l->dev_minor, &ino, &at) != 7)
			continue;
		char *path = at ? m->line + at : m->line + strlen(m->line);
		path[strcspn(path, "\n")] = 0;
		l->lo = lo;
		l->hi = hi;
		l->offset = off;
		l->inode = ino;
		l->path = path;
		return 1;
	}
	return 0;
}

void maps_close(struct maps_reader *m)
{
	if (m->f)
		fclose(m->f);
	m->f = NULL;
}
