/* process_ids.c - see process_ids.h. */
#include <unistd.h>

#include "agent/base/process_ids.h"

uint32_t process_pid, process_ppid;

void process_ids_init(void)
{
	process_pid = (uint32_t)getpid();
	process_ppid = (uint32_t)getppid();
}

void process_ids_forked(uint32_t pid)
{
	process_ppid = process_pid;
	process_pid = pid ? pid : (uint32_t)getpid();
}
