/* refresh.h - discover objects loaded since the last refresh and make
 * their sites ready to switch (see refresh.c). */
#ifndef NEEDLE_REFRESH_H
#define NEEDLE_REFRESH_H

/* The number of new sites, or a negative errno.  Caller holds the
 * control mutex. */
int refresh_locked(void);

#endif
