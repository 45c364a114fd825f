/* control.h - the control socket of a recording process (needle ctl). */
#ifndef NEEDLE_CONTROL_H
#define NEEDLE_CONTROL_H

#include <stddef.h>
#include <stdint.h>

/* A request (common/ctl_protocol.h) as the owner of the socket answers
 * it: its line, without the newline, and for a CTL_CONFIG_REQUEST the
 * record_config bytes that followed the line (body, body_len; NULL and 0
 * for any other request): the reply's text into msg, 0 for "ok",
 * anything else for "error".  Called on the thread that serves the
 * socket, one request at a time. */
typedef int (*control_handler)(char *line, const uint8_t *body, size_t body_len, char *msg, size_t msglen);

/* Open the abstract UNIX socket CTL_SOCKET_NAME and serve it with
 * handle_request: from a listener thread of its own (own_thread), or from
 * the caller's loop, which polls control_poll_fd() and calls
 * control_serve_pending().  0 or negative errno.  control.c is transport
 * only: what a command does is its caller's (the recorder's). */
int control_start(int own_thread, control_handler handle_request);
/* For a caller that serves the socket: the descriptor to poll for POLLIN
 * (opened again first if the program took it), or -1 when none is open
 * now or nothing is served.  Asked again at least once a second: the
 * program may close the descriptor while the caller sleeps in poll,
 * which then holds the old socket, and its name, until it returns. */
int control_poll_fd(void);
/* Serve the connections that wait, without waiting for one. */
void control_serve_pending(void);
/* Stop serving and release the name (detach).  Waits for a command being
 * served by the listener thread to finish. */
void control_stop(void);

#endif
