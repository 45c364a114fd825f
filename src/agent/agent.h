/* agent.h - the agent's top (agent.c), for the session of an attached
 * recording (remote_attach.c). */
#ifndef NEEDLE_AGENT_H
#define NEEDLE_AGENT_H

/* Run start-up once (it may have run already): 0 or its error. */
int agent_start(void);
/* Which sites discovery makes (SITE_KINDS_*), before start-up. */
void agent_site_kinds(int kinds);
/* libneedle was loaded into a running process: give the threads and
 * signal handlers that existed before it the watch that later ones get
 * through interposition (interpose_bind_loaded, sigmask_watch_adopt). */
void agent_adopt_process(void);
/* The recorder started (stopping): wire (unwire) the thread-state pool's
 * untraced-thread counters to the buffer's header. */
void agent_recording_started(void);
void agent_recording_stopping(void);

#endif
