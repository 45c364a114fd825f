/* ctl_protocol.h - `needle ctl` and a recording process's control socket
 * (src/cli/ctl/ctl.c and src/agent/record/control.c).
 *
 * The process that serves needle ctl listens on the abstract UNIX socket
 * CTL_SOCKET_NAME (its own PID in it).  One request per connection, one
 * reply line:
 *
 *   request   either a command line ended by '\n', at most CTL_LINE_MAX
 *             bytes:
 *               snapshot         a --snapshot recording writes one now
 *               kernel on|off    a --kernel recording's kernel events
 *                                recorded or paused (needle record
 *                                applies it: shm_header.kernel_paused)
 *               status           what is traced now
 *             or CTL_CONFIG_REQUEST: the line "config N\n", then N bytes
 *             (at most CTL_CONFIG_MAX) of a record_config
 *             (common/record_config.h) whose fields given are the ones
 *             changed: needle ctl's filter GLOB... (filter: the globs,
 *             one per line; none: all), notrace GLOB... (notrace; none:
 *             none), tracer function|function_graph (graph) and depth N
 *             (depth; 0: unlimited).  Any other field is refused, and so
 *             is the whole request if one field is.
 *   reply     CTL_REPLY_OK "<what is traced now>" or CTL_REPLY_ERROR
 *             "<why>", a line
 *
 * Only the process's owner and root are served (SO_PEERCRED). */
#ifndef NEEDLE_CTL_PROTOCOL_H
#define NEEDLE_CTL_PROTOCOL_H

#define CTL_SOCKET_NAME "needle-%d"  /* abstract: after a NUL byte */
#define CTL_LINE_MAX 4096
#define CTL_CONFIG_REQUEST "config %zu\n"
#define CTL_CONFIG_MAX (4u << 20)   /* filter and notrace, each at most RECORD_CONFIG_GLOBS_MAX */
#define CTL_REPLY_OK "ok "
#define CTL_REPLY_ERROR "error "
#define CTL_REPLY_TIMEOUT_S 30       /* needle ctl's wait for the reply */

#endif
