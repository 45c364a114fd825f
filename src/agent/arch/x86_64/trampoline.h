/* trampoline.h - the assembly entry and return trampolines.  The C
 * functions they call are dispatch's (dispatch/dispatch.h). */
#ifndef NEEDLE_TRAMPOLINE_H
#define NEEDLE_TRAMPOLINE_H

#include <stdint.h>


/* Reached from a site's stub with r11 = struct site *.  The code up to
 * needle_entry_trampoline_end is position-independent and is copied into
 * every stub area. */
void needle_entry_trampoline(void);
extern const char needle_entry_trampoline_end[];
extern const char needle_entry_dispatch_slot[];
/* Reached from a relocated site's stub (the detour pushed r11 first):
 * every register is put back.  Inside the copied blob. */
void needle_entry_trampoline_full(void);
/* Reached from an exit site's stub (which pushed r11, and loaded the exit
 * site into it): every register is put back.  Inside the copied blob. */
void needle_exit_trampoline(void);
/* The same for an exit site right before a ret, from a stub that leaves
 * r11 alone: only the return value's registers are put back. */
void needle_exit_trampoline_ret(void);
extern const char needle_exit_dispatch_slot[];
/* The direct path's C entry points (entry, exit site before a ret) and
 * the address of the count of consumers that have one
 * (dispatch_direct.c); in the copied blob. */
extern const char needle_direct_entry_slot[];
extern const char needle_direct_users_slot[];
extern const char needle_direct_exit_site_slot[];
/* A calling site's stub jumps to the thunk (in the copied blob), which
 * jumps through the slot to the calling trampoline; the function's code,
 * called by it, returns to needle_calling_return.  Its full path is
 * needle_calling_full.  All three are libneedle's (trampoline.S).  A
 * relocated site's detour jumps to its stub likewise, and the _relocated
 * three put back every register. */
void needle_calling_thunk(void);
extern const char needle_calling_slot[];
void needle_calling_trampoline(void);
void needle_calling_return(void);
void needle_calling_thunk_relocated(void);
extern const char needle_calling_relocated_slot[];
void needle_calling_trampoline_relocated(void);
void needle_calling_return_relocated(void);
/* A calling site's probe stub jumps to this thunk (in the copied blob),
 * which jumps through the slot to the probe path, needle_probe_calling
 * (dispatch/probe_trampoline.S). */
void needle_probe_thunk(void);
extern const char needle_probe_slot[];
/* Reached by the ret of a function whose return address was hijacked. */
void needle_return_trampoline(void);
/* The same for a relocated site's function: every register comes back. */
void needle_return_trampoline_full(void);

/* The forced-unwind landing pad of a hijacked return (unwind.c). */
void needle_unwind_landing(void);

#endif
