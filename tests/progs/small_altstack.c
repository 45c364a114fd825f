/* small_altstack - a signal handler whose run is the thread's first
 * traced call, on an alternate stack of SIZE bytes between two
 * inaccessible pages: taking the thread's state there would overflow it.
 * Then handler is called again on the thread's own stack.
 *
 *   small_altstack SIZE   (a multiple of the page size) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile long got;

__attribute__((noinline)) void handler(int sig)
{
	got += sig;
}

int main(int argc, char **argv)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = argc > 1 ? strtoul(argv[1], NULL, 0) : page;
	char *m = mmap(NULL, size + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) || mprotect(m + page + size, page, PROT_NONE))
		return 1;
	stack_t ss = { .ss_sp = m + page, .ss_size = size };
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_ONSTACK };
	if (sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL))
		return 1;
	raise(SIGUSR1);
	handler(0);
	printf("got %ld\n", got);
	return 0;
}
