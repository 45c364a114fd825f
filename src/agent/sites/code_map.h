/* code_map.h - where the code of ELF objects lies, for deciding whether a
 * call's return may be hooked.
 *
 * A return address that points outside every loaded object's executable
 * segments points into code generated at run time (a JIT's, an
 * interpreter's, HotSpot's stubs, V8's copy of its builtins).  Such
 * runtimes find their frames by reading the return address above the
 * stack pointer they saved when they called out (HotSpot's
 * last_Java_sp[-1], V8's exit frames), so that slot must keep the real
 * address: the call's exit is not hooked.  The same holds for code a
 * runtime keeps inside an object and walks by its own rules (a module's
 * foreign range, module.h).
 *
 * Invariants: the map is replaced, never changed, under the control
 * mutex, after each discovery round and each forget of unloaded objects;
 * readers are inside an RCU read section (dispatch), so a replaced map is
 * freed only by code_map_reclaim after a grace period.  It lists every
 * object dl_iterate_phdr reports, libneedle, the loader and the vDSO
 * included, minus the foreign ranges of known modules.  An object loaded
 * since the last rebuild is absent: returns into it are not hooked until
 * the next refresh, unless the loader's lookup finds it
 * (code_map_hookable). */
#ifndef NEEDLE_CODE_MAP_H
#define NEEDLE_CODE_MAP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct code_map {
	size_t cnt;         /* spans of code, v[0..cnt): sorted, disjoint */
	size_t foreign_cnt; /* foreign ranges, v[cnt..cnt + foreign_cnt) */
	struct code_range {
		uint64_t lo, hi;
	} v[];
};

extern _Atomic(const struct code_map *) code_map_current;

/* Rebuild from the loaded objects and the module list.  0 or -ENOMEM
 * (the old map stays).  Caller holds the control mutex. */
int code_map_rebuild(void);

/* Free the maps replaced before the last grace period.  Caller holds the
 * control mutex, right after a grace period. */
void code_map_reclaim(void);

/* Is addr in an object's code, and in no foreign range?  From the map
 * (binary search), and for an address it does not hold, the loader's own
 * lock-free lookup (_dl_find_object, glibc 2.35 on; async-signal-safe),
 * which knows the objects loaded since the last rebuild too, those that
 * were never discovered (loaded by a dlopen the interposer passed on)
 * included.  No lock, no store. */
int code_map_hookable(uint64_t addr);

/* The map alone.  Without a map (before the first discovery) no address
 * is held. */
static inline int code_map_holds(uint64_t addr)
{
	const struct code_map *m = atomic_load_explicit(&code_map_current, memory_order_acquire);
	if (!m)
		return 0;
	size_t lo = 0, hi = m->cnt;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < m->v[mid].lo)
			hi = mid;
		else if (addr >= m->v[mid].hi)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

#endif
