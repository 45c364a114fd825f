/* prepare.h - normalize newly discovered sites (see prepare.c). */
#ifndef NEEDLE_PREPARE_H
#define NEEDLE_PREPARE_H

struct discovery;

/* Rewrite d's sites into the form that a CALL can replace: 0, or a
 * negative errno after marking the sites left unprepared unusable.
 * Caller holds the control mutex. */
int patch_prepare(struct discovery *d);

#endif
