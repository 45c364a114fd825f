/* thread_stop.h - stop every other thread of the process at a signal
 * handler, for the rare rewrites that the int3 protocol cannot make safe:
 * turning gcc's five 1-byte NOPs into one NOP5 (a thread may sit between
 * two of them) and patching when a thread blocks SIGTRAP.
 *
 * A stopped thread whose PC is inside one of the given sites is moved to
 * the site's end, which is harmless because the bytes it skips are NOPs.
 * Stopping interrupts system calls; those the kernel cannot restart
 * return EINTR, so this is used only where nothing else works. */
#ifndef NEEDLE_THREAD_STOP_H
#define NEEDLE_THREAD_STOP_H

#include <stddef.h>
#include <stdint.h>

struct site;

/* Stop all other threads; sites[0..cnt) (sorted by address) are the ranges
 * to move PCs out of.  -EDEADLK if a thread blocks the stop signal. */
int thread_stop_all(struct site *const *sites, size_t cnt);
void thread_resume_all(void);
/* The signal used to stop threads (which a helper thread must not block). */
int thread_stop_signal(void);

#endif
