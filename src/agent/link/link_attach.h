/* link_attach.h - the attach machinery, for users inside the agent (the recorder)
 * that pick their sites themselves. */
#ifndef NEEDLE_LINK_H
#define NEEDLE_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "needle.h"

struct site;

/* Attach to sites[0..cnt) (a malloc'ed array the link takes over, also on
 * failure).  Caller holds the control mutex.  Returns cnt or -errno. */
int link_attach_sites_locked(struct site **sites, size_t cnt, needle_entry_fn entry, needle_exit_fn exit,
			     void *user_data, uint32_t flags, struct needle_link **out);

/* Make the link trace exactly sites[0..cnt) (array taken over): sites it
 * gains and loses change in one patch batch, followed by a grace period.
 * Its consumer stays, so calls in flight on any site keep their exits.
 * Caller holds the control mutex.  Returns cnt or -errno. */
int link_update_sites_locked(struct needle_link *link, struct site **sites, size_t cnt);

/* Swap the link's handlers; calls already entered keep the exit handler
 * they were entered with only if it is the same function.  Locked. */
int link_set_handlers_locked(struct needle_link *link, needle_entry_fn entry, needle_exit_fn exit);

#endif
