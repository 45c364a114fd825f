/* control.h - the control socket of a recording process (needle ctl). */
#ifndef NEEDLE_CONTROL_H
#define NEEDLE_CONTROL_H

/* Start the listener thread on the abstract UNIX socket "needle-<pid>".
 * 0 or negative errno. */
int control_start(void);

#endif
