/* usdt.h - the USDT (SystemTap SDT) probes an object declares: its
 * .note.stapsdt notes, as <sys/sdt.h>'s STAP_PROBE macros leave them
 * (usdt.c). */
#ifndef NEEDLE_USDT_H
#define NEEDLE_USDT_H

#include <stdint.h>

struct usdt_note {
	const char *provider, *name, *args; /* valid during the callback only */
	uint64_t pc_off;   /* the probe's NOP: an offset in the file, as a uprobe takes it */
	uint64_t sema_off; /* its semaphore (a 16-bit count): an offset in the file, 0 for none */
};

/* Call cb for each probe of the object at path; cb returns non-zero to
 * stop.  The number of probes seen, or -1 if the file is no ELF object
 * libelf reads. */
int usdt_each(const char *path, int (*cb)(void *arg, const struct usdt_note *n), void *arg);

#endif
