/* trap.h - the SIGTRAP handler that makes in-flight int3s harmless. */
#ifndef NEEDLE_TRAP_H
#define NEEDLE_TRAP_H

/* Install the handler, or re-install it in front of a handler the program
 * installed since.  0 or negative errno. */
int trap_install(void);

#endif
