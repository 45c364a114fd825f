/* sysflags.c - system calls whose arguments are flags or a signal, with
 * known values, for the views' names of them (test_uftrace_values.sh):
 * uftrace shows open("/dev/zero", O_CLOEXEC|O_RDWR), PROT_READ,
 * MAP_ANON|MAP_PRIVATE, SIGNULL. */
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	int fd = open("/dev/zero", O_RDWR | O_CLOEXEC);
	void *p = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	mprotect(p, 4096, PROT_READ);
	/* A bit PROT_ has no name for: the mprotect fails, its value shown
	 * as a number. */
	mprotect(p, 4096, 0x10);
	madvise(p, 4096, MADV_DONTNEED);
	munmap(p, 4096);
	kill(0, 0);
	close(fd);
	return 0;
}
