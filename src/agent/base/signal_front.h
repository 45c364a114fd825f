/* signal_front.h - a signal needle acts on in front of the program's
 * handler (needle record --signal SIG@trace_on|trace_off|finish).
 *
 * The kernel holds needle's handler for a fronted signal; the program's
 * action is kept here, is what its sigaction and signal calls set and
 * read back (through sigmask_watch.c's interposers), and runs from
 * needle's handler between the two callbacks. */
#ifndef NEEDLE_SIGNAL_FRONT_H
#define NEEDLE_SIGNAL_FRONT_H

#include <signal.h>

/* What needle does when sig arrives: before runs before the program's
 * handler, after once it has returned (either may be NULL).  Both run in
 * the signal handler: async-signal-safe, errno is saved around them.
 * Called again for a signal already fronted, it replaces the callbacks.
 * 0, or negative errno (-EINVAL: a signal needle cannot take). */
int signal_front_add(int sig, void (*before)(int sig), void (*after)(int sig));

/* Give every fronted signal back: the program's action into the kernel
 * (a recording that ends, or needle record -p letting go), so that the
 * program's next signal meets what it set itself. */
void signal_front_remove_all(void);

/* Is sig fronted?  A lock-free read: sigaction may run in a handler. */
int signal_front_owns(int sig);

/* The program's sigaction for a fronted signal: act (already adjusted by
 * sigmask_watch.c) becomes the program's action and needle's handler
 * takes its mask and flags; old gets the program's previous action.
 * sigaction's return convention (0, or -1 with errno). */
int signal_front_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

#endif
