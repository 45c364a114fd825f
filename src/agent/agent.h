/* agent.h - process-wide start-up of libneedle and the control mutex that
 * serializes everything that changes sites, links or patches. */
#ifndef NEEDLE_AGENT_H
#define NEEDLE_AGENT_H

/* Initialize once (if needed) and take the control mutex.  Returns 0, or
 * the negative errno of a failed initialization (mutex not taken). */
int agent_lock(void);
void agent_unlock(void);

#endif
