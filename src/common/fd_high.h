/* fd_high.h - a descriptor moved out of the program's way: needle's own
 * descriptors in a traced process (the control socket, a started
 * program's buffer and meta file) sit just below min(RLIMIT_NOFILE,
 * 1024), where a program that counts up from 3, or closes "everything
 * from N", is least likely to meet them. */
#ifndef NEEDLE_FD_HIGH_H
#define NEEDLE_FD_HIGH_H

#include <fcntl.h>
#include <sys/resource.h>

/* A copy of fd there, with cmd F_DUPFD or F_DUPFD_CLOEXEC; -1 with errno
 * (the original is left as it was either way). */
static inline int fd_dup_high(int fd, int cmd)
{
	struct rlimit rl;
	long top = 1024;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < (rlim_t)top)
		top = (long)rl.rlim_cur;
	return fcntl(fd, cmd, (int)(top - 32 > 10 ? top - 32 : 10));
}

#endif
