/* record_hold.h - holding the recorded process's threads that block
 * every signal, for the agent's patch batches (hold.c). */
#ifndef NEEDLE_RECORD_HOLD_H
#define NEEDLE_RECORD_HOLD_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

struct shm_header;

struct record_hold {
	struct shm_header *shm;
	_Atomic pid_t pid; /* whose threads may be held (record_hold_retarget) */
	pthread_t thread;
	_Atomic int quit;
	int started;
};

/* Serve the requests of shm's struct shm_hold for process pid, from a
 * thread of needle record's, until record_hold_stop.  0 or negative
 * errno (then nobody serves, and the agent refuses as before). */
int record_hold_start(struct record_hold *rh, struct shm_header *shm, pid_t pid);
/* Serve process pid from the next request on: a child forked during the
 * recording, while needle record lets go of it (release.c), once the
 * recorded process asks for no more holds. */
void record_hold_retarget(struct record_hold *rh, pid_t pid);
void record_hold_stop(struct record_hold *rh);

#endif
