/* hold_client.h - threads that block every signal, held by needle record
 * with ptrace during a patch batch (see hold_client.c). */
#ifndef NEEDLE_HOLD_CLIENT_H
#define NEEDLE_HOLD_CLIENT_H

struct shm_header;

/* Offer holds through this buffer's header to the patch layer, until
 * hold_client_detach (called before the buffer is unmapped). */
void hold_client_attach(struct shm_header *shm);
void hold_client_detach(void);

#endif
