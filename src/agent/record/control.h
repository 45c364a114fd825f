/* control.h - the control socket of a recording process (needle ctl). */
#ifndef NEEDLE_CONTROL_H
#define NEEDLE_CONTROL_H

/* Start the listener thread on the abstract UNIX socket "needle-<pid>".
 * 0 or negative errno. */
int control_start(void);
/* Stop the listener thread and release the name (detach).  Waits for a
 * command being served to finish. */
void control_stop(void);

#endif
