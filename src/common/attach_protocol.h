/* attach_protocol.h - the session between `needle record -p` and the agent
 * it loaded into a running process (src/cli/record/attach.c and
 * src/agent/remote_attach.c).
 *
 * needle record listens on an abstract UNIX socket whose name it passes to
 * needle_remote_attach() in the target; the agent's session thread
 * connects, and the two speak:
 *
 *   needle -> agent   struct attach_hello with SCM_RIGHTS {buffer, meta},
 *                     then config_len bytes: what to record, encoded as
 *                     common/record_config.h says (the same bytes a
 *                     program needle record starts reads from its memfd)
 *   (the agent starts the recorder; its result goes through the buffer
 *    header and the meta file, as for a program needle record started)
 *   needle -> agent   ATTACH_DETACH: stop recording
 *   agent  -> needle  ATTACH_DETACHED: every site is back to its NOP and
 *                     the buffer is unmapped
 *   agent  -> needle  at any time before that: ATTACH_MESSAGE, a level
 *                     byte ('0' warning, '1' information), the text (at
 *                     most ATTACH_MESSAGE_MAX bytes, as libneedle would
 *                     have printed it after "needle: ") and a NUL: what
 *                     the agent has to say, for needle record to print
 *                     (the process's own stderr is never written)
 *
 * Before that, libneedle-boot.so (src/boot/boot.c) may connect instead, to
 * send one line ATTACH_ERROR_WRITE when libneedle could not be loaded or
 * its session started, and close.
 *
 * End of file on either side ends the session: the agent detaches when
 * needle record goes away (killed, or its socket lost), and needle record
 * stops when the agent's side closes (the target exited or exec'd). */
#ifndef NEEDLE_ATTACH_PROTOCOL_H
#define NEEDLE_ATTACH_PROTOCOL_H

#include <stdint.h>

#include "common/record_config.h"

#define ATTACH_MAGIC 0x4e41544eu /* "NTAN" */
#define ATTACH_VERSION 4
#define ATTACH_NAME_MAX 100     /* bytes of the socket name, without the NUL */
/* The most config_len may be: every string field at its largest. */
#define ATTACH_CONFIG_MAX (RECORD_CONFIG_ARGS_MAX + 16 * RECORD_CONFIG_GLOBS_MAX)

struct attach_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t config_len; /* bytes of the record_config encoding that follow */
	uint32_t flags;      /* 0, or ATTACH_HELLO_RELEASE (with ATTACH_HELLO_UNSERVED) */
};
/* The hello of a session that only ends a fork's copy of a recording (a
 * child forked while its parent was recorded): no descriptor comes with
 * it, config_len is 0, and the agent answers ATTACH_DETACHED once the
 * child's sites are back to their NOPs and the buffer is unmapped. */
#define ATTACH_HELLO_RELEASE 1u
/* With it: needle record serves no hold for the child's batch (the copy
 * asks through a dead recording's header that it cannot map), so the
 * agent must not wait for one. */
#define ATTACH_HELLO_UNSERVED 2u

/* The stack that the borrowed thread ran the calls on (mmap'ed by
 * needle record in the process, ATTACH_VISIT_STACK bytes): needle_boot
 * gets its address and unmaps it once the thread is given back, which
 * needle record tells by writing ATTACH_STACK_RELEASED to its lowest
 * word.  Unmapping it on the borrowed thread would hold that thread for a
 * TLB shootdown across the process's CPUs (0.3-0.6 ms measured). */
#define ATTACH_VISIT_STACK (256u << 10)
#define ATTACH_STACK_RELEASED 0x4b434154535f4e45ull /* "EN_STACK" */

#define ATTACH_ERROR_WRITE "E %d %s\n"  /* errno, message */
#define ATTACH_ERROR_READ "E %d %n"      /* then the message from %n */

#define ATTACH_DETACH 'D'
#define ATTACH_DETACHED 'd'
#define ATTACH_MESSAGE 'm'
#define ATTACH_MESSAGE_MAX 1000

#endif
