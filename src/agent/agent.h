/* agent.h - the agent's top (agent.c), for the session of an attached
 * recording (remote_attach.c). */
#ifndef NEEDLE_AGENT_H
#define NEEDLE_AGENT_H

#include <stddef.h>

/* Run start-up once (it may have run already): 0 or its error. */
int agent_start(void);
/* Which sites discovery makes (SITE_KINDS_*), before start-up. */
void agent_site_kinds(int kinds);
/* libneedle was loaded into a running process: give the threads and
 * signal handlers that existed before it the watch that later ones get
 * through interposition (interpose_bind_loaded, sigmask_watch_adopt). */
void agent_adopt_process(void);
/* An attach in steps (needle record -p, recording every function): on,
 * agent_start discovers the program and the C library only, and each
 * agent_discover_step (once the recording runs) one more object, which
 * it then records too; the number of objects still left.  Off, every
 * discovery takes all the objects there are. */
void agent_discover_in_steps(int on);
size_t agent_discover_step(void);
/* The recorder started (stopping): wire (unwire) the thread-state pool's
 * untraced-thread counters to the buffer's header. */
void agent_recording_started(void);
void agent_recording_stopping(void);

#endif
