/* overwrite.h - the overwrite rings of needle record --snapshot (overwrite.c). */
#ifndef NEEDLE_OVERWRITE_H
#define NEEDLE_OVERWRITE_H

#include <stdint.h>

struct shm_header;

/* A thread's full chunks, oldest first: entries (gen << 32 | index + 1). */
struct overwrite_list {
	uint64_t head, tail;
	uint32_t cnt;
};

/* Once per recording, for a buffer in snapshot mode (nothing otherwise).
 * 0, or -1 out of memory. */
int overwrite_init(struct shm_header *h);
/* The thread published chunk idx, whose generation was gen while it was
 * still the thread's (read before its state became CHUNK_FULL: after
 * that another thread may take it, and a generation read then could be
 * the taker's). */
void overwrite_published(struct overwrite_list *l, uint32_t idx, uint32_t gen);
/* A full chunk to write over, won (its generation now odd: the caller
 * rewrites the header, then bumps it even); -1 if none. */
int64_t overwrite_take(struct overwrite_list *l, struct shm_header *h);

#endif
