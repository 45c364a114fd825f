/* task_list.c - reads /proc/self/task (see task_list.h). */
#include <dirent.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/patch/task_list.h"

int task_list_read(struct task_list *list)
{
	DIR *dir = opendir("/proc/self/task");
	pid_t self = gettid();
	size_t cap = 0;
	struct dirent *de;

	list->tids = NULL;
	list->cnt = 0;
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || tid == self)
			continue;
		if (list->cnt == cap) {
			cap = cap ? cap * 2 : 64;
			pid_t *t = realloc(list->tids, cap * sizeof(*t));
			if (!t) {
				closedir(dir);
				task_list_free(list);
				return -ENOMEM;
			}
			list->tids = t;
		}
		list->tids[list->cnt++] = tid;
	}
	closedir(dir);
	return 0;
}

int task_list_read_into(pid_t *tids, size_t cap, size_t *cnt)
{
	char buf[4096];
	pid_t self = gettid();
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*cnt = 0;
	if (fd < 0)
		return -errno;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : 0;
		}
		for (long off = 0; off < n;) {
			const struct dirent64 *de = (const struct dirent64 *)(buf + off);
			pid_t tid = (pid_t)atoi(de->d_name);
			off += de->d_reclen;
			if (tid <= 0 || tid == self)
				continue;
			if (*cnt == cap) {
				close(fd);
				return -ENOSPC;
			}
			tids[(*cnt)++] = tid;
		}
	}
}

void task_list_free(struct task_list *list)
{
	free(list->tids);
	list->tids = NULL;
	list->cnt = 0;
}

/* The text after "\nKEY" in a /proc status file, read into buf, or NULL
 * with *err set. */
static const char *status_field(const char *path, const char *key, char *buf, size_t len, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		*err = -ESRCH;
		return NULL;
	}
	buf[n] = 0;
	char *line = strstr(buf, key);
	if (!line)
		*err = -ENOENT;
	return line ? line + strlen(key) : NULL;
}

/* /proc/self/task/TID/NAME into buf (NUL-terminated): its length, or
 * -ESRCH (gone), or -errno - 1000 when it cannot be opened otherwise. */
static ssize_t read_task_file(pid_t tid, const char *name, char *buf, size_t size)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno - 1000;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	return n;
}

long task_syscall_args(pid_t tid, uint64_t args[6], uint64_t *pc)
{
	char buf[256];
	ssize_t n = read_task_file(tid, "syscall", buf, sizeof(buf));

	if (n < 0)
		return (long)n;
	if (buf[0] < '0' || buf[0] > '9')
		return -1; /* "running", or "-1 SP PC" (not in a system call) */
	/* "NR ARG1 ... ARG6 SP PC" */
	char *p = buf;
	long nr = strtol(p, &p, 10);
	for (int i = 0; i < 6; i++) {
		uint64_t a = strtoull(p, &p, 16);
		if (args)
			args[i] = a;
	}
	strtoull(p, &p, 16);
	*pc = strtoull(p, &p, 16);
	return nr;
}

int task_syscall_shares_memory(long nr, const uint64_t args[6])
{
	uint64_t flags = args[0];

	if (nr == SYS_vfork)
		return 1;
	if (nr == SYS_clone3) {
		/* The flags are the first word of the caller's struct clone_args,
		 * in this process's memory; read without a fault whatever the
		 * pointer (the thread may have left the call since).  Unread,
		 * it is taken for a spawn. */
		struct iovec local = { &flags, sizeof(flags) }, remote = { (void *)(uintptr_t)args[0], sizeof(flags) };
		if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof(flags))
			return 1;
	} else if (nr != SYS_clone) {
		return 0;
	}
	/* A thread (pthread_create's clone) shows in the task list itself. */
	return (flags & CLONE_VM) && !(flags & CLONE_THREAD);
}

long task_syscall_pc(pid_t tid, uint64_t *pc)
{
	return task_syscall_args(tid, NULL, pc);
}

long task_syscall(pid_t tid)
{
	uint64_t pc;
	return task_syscall_pc(tid, &pc);
}

int task_blocks_signal(pid_t tid, int sig)
{
	char path[64], buf[4096];
	int err = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	const char *v = status_field(path, "\nSigBlk:", buf, sizeof(buf), &err);
	if (!v)
		return err;
	unsigned long long mask = strtoull(v, NULL, 16);
	return (mask >> (sig - 1)) & 1;
}

long task_age_ms(pid_t tid)
{
	char buf[1024];

	if (read_task_file(tid, "stat", buf, sizeof(buf)) < 0)
		return -ESRCH;
	/* Field 22, starttime, in clock ticks since boot; the fields after
	 * the command name, which may hold spaces, start past its ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -EINVAL;
	unsigned long long start = strtoull(p + 1, NULL, 10);
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec now;
	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &now))
		return -EINVAL;
	long long age = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 - (long long)(start * 1000 / (unsigned long long)hz);
	return age < 0 ? 0 : (long)age;
}

uint64_t task_cpu_ns(pid_t tid)
{
	/* The kernel's encoding of a thread's CPU clock (MAKE_THREAD_CPUCLOCK
	 * with CPUCLOCK_SCHED), readable within the thread group only. */
	clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 6);
	struct timespec t;
	if (clock_gettime(clock, &t))
		return 0;
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int task_stopped_pc(pid_t tid, uint64_t *pc)
{
	char buf[1024];

	if (read_task_file(tid, "stat", buf, sizeof(buf)) < 0)
		return -ESRCH;
	const char *p = strrchr(buf, ')');
	if (!p || (p[2] != 't' && p[2] != 'T'))
		return 0;
	/* Stopped, so /proc tells its registers: "NR ... SP PC" or "-1 SP PC". */
	if (read_task_file(tid, "syscall", buf, sizeof(buf)) < 0)
		return -ESRCH;
	if (buf[0] == 'r')
		return 0; /* "running": it left the stop meanwhile */
	const char *last = strrchr(buf, ' ');
	if (!last)
		return -EINVAL;
	*pc = strtoull(last + 1, NULL, 16);
	return 1;
}

long task_count_fast(void)
{
	char buf[4096];
	int err = 0;
	const char *v = status_field("/proc/self/status", "\nThreads:", buf, sizeof(buf), &err);

	return v ? strtol(v, NULL, 10) : err;
}

long task_count(void)
{
	struct task_list list;
	if (task_list_read(&list))
		return -1;
	long n = (long)list.cnt + 1;
	task_list_free(&list);
	return n;
}
