/* recorder.c - the tracers behind `needle record` (see recorder.h): the
 * consumer's handlers, the meta file, the selection of sites by glob,
 * reconfiguration, the environment's restoration, start and stop.
 *
 * What runs on the hot path: the handlers (graph_entry, graph_exit,
 * function_entry, context_switch) and what they call.  They store events
 * only through event_writer.h (plain stores into the thread's chunk, see
 * its invariants), read the site flags and the object spans with relaxed
 * or acquire loads, and take no lock, allocate nothing and make no system
 * call, with two exceptions off the common path: a coroutine switch
 * (swapcontext) takes context_lock to number its contexts (context_id),
 * and entry_only_note does one atomic OR per entry-only function.
 * Everything else here (start, stop, reconfigure, a dlopen'ed object) is
 * the cold side: it allocates, locks config_lock and writes files, and
 * changes what the handlers see through the link (needle_link_update,
 * needle_link_set_handlers), through site flags written before their site
 * is patched, or with single word stores (rec_active, rec_max_depth).
 *
 * Configuration (struct record_config, common/record_config.h: one type,
 * one codec) comes from one of two places: a memfd that `needle record`
 * leaves a program it starts, whose descriptor is the only thing it adds
 * to the environment besides LD_PRELOAD (recorder_env_config, read once
 * by the constructor), or the session socket of `needle record -p` when
 * libneedle was loaded into a running process (agent/remote_attach.c),
 * the same bytes after the hello.  The variable is removed once read, and
 * LD_PRELOAD is given back the value it had before `needle record` added
 * libneedle, so that the traced program sees its own environment.  An
 * attached recording touches no environment at all.
 *
 * recorder_stop ends a recording in a process that goes on (detach): the
 * link is destroyed (every site back to its NOP in one batch, then a grace
 * period), so no handler can run any more and the buffer can be unmapped;
 * the chunks threads still own are left for `needle record` to salvage by
 * their fill level, as after a crash.
 *
 * The recorder is an ordinary consumer of the public API (needle.h), as
 * any tool built on libneedle could be: its per-thread state (the chunk it
 * fills) is the link's thread_data, it hears of thread exits, forks and
 * coroutine switches through the link's callbacks, and it changes its
 * functions and handlers with needle_link_update and
 * needle_link_set_handlers.  It includes nothing of the layers below but
 * the agent's logging (docs/design.md, "Layers"). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/base/phdr_walk.h"
#include "agent/base/control_lock.h"
#include "agent/base/log.h"
#include "agent/base/safe_copy.h"
#include "agent/base/signal_front.h"
#include "agent/record/control.h"
#include "agent/record/args.h"
#include "agent/record/event_writer.h"
#include "agent/record/recorder_direct.h"
#include "agent/record/overwrite.h"
#include "agent/record/hold_client.h"
#include "agent/record/name_index.h"
#include "agent/record/recorder.h"
#include "agent/record/trigger.h"
#include "common/meta_protocol.h"
#include "common/pattern.h"
#include "common/record_config.h"
#include "common/shm_layout.h"
#include "common/tsc.h"
#include "common/value_spec.h"
#include "common/fd_high.h"
#include "needle.h"

static size_t shm_mapped; /* bytes of the buffer mapped at shm */
static int attach_tried;  /* recorder_start got as far as needle_attach */
static int env_mode;   /* configured from the environment (restore it) */
/* An exec'ed program joining its parent image's recording (config image
 * > 0): it shares the buffer and the meta file, writes its records in
 * blocks of its own and never the recording's state: if it cannot be
 * traced it runs untraced and the recording goes on. */
static int join_mode;
/* An exec'ed program with nothing to trace that still passes the
 * recording on to the programs it exec's (fail()). */
static int exec_forward;
uint32_t rec_max_depth = UINT32_MAX;
int rec_active;
static struct needle_link *rec_link;
static int graph_tracer;
static char *cur_filter, *cur_notrace; /* newline-separated globs, or NULL */
/* Serializes reconfigurations (control.c) with each other. */
static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;

/* Functions that had a call recorded entry-only because its return could
 * not be hooked (NEEDLE_ENTRY_NO_EXIT: called from generated code), one
 * bit per site id (21 bits), each counted once in the buffer header for
 * `needle info`.  Untouched pages of it are never committed; a word is
 * written once per function, so its line is read-mostly. */
static _Atomic uint64_t entry_only_seen[(1u << 21) / 64];
static _Atomic int entry_only_used;

static __attribute__((noinline)) void entry_only_note(uint32_t site_id)
{
	uint64_t bit = 1ull << (site_id & 63);
	_Atomic uint64_t *w = &entry_only_seen[(site_id >> 6) & ((1u << 15) - 1)];

	if (atomic_load_explicit(w, memory_order_relaxed) & bit)
		return;
	if (!(atomic_fetch_or_explicit(w, bit, memory_order_relaxed) & bit) && shm)
		atomic_fetch_add_explicit(&shm->funcs_entry_only, 1, memory_order_relaxed);
	atomic_store_explicit(&entry_only_used, 1, memory_order_relaxed);
}

/* The site flags (rec_site_flags, recorder_direct.h). */
enum {
	SF_SUBTREE = 1, /* -F: its calls open a recorded subtree */
	SF_DROP = 2,    /* -N: its calls and their subtrees are not recorded */
	/* SF_LIB (4, recorder_direct.h): a relocated function of a library: a library call */
	/* SF_HIDE (8, recorder_direct.h): never recorded (runtime_plumbing) */
	SF_AGENT = 16,  /* an interposer of libneedle's (with SF_LIB) */
	SF_TWIN = 32,   /* a library function the program has one of its own name of (twin_of) */
	SF_REAL = 64,   /* a library function libneedle interposes and calls for the program (is_real_of_interposer) */
	/* SF_TRIGGER (128, recorder_direct.h): a --trigger's, timed here */
	SF_TRACE_ON = 256,  /* -T FUNC@trace_on: recording resumes at its entry */
	SF_TRACE_OFF = 512, /* -T FUNC@trace_off: recording pauses at its entry */
	SF_FINISH = 1024,   /* -T FUNC@finish: its entry is the last event */
	SF_JUMPS = 2048,     /* setjmp, _setjmp: jump to __sigsetjmp (jumped_to) */
	SF_JUMPED_TO = 4096, /* __sigsetjmp */
};
#define SF_SWITCHES (SF_TRACE_ON | SF_TRACE_OFF | SF_FINISH)

/* A program's function of a library function's name (a malloc wrapper)
 * that calls the library's (through dlsym(RTLD_NEXT) or a pointer): the
 * inner call is the same call, not one of its own, as uftrace, which
 * sees only PLT calls, shows it.  Pairs (library site, program site) in
 * increasing library site order; a reader loads the count with acquire
 * (pairs with the store release in twin_add). */
#define TWIN_MAX 256
static struct twin {
	uint32_t lib, prog;
} twins[TWIN_MAX];
static _Atomic uint32_t twin_cnt;

static void twin_add(uint32_t lib, uint32_t prog)
{
	uint32_t n = atomic_load_explicit(&twin_cnt, memory_order_relaxed);
	if (n == TWIN_MAX || (n && twins[n - 1].lib >= lib))
		return;
	twins[n] = (struct twin){ lib, prog };
	atomic_store_explicit(&twin_cnt, n + 1, memory_order_release);
}

static uint32_t twin_of(uint32_t lib)
{
	uint32_t n = atomic_load_explicit(&twin_cnt, memory_order_acquire), lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (twins[mid].lib < lib)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && twins[lo].lib == lib ? twins[lo].prog : UINT32_MAX;
}
_Atomic uint16_t rec_site_flags[SITE_FLAG_IDS];
_Atomic int rec_paused;
/* -T's trace_on, trace_off and finish functions: lines as -P's. */
static char *cur_on, *cur_off, *cur_finish;
int rec_have_subtree;
int rec_have_flags;
static int libcall_mode; /* LIBCALL_* */
int rec_libcall_program;
uint64_t rec_program_lo, rec_program_hi;
static uint64_t min_size; /* -Z: functions smaller than this are not patched */
/* uftrace's -P: it selects which of the program's functions are patched;
 * the calls it makes into libraries are still recorded as --libcall says.
 * 0 for -p, whose -F and -N become single-function patch filters. */
static int patch_keeps_libcalls;
/* RECORD_LIBCALL_*: the calls the program makes, those between objects,
 * none, every call. */
enum { LIBCALL_PROGRAM, LIBCALL_NEST, LIBCALL_NONE, LIBCALL_ALL };
/* Lines "GLOB" or "GLOB<tab>POS": POS is where the -F or -N was given
 * among both (needle record adds it when both are given). */
static char *cur_subtree, *cur_drop;
static size_t subtree_sites; /* sites -F names */
static size_t patch_sites;   /* sites -P names (not the library calls it lets through) */
static size_t patch_libcalls_dropped; /* library functions -P names that --no-libcall drops */

/* The loaded objects' address spans, appended as objects appear and never
 * changed but for the instrumented flag (an object built with patchable
 * entries: its functions are not library calls); objs[0] is the
 * program.  The library-call view asks whether a return address lies in
 * the program, or in another object than the called function's. */
#define OBJ_MAX 1024
static struct obj_span {
	uint64_t lo, hi;
	_Atomic uint8_t instrumented;
	uint8_t loader; /* the dynamic loader (AT_BASE): set before obj_cnt publishes it */
} objs[OBJ_MAX];
static _Atomic unsigned obj_cnt;

/* recorder_thread_loading: this thread is inside dlopen, where the
 * objects being loaded (their constructors run) are in no span yet. */
static __thread int rec_loading __attribute__((tls_model("initial-exec")));

void recorder_thread_loading(int loading)
{
	rec_loading = loading;
}

static struct obj_span *obj_of(uint64_t addr)
{
	unsigned n = atomic_load_explicit(&obj_cnt, memory_order_acquire);
	for (unsigned i = 0; i < n; i++)
		if (addr >= objs[i].lo && addr < objs[i].hi)
			return &objs[i];
	return NULL;
}

static int add_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	int *first = arg;
	(void)size;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	int main_prog = *first;
	*first = 0;
	if (lo >= hi)
		return 0;
	unsigned n = atomic_load_explicit(&obj_cnt, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++)
		if (objs[i].lo == lo && objs[i].hi == hi)
			return 0;
	if (n == OBJ_MAX)
		return 0;
	objs[n].lo = lo;
	objs[n].hi = hi;
	objs[n].loader = !main_prog && info->dlpi_addr && info->dlpi_addr == getauxval(AT_BASE);
	if (!n) {
		rec_program_lo = lo;
		rec_program_hi = hi;
	}
	atomic_store_explicit(&objs[n].instrumented, main_prog, memory_order_relaxed);
	/* Pairs with obj_of's acquire: a reader that sees n + 1 objects sees
	 * the new one's fields. */
	atomic_store_explicit(&obj_cnt, n + 1, memory_order_release);
	return 0;
}

/* Sixteen bytes from the 8-byte aligned address at or below addr (which
 * is at that offset in them): 0, or -1 when they cannot be read. */
static int read16(uint64_t addr, uint8_t out[16])
{
	uint64_t w[2], base = addr & ~7ull;
	if (safe_copy_word(&w[0], (const void *)(uintptr_t)base) ||
	    safe_copy_word(&w[1], (const void *)(uintptr_t)(base + 8)))
		return -1;
	memcpy(out, w, 16);
	return 0;
}

/* The call that returns to ret, its bytes read with safe_copy_word
 * (bytes before a call through a register that only look like a call
 * are read safely): 1 for a `call rel32`, *target its destination and
 * *slot the GOT slot it jumps through when that is a PLT stub
 * ("[endbr64] [bnd] jmp *slot(%rip)"), else 0; 2 for a `call
 * *slot(%rip)` (-fno-plt); 0 for any other call, or bytes unreadable
 * (the call's or its destination's). */
static int call_before(uint64_t ret, uint64_t *target, uint64_t *slot)
{
	uint8_t b[16];
	int32_t rel;

	*target = *slot = 0;
	if (!read16(ret - 6, b) && b[(ret - 6) & 7] == 0xff && b[((ret - 6) & 7) + 1] == 0x15) {
		memcpy(&rel, b + ((ret - 6) & 7) + 2, 4);
		*slot = ret + (uint64_t)(int64_t)rel;
		return 2;
	}
	if (read16(ret - 5, b) || b[(ret - 5) & 7] != 0xe8)
		return 0;
	memcpy(&rel, b + ((ret - 5) & 7) + 1, 4);
	*target = ret + (uint64_t)(int64_t)rel;
	if (read16(*target, b))
		return 0;
	const uint8_t *s = b + (*target & 7);
	size_t k = 0;
	if (s[0] == 0xf3 && s[1] == 0x0f && s[2] == 0x1e && s[3] == 0xfa)
		k = 4; /* endbr64 */
	if (s[k] == 0xf2)
		k++; /* bnd */
	if (s[k] != 0xff || s[k + 1] != 0x25 || read16(*target + k + 2, b))
		return 1;
	memcpy(&rel, b + ((*target + k + 2) & 7), 4);
	*slot = *target + k + 6 + (uint64_t)(int64_t)rel;
	return 1;
}

/* Did the call that returns to ret go through a PLT entry (a `call rel32`
 * to a stub that jumps through the GOT) rather than straight to f?  A
 * library calling its own exported function does so, and uftrace's
 * --nest-libcall shows that as a library call.  With --nest-libcall
 * only, for calls within one object.  A call among the first
 * instructions of a relocated function runs from its detour, where the
 * bytes before the return address are the patch's: it is not seen as
 * one. */
static int called_through_plt(uint64_t ret, const struct needle_func *f)
{
	uint64_t target, slot;
	return call_before(ret, &target, &slot) == 1 && target != f->ip && target != f->site_addr && slot;
}

/* The C library's setjmp and _setjmp set one argument and jump to
 * __sigsetjmp, which a program also calls (sigsetjmp is a macro of it).
 * All three are entry-only sites: no frame tells the jump from a call.
 * An entry of __sigsetjmp (SF_JUMPED_TO) with the stack pointer of the
 * thread's last recorded entry of one of the two (SF_JUMPS), and no
 * event since, is that call's jump, not a call of its own.  Only
 * compares: no memory of the program is read (a read of its code costs
 * two system calls where the program blocks SIGSEGV, as dash does
 * around its setjmp calls). */
static const char *const jumps_names[] = { "setjmp", "_setjmp", NULL };
static const char *const jumped_to_names[] = { "__sigsetjmp", NULL };

static int name_in(const char *name, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

static int jumped_to(const struct rec_thread *rt, const struct needle_ctx *ctx, unsigned fl)
{
	return (fl & SF_JUMPED_TO) && rt->jump_pos == rt->pos && rt->jump_sp == ctx->sp;
}

/* Is this call of a library's function one the view records?  Its
 * return address says who called it. */
static struct obj_span *self_obj; /* libneedle's */

static int libcall_recorded(const struct needle_ctx *ctx, struct rec_thread *rt, unsigned fl)
{
	uint64_t ret = ctx->sp ? *(const uint64_t *)(uintptr_t)ctx->sp : 0;
	struct obj_span *from = obj_of(ret);

	/* An interposer called from libneedle: the agent's own call, or one
	 * interposer calling another (sigprocmask's pthread_sigmask).  The
	 * cost: a traced function's tail call to an interposer, whose return
	 * address is the return hook, is not recorded. */
	if ((fl & SF_AGENT) && from && from == self_obj)
		return 0;

	/* libneedle's code: an interposer calling the real function for the
	 * program (the program's call, unless a library made it), or its
	 * return hook (a recorded call jumped here, a tail call, so the
	 * caller is that call).  Any other call libneedle makes (errno, a
	 * system call an interposer makes on its own account) is needle's,
	 * not the program's. */
	if (from && from == self_obj)
		return ((fl & SF_REAL) || needle_is_return_hook(ret)) && !rt->lib_top;
	/* A return address in no object is needle's own return hook (the
	 * caller's call was hooked and it jumped here: a tail call) or a
	 * JIT's code: the call is recorded, its caller unknown.  But inside
	 * dlopen it is an object being loaded, its constructors calling
	 * into libraries (libstdc++'s calling __cxa_atexit): not the
	 * program's call, as uftrace, which sees the program's PLT calls
	 * only, does not show it either. */
	if (!from)
		return !rec_loading || libcall_mode != LIBCALL_PROGRAM;
	if (libcall_mode == LIBCALL_ALL)
		return 1; /* every call, a library's of its own functions too */
	/* uftrace's view: what the program calls (its PLT calls), or with
	 * --nest-libcall every call from one object into another (every
	 * object's PLT calls), never a library's of its own functions.  Nor
	 * the loader's calls through its hooks (its locks, at exit and in
	 * dlopen): the loader has no PLT calls and is never traced. */
	if (libcall_mode == LIBCALL_NEST)
		return (from != obj_of(ctx->func->ip) && !from->loader) || called_through_plt(ret, ctx->func);
	if (from != &objs[0]) {
		/* Remembered for the direct entry (recorder_direct.c). */
		rt->lib_lo = from->lo;
		rt->lib_hi = from->hi;
		return 0;
	}
	return 1;
}

/* A call of a function a trace_on, trace_off or finish names, or any
 * call while recording is paused: turn the switch (uftrace's order: on
 * before the call is looked at, off and finish at it), and say whether
 * the call may be recorded; one that may not is not hooked either, so a
 * paused recording costs a load and a test per call.  Every thread's
 * recording, as uftrace's.  (trace_on and trace_off reach the agent only
 * with --signal; the views apply them otherwise: options.c.) */
static int switch_entry(unsigned fl)
{
	if (fl & SF_TRACE_ON)
		atomic_fetch_and_explicit(&rec_paused, ~PAUSE_OFF, memory_order_relaxed);
	if (fl & SF_TRACE_OFF) {
		atomic_fetch_or_explicit(&rec_paused, PAUSE_OFF, memory_order_relaxed);
		return 0;
	}
	if (fl & SF_FINISH)
		return !atomic_fetch_or_explicit(&rec_paused, PAUSE_FINISHED, memory_order_relaxed);
	return !atomic_load_explicit(&rec_paused, memory_order_relaxed);
}

/* --signal's actions, in the signal handler (signal_front.c):
 * async-signal-safe, one atomic each. */
static void signal_trace_on(int sig)
{
	(void)sig;
	atomic_fetch_and_explicit(&rec_paused, ~PAUSE_OFF, memory_order_relaxed);
}

static void signal_trace_off(int sig)
{
	(void)sig;
	atomic_fetch_or_explicit(&rec_paused, PAUSE_OFF, memory_order_relaxed);
}

static void signal_finish(int sig)
{
	(void)sig;
	atomic_fetch_or_explicit(&rec_paused, PAUSE_FINISHED, memory_order_relaxed);
}

/* Lines "SIG<tab>on|off|finish": trace_on acts before the program's own
 * handler of SIG, trace_off and finish after it (its calls are recorded
 * either way).  0 or negative errno. */
static int signals_configure(const char *lines)
{
	for (const char *p = lines; p && *p;) {
		char *end;
		long sig = strtol(p, &end, 10);
		if (*end != '\t' || sig == needle_stop_signal())
			return -EINVAL;
		const char *act = end + 1;
		int err = !strncmp(act, "on", 2)    ? signal_front_add((int)sig, signal_trace_on, NULL)
			  : !strncmp(act, "off", 3) ? signal_front_add((int)sig, NULL, signal_trace_off)
						    : signal_front_add((int)sig, NULL, signal_finish);
		if (err)
			return err;
		p = strchr(act, '\n');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

static int graph_record_entry(const struct needle_ctx *ctx, uint64_t *cookie)
{
	struct rec_thread *rt = ctx->thread_data;

	if (!rec_active)
		return NEEDLE_SKIP_EXIT;
	const struct arg_spec *as = args_for(ctx->func->site_id);
	uint32_t id = ctx->func->site_id;
	unsigned fl = rec_site_flag(id);
	uint32_t limit = rt->limit ? rt->limit : rec_max_depth;
	if (__builtin_expect(atomic_load_explicit(&rec_paused, memory_order_relaxed) || (fl & SF_SWITCHES), 0) &&
	    !switch_entry(fl))
		return NEEDLE_SKIP_EXIT;
	if (__builtin_expect(fl != 0, 0)) {
		if (rt->out_count || (fl & SF_HIDE) || ((fl & SF_LIB) && !libcall_recorded(ctx, rt, fl)))
			return NEEDLE_SKIP_EXIT;
		/* The program's wrapper of this function calling it. */
		if ((fl & SF_TWIN) && rt->depth && rt->depth <= REC_OPEN_SITES &&
		    rt->open_site[rt->depth - 1] == twin_of(id))
			return NEEDLE_SKIP_EXIT;
		if (fl & SF_DROP) {
			if (ctx->exit_flags & NEEDLE_ENTRY_NO_EXIT)
				return NEEDLE_SKIP_EXIT;
			rt->out_count++;
			*cookie = COOKIE_OUT;
			return 0;
		}
		/* -F 'f@arg2>1000': only a call that passes the test opens a
		 * subtree. */
		if ((fl & SF_SUBTREE) && !(ctx->exit_flags & NEEDLE_ENTRY_NO_EXIT) &&
		    (!as || !as->has_cond || args_cond_holds(as, ctx))) {
			*cookie = COOKIE_IN | rt->limit;
			rt->in_count++;
			limit = rec_max_depth == UINT32_MAX || rt->depth > UINT32_MAX - rec_max_depth ? UINT32_MAX
											  : rt->depth + rec_max_depth;
			rt->limit = limit;
		}
	} else if (rt->out_count) {
		return NEEDLE_SKIP_EXIT;
	}
	if ((rec_have_subtree && !rt->in_count) || rt->depth >= limit)
		return NEEDLE_SKIP_EXIT;
	/* -F 'f@arg2>1000' without subtrees (-P): a call that fails the test
	 * is not recorded. */
	if (__builtin_expect(as && as->has_cond, 0) && !(*cookie & COOKIE_IN) && !rec_have_subtree &&
	    !args_cond_holds(as, ctx))
		return NEEDLE_SKIP_EXIT;
	/* Its exit will not be seen: an entry of its own, as the function
	 * tracer writes it, which nests nothing under it. */
	if (__builtin_expect(ctx->exit_flags & NEEDLE_ENTRY_NO_EXIT, 0)) {
		/* needle info counts the functions called from generated
		 * code; dlsym's kind is entry-only by nature. */
		if (!(ctx->exit_flags & NEEDLE_ENTRY_NO_EXIT_FUNC))
			entry_only_note(ctx->func->site_id);
		else if (jumped_to(rt, ctx, fl))
			return NEEDLE_SKIP_EXIT;
		event_write_args(rt, EV_ENTRY, ctx->func->site_id | EV_ENTRY_FLAT, ctx, as, 0);
		if (fl & SF_JUMPS) {
			rt->jump_sp = ctx->sp;
			rt->jump_pos = rt->pos;
		}
		return NEEDLE_SKIP_EXIT;
	}
	if (!event_write_args(rt, EV_ENTRY, ctx->func->site_id, ctx, as, 0)) {
		/* Without its entry the exit is not recorded either: count it
		 * lost now, so that recorded + lost is every event. */
		event_lost(rt);
		if (*cookie & COOKIE_IN) {
			rt->in_count--;
			rt->limit = (uint32_t)*cookie;
		}
		return NEEDLE_SKIP_EXIT;
	}
	/* One store, to a line the thread's state has warm: what a fork's
	 * child needs to re-enter the calls open (event_writer.c). */
	if (rt->depth < REC_OPEN_SITES)
		rt->open_site[rt->depth] = id;
	rt->depth++;
	if (rt->lib_top)
		*cookie |= COOKIE_LIB_TOP;
	rt->lib_top = (fl & SF_LIB) != 0;
	return 0;
}

/* A call of a function a --trigger watches (trigger_fold gave it to the
 * recorder): an entry trigger fires now; a duration trigger's call gets
 * its exit whatever the filters decided (ret), its entry clock in the
 * cookie, and COOKIE_SKIPPED if only the trigger wants that exit.  A
 * folded site is never a -F one, whose cookie holds a depth limit. */
static int trigger_entry(const struct needle_ctx *ctx, uint64_t *cookie, int ret)
{
	uint32_t id = ctx->func->site_id;
	const struct trigger_site *ts = trigger_folded_site(id);

	if (!ts)
		return ret;
	uint64_t now = trigger_clock();
	if (ts->on_entry)
		trigger_fire(SNAPSHOT_ENTERED, id, now, 0);
	if (!ts->threshold || (ctx->exit_flags & NEEDLE_ENTRY_NO_EXIT))
		return ret;
	if (ret == NEEDLE_SKIP_EXIT)
		*cookie = COOKIE_SKIPPED;
	*cookie |= COOKIE_TIMED | (now & COOKIE_TIME_MASK);
	return 0;
}

static void trigger_exit(uint32_t id, uint64_t cookie, uint64_t now)
{
	const struct trigger_site *ts = trigger_folded_site(id);
	uint64_t took = (now - cookie) & COOKIE_TIME_MASK;

	/* A call ended by an unwind (longjmp, an exception) counts too, up
	 * to where the unwind was seen: a slow request may end that way. */
	if (ts && ts->threshold && took > ts->threshold)
		trigger_fire(SNAPSHOT_DURATION, id, now, took);
}

static int graph_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	int ret = graph_record_entry(ctx, cookie);
	(void)data;

	if (__builtin_expect(rec_site_flag(ctx->func->site_id) & SF_TRIGGER, 0) && rec_active)
		ret = trigger_entry(ctx, cookie, ret);
	return ret;
}

static void graph_exit_record(const struct needle_ctx *ctx, uint64_t cookie);

static void graph_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)data;

	if (__builtin_expect(cookie & COOKIE_TIMED, 0)) {
		/* The call's end is timed now, and its trigger fires once its
		 * exit is written: the snapshot it asks for, which needle
		 * record may copy at once, holds that exit. */
		uint64_t now = trigger_clock();
		if (!(cookie & COOKIE_SKIPPED))
			graph_exit_record(ctx, cookie);
		trigger_exit(ctx->func->site_id, cookie, now);
		return;
	}
	graph_exit_record(ctx, cookie);
}

/* The thread's state at the end of a call entered with cookie: 1 if its
 * exit is to be written. */
static int graph_exit_account(struct rec_thread *rt, uint64_t cookie)
{
	if (cookie & COOKIE_OUT) {
		if (rt->out_count)
			rt->out_count--;
		return 0;
	}
	if (cookie & COOKIE_IN) {
		if (rt->in_count)
			rt->in_count--;
		rt->limit = (uint32_t)cookie;
	}
	rt->lib_top = (cookie & COOKIE_LIB_TOP) != 0;
	/* A call entered while the tracer was "function" has no depth. */
	if (rt->depth)
		rt->depth--;
	/* A call entered before a trace_off ends as recorded, so that the
	 * graph stays whole (those entered while off were not hooked); after
	 * a finish nothing is written: the calls open then stay open, as
	 * uftrace lists them. */
	return rec_active && !(atomic_load_explicit(&rec_paused, memory_order_relaxed) & PAUSE_FINISHED);
}

static void graph_exit_record(const struct needle_ctx *ctx, uint64_t cookie)
{
	struct rec_thread *rt = ctx->thread_data;
	int writing = graph_exit_account(rt, cookie);

	if (writing && ctx->is_exit == NEEDLE_EXIT_UNWOUND)
		event_write(rt, EV_UNWIND, ctx->func->site_id); /* no return value */
	else if (writing)
		/* Left through a sibling call: the return value is not in
		 * the registers yet; the exit has none. */
		event_write_args(rt, EV_EXIT, ctx->func->site_id, ctx,
				 ctx->exit_flags & NEEDLE_EXIT_NO_RETVAL ? NULL : args_for(ctx->func->site_id), 1);
}

/* --estimate-return (uftrace's): function_graph with no return hooked,
 * for programs whose returns must not be touched (a JIT's own frames, a
 * runtime that walks or rewrites return addresses, CET shadow stacks).
 * A call ends, as estimated, at the next entry the thread makes at or
 * above its stack pointer (the call has returned by then: its caller, or
 * a caller of its caller, calls again) and its exit is written then, with
 * that entry's time, so a duration counts up to the next traced call; at
 * the thread's end the calls still open end.  Entries at the same stack
 * pointer (a tail call) end their predecessor: the callee shows as the
 * caller's sibling.  The calls open are kept per thread by stack pointer,
 * in an array mapped at the thread's first call (one mmap, then an mremap
 * per doubling: no malloc, which a signal handler's call could interrupt).
 * A call the array has no room for ends at once (a leaf). */
static int estimate_return;

struct estimated_call {
	uint64_t sp;     /* the entry's stack pointer (its return address's slot) */
	uint64_t cookie; /* graph_entry's */
	uint32_t id;
};

#define ESTIMATE_INITIAL 4096u
#define ESTIMATE_MAX (1u << 22)

/* The thread's array, kept across recordings (needle record -p again: a
 * new link's thread data starts zeroed, and the old one's is not told
 * the session ended); unmapped at the thread's end. */
static __thread struct estimated_call *est_kept __attribute__((tls_model("initial-exec")));
static __thread uint32_t est_kept_cap __attribute__((tls_model("initial-exec")));

static void estimate_exit(struct rec_thread *rt, const struct estimated_call *e)
{
	if (e->cookie & COOKIE_TIMED) {
		uint64_t now = trigger_clock();
		if (!(e->cookie & COOKIE_SKIPPED) && graph_exit_account(rt, e->cookie))
			event_write(rt, EV_EXIT, e->id);
		trigger_exit(e->id, e->cookie, now);
		return;
	}
	if (graph_exit_account(rt, e->cookie))
		event_write(rt, EV_EXIT, e->id);
}

/* End the calls open at or below sp (UINT64_MAX: all), innermost first. */
static void estimate_close(struct rec_thread *rt, uint64_t sp)
{
	while (rt->est_top && rt->est[rt->est_top - 1].sp <= sp) {
		rt->est_top--;
		estimate_exit(rt, &rt->est[rt->est_top]);
	}
}

static int estimate_room(struct rec_thread *rt)
{
	if (rt->est_top < rt->est_cap)
		return 1;
	if (!rt->est && est_kept) {
		rt->est = est_kept;
		rt->est_cap = est_kept_cap;
		if (rt->est_top < rt->est_cap)
			return 1;
	}
	size_t old = (size_t)rt->est_cap * sizeof(*rt->est);
	uint32_t cap = rt->est_cap ? rt->est_cap * 2 : ESTIMATE_INITIAL;
	if (cap > ESTIMATE_MAX)
		return 0;
	size_t len = (size_t)cap * sizeof(*rt->est);
	void *p = rt->est ? mremap(rt->est, old, len, MREMAP_MAYMOVE)
			  : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	rt->est = est_kept = p;
	rt->est_cap = est_kept_cap = cap;
	return 1;
}

static int estimate_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	struct rec_thread *rt = ctx->thread_data;
	uint64_t ck = 0;

	(void)cookie;
	estimate_close(rt, ctx->sp);
	if (graph_entry(ctx, &ck, data) != 0)
		return NEEDLE_SKIP_EXIT;
	struct estimated_call e = { .sp = ctx->sp, .cookie = ck, .id = ctx->func->site_id };
	if (!estimate_room(rt)) {
		estimate_exit(rt, &e);
		return NEEDLE_SKIP_EXIT;
	}
	rt->est[rt->est_top++] = e;
	return NEEDLE_SKIP_EXIT;
}

/* At the process's exit, in the thread that exits (main's, which ends
 * with no thread_exit): its calls still open end. */
__attribute__((destructor)) static void estimate_at_exit(void)
{
	struct rec_thread *rt = rec_thread_self();

	if (estimate_return && rt && rt->est_top && rt->tid == (uint32_t)gettid())
		estimate_close(rt, UINT64_MAX);
}

static int function_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data);

/* The recorder's handlers for a tracer: function_graph (returns hooked, or
 * estimated) or function. */
static needle_entry_fn tracer_entry(int graph)
{
	return graph ? (estimate_return ? estimate_entry : graph_entry) : function_entry;
}

static needle_exit_fn tracer_exit(int graph)
{
	return graph && !estimate_return ? graph_exit : NULL;
}

static int function_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)cookie;
	(void)data;
	const struct arg_spec *as = args_for(ctx->func->site_id);
	uint32_t id = ctx->func->site_id;
	unsigned fl = rec_site_flag(id);
	/* No exits, so no subtrees: -F and -N select single functions. */
	if (__builtin_expect(atomic_load_explicit(&rec_paused, memory_order_relaxed) || (fl & SF_SWITCHES), 0) &&
	    !switch_entry(fl))
		return NEEDLE_SKIP_EXIT;
	if ((fl & (SF_HIDE | SF_DROP)) || (rec_have_subtree && !(fl & SF_SUBTREE)) ||
	    ((fl & SF_LIB) && !libcall_recorded(ctx, ctx->thread_data, fl)))
		return NEEDLE_SKIP_EXIT;
	if (rec_active && (!as || !as->has_cond || args_cond_holds(as, ctx)))
		event_write_args(ctx->thread_data, EV_ENTRY, ctx->func->site_id | EV_ENTRY_FLAT, ctx, as, 0);
	return NEEDLE_SKIP_EXIT;
}

/* Context ids for swapcontext events: one per ucontext_t seen, so that
 * readers keep each context's calls on a stack of their own. */
#define CONTEXT_SLOTS 4096
static const void *context_keys[CONTEXT_SLOTS];
static uint32_t context_ids[CONTEXT_SLOTS];
static uint32_t context_next = 1;
static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t context_id(const void *ctx)
{
	size_t h = ((uintptr_t)ctx >> 4) * 2654435761u % CONTEXT_SLOTS;
	uint32_t id = 0;

	pthread_mutex_lock(&context_lock);
	for (size_t i = 0; i < CONTEXT_SLOTS; i++, h = (h + 1) % CONTEXT_SLOTS) {
		if (context_keys[h] == ctx) {
			id = context_ids[h];
			break;
		}
		if (!context_keys[h]) {
			context_keys[h] = ctx;
			id = context_ids[h] = context_next++ & EV_CONTEXT_MASK;
			break;
		}
	}
	pthread_mutex_unlock(&context_lock);
	return id; /* 0: table full, the switch goes unrecorded */
}

static void context_switch(const void *from, const void *to, void *thread_data, void *user_data)
{
	struct rec_thread *rt = thread_data;
	(void)user_data;
	if (!rec_active || !graph_tracer)
		return;
	uint32_t to_id = context_id(to);
	if (!to_id)
		return;
	rt->switched = 1; /* its chunks enter no open calls again (event_writer.c) */
	if (from) {
		uint32_t from_id = context_id(from);
		if (from_id)
			event_write(rt, EV_SWITCH, from_id);
	}
	event_write(rt, EV_SWITCH, EV_SWITCH_TO | to_id);
}

static void thread_exit(void *thread_data, void *user_data)
{
	struct rec_thread *rt = thread_data;
	(void)user_data;
	if (rt->est) {
		estimate_close(rt, UINT64_MAX);
		munmap(rt->est, (size_t)rt->est_cap * sizeof(*rt->est));
		rt->est = est_kept = NULL;
		rt->est_top = rt->est_cap = est_kept_cap = 0;
	}
	/* The reader would salvage the chunk anyway; publishing it now lets
	 * it be written out, and reused, before the process ends. */
	if (rec_active && rt->chunk) {
		/* Its name as it ends, which chunk_next reads only now and then
		 * (snapshot mode makes no system call for the recording). */
		if (!shm->snapshot_mode) {
			prctl(PR_GET_NAME, rt->comm);
			memcpy(rt->chunk->comm, rt->comm, sizeof(rt->chunk->comm));
		}
		chunk_publish(rt);
	}
	/* Events dropped since the thread's last chunk would be counted only
	 * in the total: an empty chunk carries them to the thread's own count,
	 * if the buffer has room for one by now. */
	if (rec_active && rt->lost && chunk_next(rt, clock_now(), REC_NO_EVENT, 0, 0))
		chunk_publish(rt);
	rt->lost = 0;
	rt->depth = 0;
	rt->switched = 0;
	rt->in_count = rt->out_count = rt->limit = 0;
	rt->lib_top = 0;
	rt->tid = 0;
	rt->pid = rt->ppid = 0;
	rt->seq = 0;
}

static void after_fork_child(void *thread_data, void *user_data)
{
	struct rec_thread *rt = thread_data;
	(void)user_data;
	/* The buffer is shared memory, so the child records into it too, as
	 * the threads of another process: it forgets the chunk its parent's
	 * thread owns (the parent keeps writing it) and takes its own, under
	 * its own thread id. */
	if (rt) {
		rt->chunk = NULL;
		rt->pos = rt->end = NULL;
		rt->tid = 0;
		rt->seq = 0;
		rt->lost = 0;
		rt->full = (struct overwrite_list){ 0 }; /* the parent's */
		rt->inherit = rt->depth;
		rt->watch_cpu = 0; /* -W: a thread's first event notes its CPU */
	}
}

/* Meta records (common/meta_protocol.h): written with plain write(2),
 * not on a hot path. */
static int meta_write(int fd, const char *line)
{
	size_t len = strlen(line), off = 0;
	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

/* A block of records appended through the mapping: its bytes reserved
 * at shm->meta_tail, since another program image (an exec'ed one) may
 * append at the same time, and its image said first (meta_protocol.h).
 * The bytes land where no reader has looked yet: it stops at the first
 * NUL, and a line without its newline is read again later. */
static char *meta_map;
static size_t meta_len;
static int meta_append(const char *buf, size_t len)
{
	char head[32];
	size_t hn = (size_t)snprintf(head, sizeof(head), META_IMAGE_WRITE, rec_image);

	if (!meta_map || !shm)
		return -ENOSPC;
	uint64_t at = atomic_fetch_add_explicit(&shm->meta_tail, hn + len, memory_order_relaxed);
	if (at > meta_len || hn + len > meta_len - at)
		return -ENOSPC;
	memcpy(meta_map + at, head, hn);
	memcpy(meta_map + at + hn, buf, len);
	return 0;
}

/* What the meta file already names: the sites below meta_sites and the
 * objects below meta_objects, in meta_modules module lines.  Objects
 * dlopen'ed later are appended (recorder_object_loaded). */
static pid_t meta_pid;             /* the process that writes it (not a forked child) */
static int meta_sites, meta_objects;
static unsigned meta_modules;

/* The module and site tables of the sites from meta_sites on, from the
 * public site list, and the discovery table of the objects from
 * meta_objects on (with the refusal reasons, the first time): written to
 * fd, or appended to the mapped meta file when fd is -1.  Objects
 * without a traceable function never appear: libneedle and libgcc_s,
 * its one dependency besides the C library, are never relocated
 * (site_discover.c). */
static int meta_dump(int fd)
{
	char *buf = NULL;
	size_t len = 0, mod_cnt = 0;
	const char **mods = NULL;
	FILE *out = open_memstream(&buf, &len);
	int total = needle_site_count(), objects = needle_object_count(), err = 0;

	if (!out)
		return -ENOMEM;
	for (int id = meta_sites; id < total && !err; id++) {
		struct needle_site_info info = { .sz = sizeof(info) };
		if (needle_site_info((uint32_t)id, &info) || !info.traceable)
			continue;
		size_t m = 0;
		while (m < mod_cnt && strcmp(mods[m], info.module))
			m++;
		if (m == mod_cnt) {
			const char **v = realloc(mods, (mod_cnt + 1) * sizeof(*v));
			if (!v) {
				err = -ENOMEM;
				break;
			}
			mods = v;
			mods[mod_cnt++] = info.module;
			fprintf(out, META_MODULE_WRITE, meta_modules + (unsigned)m, info.module);
			char id[65] = "-";
			for (uint32_t k = 0; k < info.module_build_id_len && k < 32; k++)
				snprintf(id + 2 * k, 3, "%02x", info.module_build_id[k]);
			fprintf(out, META_BIAS_WRITE, meta_modules + (unsigned)m, (unsigned long long)info.module_bias, id);
		}
		fprintf(out, META_SITE_WRITE, info.id, (unsigned long long)info.func_ip, meta_modules + (unsigned)m,
			(unsigned long long)info.func_size, info.name);
	}
	free(mods);
	/* Per object, what discovery made of its functions (needle info). */
	if (!meta_objects && !join_mode)
		for (int r = 1; needle_refusal_name(r); r++)
			fprintf(out, META_REASON_WRITE, r, needle_refusal_name(r));
	for (int i = meta_objects; i < objects; i++) {
		struct needle_object_info oi = { .sz = sizeof(oi) };
		if (needle_object_info((uint32_t)i, &oi) || (!oi.sites_compiled && !oi.funcs_tried))
			continue;
		fprintf(out, "O %u %u %u", oi.sites_compiled, oi.funcs_tried, oi.sites_relocated);
		for (int r = 1; r <= META_OBJECT_REFUSALS; r++)
			fprintf(out, " %u", r < NEEDLE_REFUSAL_MAX ? oi.refused[r] : 0);
		fprintf(out, " %s\n", oi.path);
	}
	if (fclose(out))
		err = err ? err : -ENOMEM;
	if (!err && fd >= 0) {
		err = meta_write(fd, buf);
	} else if (!err) {
		err = meta_append(buf, len);
	}
	free(buf);
	if (!err) {
		meta_sites = total;
		meta_objects = objects;
		meta_modules += (unsigned)mod_cnt;
	}
	return err;
}

/* 1 if a pattern of the newline-separated list names site id (its
 * symbol, or a C++ function's demangled name: needle_site_match). */
/* Is site id in the object a "GLOB<tab>m=MODULE" line names (its file's
 * name, or that name's beginning: common/pattern.h)? */
static int in_module(uint32_t id, const char *module)
{
	struct needle_site_info info = { .sz = sizeof(info) };
	return !needle_site_info(id, &info) && info.module && module_name_matches(module, info.module);
}

/* The lists select_sites tests every site against, their mangled names
 * indexed (name_index.h) for that run, on the thread that runs it. */
static __thread struct name_index *sel_index;
static __thread size_t sel_index_cnt;

static const struct name_index *index_of(const char *list)
{
	for (size_t i = 0; list && i < sel_index_cnt; i++)
		if (sel_index[i].list == list)
			return &sel_index[i];
	return NULL;
}

/* Does a glob of list match the site?  *pos: the largest POS of those
 * that do (0 for lines without one).  A line "GLOB<tab>m=MODULE" names
 * that object's functions only.  An indexed list's mangled names are
 * looked up, its other lines tested. */
static int glob_list_find(const char *list, uint32_t id, unsigned long *pos)
{
	const struct name_index *x = index_of(list);
	char pat[512];
	int found = 0;

	if (x) {
		struct needle_site_info info = { .sz = sizeof(info) };
		unsigned long at = 0;
		if (!needle_site_info(id, &info) && name_index_find(x, info.name, &at)) {
			if (!pos)
				return 1;
			*pos = at;
			found = 1;
		}
		list = name_index_rest(x);
	}
	const char *p = list;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n && n < sizeof(pat)) {
			memcpy(pat, p, n);
			pat[n] = 0;
			char *tab = strchr(pat, '\t');
			if (tab)
				*tab++ = 0;
			int module_ok = !tab || strncmp(tab, "m=", 2) || in_module(id, tab + 2);
			if (tab && !strncmp(tab, "m=", 2))
				tab = NULL; /* no position */
			if (module_ok && needle_site_match(id, pat) == 1) {
				unsigned long at = tab ? strtoul(tab, NULL, 10) : 0;
				if (!pos)
					return 1;
				if (!found || at > *pos)
					*pos = at;
				found = 1;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return found;
}

static int glob_list_match(const char *list, uint32_t id)
{
	return glob_list_find(list, id, NULL);
}

/* Does a GLOB@MODULE line of list (-P) name the site?  Such a function is
 * traced as the program's own, not as a library call (uftrace's -P
 * GLOB@MODULE patches a library's functions). */
static int module_glob_match(const char *list, uint32_t id)
{
	/* Module lines are never indexed: an index's other lines hold them. */
	const struct name_index *x = index_of(list);
	if (x)
		list = name_index_rest(x);
	for (const char *p = list; p && *p;) {
		const char *nl = strchr(p, '\n'), *tab = strchr(p, '\t');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (tab && tab < p + n && !strncmp(tab + 1, "m=", 2)) {
			char line[512];
			if (n < sizeof(line)) {
				memcpy(line, p, n);
				line[n] = 0;
				if (glob_list_find(line, id, NULL))
					return 1;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* A site both -F and -N name: is it dropped?  The one given last
 * decides, as uftrace's filters do (-F 'ns1::*' -N 'bar2' -F 'bar2'
 * records bar2); with no positions, -N. */
static int drop_wins(uint32_t id)
{
	unsigned long f = 0, d = 0;
	glob_list_find(cur_subtree, id, &f);
	glob_list_find(cur_drop, id, &d);
	return d >= f;
}

struct prog_name {
	const char *name;
	uint32_t id;
};

static int prog_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct prog_name *)a)->name, ((const struct prog_name *)b)->name);
}

/* Does libneedle define a function of this name in the library's place
 * (an interposer, such as ppoll's, that calls the library's for the
 * program)?  Looked up in libneedle's own scope, which holds its
 * interposers first whether it was preloaded or loaded into a running
 * process. */
static void *self_handle;
/* Library calls the program's code does not make itself, though they
 * leave from its object, and uftrace hides: 1 for the C library's
 * start-up, which runs main and never returns, and its tear-down of the
 * program's objects (both called from the compiler's start files),
 * never recorded nor hooked; 2 for the C++ runtime's exception
 * machinery, which the compiler emits for throw, catch and cleanups (a
 * throw shows as the calls it leaves, a catch as the code after it):
 * dropped as -N drops a function, with what it calls, so that
 * __cxa_end_catch's tail call of __cxa_free_exception, and that one's
 * of free, whose return addresses are the program's, are not taken for
 * the program's calls.  _Unwind_Resume never returns: not hooked.  Nor
 * __sigjmp_save, the C library's own tail of setjmp (setjmp's line is
 * the program's call), nor gcc -pg's mcount. */
static int runtime_plumbing(const char *name)
{
	/* mcount: gcc -pg's call at every function's start (gmon's
	 * profiler, uftrace's own hook): the compiler's, not the program's. */
	static const char *const hidden[] = {
		"__libc_start_main", "__cxa_finalize", "_Unwind_Resume", "__sigjmp_save", "mcount", "_mcount",
	};
	static const char *const dropped[] = {
		"__cxa_throw", "__cxa_rethrow", "__cxa_begin_catch", "__cxa_end_catch", "__gxx_personality_v0",
	};
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		if (!strcmp(name, hidden[i]))
			return 1;
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
		if (!strcmp(name, dropped[i]))
			return 2;
	return 0;
}

static int is_real_of_interposer(const char *name)
{
	if (!self_handle) {
		Dl_info di;
		if (!dladdr((void *)&graph_entry, &di) || !di.dli_fname ||
		    !(self_handle = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD)))
			return 0;
	}
	void *fn = dlsym(self_handle, name);
	return fn && obj_of((uint64_t)(uintptr_t)fn) == self_obj;
}

struct object_probe {
	const char *module;
	int found;
};

static int probe_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_probe *p = arg;
	const char *name = info->dlpi_name;
	char exe[PATH_MAX];
	(void)size;
	/* The program itself has no name here: its file's. */
	if (name && !*name) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		name = exe;
	}
	if (name && *name && module_name_matches(p->module, name))
		p->found = 1;
	return p->found;
}

/* Does a -F line name the functions of an object not loaded yet
 * ("GLOB<tab>m=MODULE")?  Then -F matching nothing now is no mistake:
 * the program may dlopen it, and its calls are recorded from then on
 * (recorder_object_loaded). */
static int subtree_awaits_object(const char *list)
{
	for (const char *p = list; p && *p;) {
		const char *nl = strchr(p, '\n'), *tab = strchr(p, '\t');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (tab && tab < p + n && !strncmp(tab + 1, "m=", 2)) {
			char module[512];
			size_t k = (size_t)(p + n - (tab + 3));
			if (k && k < sizeof(module)) {
				memcpy(module, tab + 3, k);
				module[k] = 0;
				struct object_probe probe = { module, 0 };
				agent_dl_iterate_phdr(probe_object, &probe);
				if (!probe.found)
					return 1;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* The program's (objs[0]'s) sites by name: a malloc'ed sorted array, or
 * NULL.  Names stay valid: sites are never freed while recording. */
static struct prog_name *program_names(int total, size_t *cnt)
{
	struct prog_name *v = malloc((total > 0 ? (size_t)total : 1) * sizeof(*v));

	*cnt = 0;
	for (int id = 0; v && id < total; id++) {
		struct needle_site_info info = { .sz = sizeof(info) };
		if (needle_site_info((uint32_t)id, &info) || !info.traceable || !info.name)
			continue;
		if (obj_of(info.func_ip) == &objs[0])
			v[(*cnt)++] = (struct prog_name){ info.name, (uint32_t)id };
	}
	if (v)
		qsort(v, *cnt, sizeof(*v), prog_name_cmp);
	return v;
}

/* The sites select_sites chose that a --trigger names (SF_TRIGGER), by
 * id: the recorder times their calls for the triggers while the tracer
 * is function_graph (refold).  Under config_lock. */
static uint32_t *fold_ids;
static size_t fold_cnt, fold_cap;

static int fold_add(uint32_t id)
{
	if (fold_cnt == fold_cap) {
		size_t cap = fold_cap ? 2 * fold_cap : 64;
		uint32_t *v = realloc(fold_ids, cap * sizeof(*v));
		if (!v)
			return 0; /* its trigger's own link times it */
		fold_ids = v;
		fold_cap = cap;
	}
	fold_ids[fold_cnt++] = id;
	return 1;
}

/* The triggers onto the recorder's sites as they are now (trigger.h). */
static int refold(char *why, size_t whylen)
{
	return trigger_fold(fold_ids, graph_tracer ? fold_cnt : 0, why, whylen);
}

/* The site addresses the filters select among the traceable sites: a
 * malloc'ed array, *n of them (*usable: how many were traceable). */
/* Only among the sites the meta file names: a site found later and not
 * named yet (its events would carry an id nothing names) waits. */
static uint64_t *select_sites_indexed(const char *filter, const char *notrace, size_t *n, size_t *usable);

static uint64_t *select_sites(const char *filter, const char *notrace, size_t *n, size_t *usable)
{
	const char *lists[] = { filter, notrace, cur_subtree, cur_drop, cur_on, cur_off, cur_finish };
	struct name_index index[sizeof(lists) / sizeof(lists[0])];
	size_t cnt = 0;

	/* An index that could not be built (out of memory) is left out:
	 * its list is tested line by line. */
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (lists[i] && *lists[i] && !index_of(lists[i]) && !name_index_build(&index[cnt], lists[i])) {
			sel_index = index;
			sel_index_cnt = ++cnt;
		}
	uint64_t *addrs = select_sites_indexed(filter, notrace, n, usable);
	sel_index = NULL;
	sel_index_cnt = 0;
	for (size_t i = 0; i < cnt; i++)
		name_index_free(&index[i]);
	return addrs;
}

static uint64_t *select_sites_indexed(const char *filter, const char *notrace, size_t *n, size_t *usable)
{
	int total = needle_site_count();
	if (total > meta_sites)
		total = meta_sites;
	uint64_t *addrs = malloc((total > 0 ? (size_t)total : 1) * sizeof(*addrs));

	*n = *usable = 0;
	if (!addrs)
		return NULL;
	fold_cnt = 0;
	patch_sites = patch_libcalls_dropped = subtree_sites = 0;
	int first = 1;
	agent_dl_iterate_phdr(add_obj, &first);
	/* libneedle's own code: a return address there is its return hook
	 * or one of its interposers (libcall_recorded). */
	self_obj = obj_of((uint64_t)(uintptr_t)&graph_entry);
	/* Objects built with patchable entries: calls made from them are the
	 * program's, as from the program itself.  Not libneedle, whose
	 * interposers are entries of that kind. */
	for (int id = 0; id < total; id++) {
		struct needle_site_info info = { .sz = sizeof(info) };
		if (needle_site_info((uint32_t)id, &info) || !info.traceable || !info.compiler_marked)
			continue;
		struct obj_span *o = obj_of(info.func_ip);
		if (o && o != self_obj)
			atomic_store_explicit(&o->instrumented, 1, memory_order_relaxed);
	}
	unsigned prog_n = atomic_load_explicit(&obj_cnt, memory_order_acquire);
	/* The program's functions by name, for the library functions it
	 * has wrappers of (SF_TWIN). */
	size_t prog_cnt = 0;
	struct prog_name *prog = prog_n ? program_names(total, &prog_cnt) : NULL;
	for (int id = 0; id < total; id++) {
		struct needle_site_info info = { .sz = sizeof(info) };
		if (needle_site_info((uint32_t)id, &info) || !info.traceable)
			continue;
		(*usable)++;
		/* A library's function no compiler prepared: what the program
		 * calls of it is a call, its own insides are not (uftrace's
		 * library calls).  objs[0] is the program.  An interposer (a
		 * function of libneedle's the program calls in place of the C
		 * library's) is one as the C library's would be, and never one
		 * libneedle makes. */
		unsigned fl = 0;
		int plumbing = 0;
		struct obj_span *o = obj_of(info.func_ip);
		if (o && o == self_obj)
			fl |= SF_AGENT;
		else if (info.form != NEEDLE_FORM_RELOCATED)
			o = NULL;
		int libcall = o && prog_n && o != &objs[0] &&
			      !atomic_load_explicit(&o->instrumented, memory_order_relaxed) &&
			      !(filter && module_glob_match(filter, (uint32_t)id));
		int patched = filter && *filter && glob_list_match(filter, (uint32_t)id);
		if (filter && *filter && !patched && !(libcall && patch_keeps_libcalls))
			continue;
		if (notrace && *notrace && glob_list_match(notrace, (uint32_t)id))
			continue;
		/* -Z: a function smaller than that is not patched (its size
		 * from its symbol; one of unknown size is). */
		if (min_size && info.func_size && info.func_size < min_size)
			continue;
		if (libcall) {
			if (libcall_mode == LIBCALL_NONE) {
				patch_libcalls_dropped += patched;
				continue;
			}
			/* -Z: a library call's size is its PLT entry's, 16
			 * bytes, the size uftrace's -Z sees of a call the
			 * program makes to a library. */
			if (min_size > PLT_ENTRY_BYTES)
				continue;
			fl |= SF_LIB;
			plumbing = runtime_plumbing(info.name);
			if (plumbing == 1)
				fl |= SF_HIDE;
			if (name_in(info.name, jumps_names))
				fl |= SF_JUMPS;
			if (name_in(info.name, jumped_to_names))
				fl |= SF_JUMPED_TO;
			if (self_obj && is_real_of_interposer(info.name))
				fl |= SF_REAL;
			struct prog_name key = { .name = info.name }, *twin;
			if (prog && (twin = bsearch(&key, prog, prog_cnt, sizeof(*prog), prog_name_cmp))) {
				fl |= SF_TWIN;
				twin_add((uint32_t)id, twin->id);
			}
		}
		if (cur_subtree && glob_list_match(cur_subtree, (uint32_t)id))
			fl |= SF_SUBTREE;
		else if (plumbing == 2)
			fl |= SF_DROP; /* unless -F names it */
		if (cur_drop && glob_list_match(cur_drop, (uint32_t)id) &&
		    (!(fl & SF_SUBTREE) || drop_wins((uint32_t)id))) {
			fl &= ~SF_SUBTREE;
			fl |= SF_DROP;
		}
		if (fl & SF_SUBTREE)
			subtree_sites++;
		if (patched)
			patch_sites++;
		if (cur_on && glob_list_match(cur_on, (uint32_t)id))
			fl |= SF_TRACE_ON;
		if (cur_off && glob_list_match(cur_off, (uint32_t)id))
			fl |= SF_TRACE_OFF;
		if (cur_finish && glob_list_match(cur_finish, (uint32_t)id))
			fl |= SF_FINISH;
		/* A -F function's cookie holds a depth limit, not a clock: its
		 * trigger keeps a link of its own. */
		if (!(fl & SF_SUBTREE) && id < (int)SITE_FLAG_IDS && trigger_matches((uint32_t)id) &&
		    fold_add((uint32_t)id))
			fl |= SF_TRIGGER;
		if (id < (int)SITE_FLAG_IDS) {
			atomic_store_explicit(&rec_site_flags[id], (uint16_t)fl, memory_order_relaxed);
			if (fl)
				rec_have_flags = 1;
		}
		addrs[(*n)++] = info.addr;
	}
	free(prog);
	return addrs;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* A change needle ctl asked for: the fields change carries (graph,
 * depth, filter, notrace; an empty list is every function for filter,
 * none for notrace), applied to the live recording in one patch batch at
 * most.  The caller holds config_lock; the patching takes the agent's
 * control mutex itself (needle.h).  0 or -errno; msg says what happened
 * either way. */
static int reconfigure(const struct record_config *change, char *msg, size_t msglen)
{
	if (!rec_link) {
		snprintf(msg, msglen, "not recording");
		return -ENOENT;
	}
	int set_filter = RECORD_CONFIG_HAS(change, filter), set_notrace = RECORD_CONFIG_HAS(change, notrace);
	const char *filter = set_filter ? change->filter : cur_filter;
	const char *notrace = set_notrace ? change->notrace : cur_notrace;
	int err = 0;

	if (set_filter || set_notrace) {
		size_t n, usable;
		/* Sites the meta file does not name yet (found by a refresh
		 * since) are named before any can be selected. */
		if (meta_map && needle_site_count() > meta_sites && meta_dump(-1))
			pr_warn("cannot name newly found functions; they stay untraced\n");
		uint64_t *addrs = select_sites(filter, notrace, &n, &usable);
		if (!addrs) {
			snprintf(msg, msglen, "out of memory");
			return -ENOMEM;
		}
		if (!n) {
			free(addrs);
			snprintf(msg, msglen, "the filters match no function; nothing changed");
			return -ENOENT;
		}
		struct needle_attach_opts o = { .sz = sizeof(o), .addrs = addrs, .addr_cnt = n };
		err = needle_link_update(rec_link, &o);
		free(addrs);
		if (err < 0) {
			snprintf(msg, msglen, "patching failed (%d)", err);
			return err;
		}
		char *f = dup_or_null(filter), *nt = dup_or_null(notrace);
		free(cur_filter);
		free(cur_notrace);
		cur_filter = f;
		cur_notrace = nt;
	}
	if (RECORD_CONFIG_HAS(change, depth))
		rec_max_depth = change->depth ? (uint32_t)change->depth : UINT32_MAX;
	int graph = change->graph != 0;
	if (RECORD_CONFIG_HAS(change, graph) && graph != graph_tracer) {
		err = needle_link_set_handlers(rec_link, tracer_entry(graph), tracer_exit(graph));
		if (err < 0) {
			snprintf(msg, msglen, "cannot switch the tracer (%d)", err);
			return err;
		}
		graph_tracer = graph;
	}
	/* The sites or the tracer changed: which trigger calls the recorder
	 * times changes with them. */
	char why[256];
	if (refold(why, sizeof(why)))
		pr_warn("%s\n", why);
	snprintf(msg, msglen, "tracing %d functions with %s", needle_link_site_count(rec_link),
		 graph_tracer ? "function_graph" : "function");
	return 0;
}

static int reconfigure_locked(const struct record_config *change, char *msg, size_t msglen)
{
	pthread_mutex_lock(&config_lock);
	int err = reconfigure(change, msg, msglen);
	pthread_mutex_unlock(&config_lock);
	return err;
}

/* A CTL_CONFIG_REQUEST: the fields given are the fields changed, and a
 * running recording changes only these four. */
#define CTL_CHANGEABLE                                                                              \
	(RECORD_CONFIG_BIT(RECORD_CONFIG_TAG_graph) | RECORD_CONFIG_BIT(RECORD_CONFIG_TAG_depth) |  \
	 RECORD_CONFIG_BIT(RECORD_CONFIG_TAG_filter) | RECORD_CONFIG_BIT(RECORD_CONFIG_TAG_notrace))

static int ctl_config(const uint8_t *body, size_t len, char *msg, size_t msglen)
{
	struct record_config change;
	int err = record_config_decode(body, len, &change);

	if (err) {
		snprintf(msg, msglen, "%s", err == -ENOMEM ? "out of memory" : "malformed configuration");
		return err;
	}
	if (change.present & ~CTL_CHANGEABLE) {
		snprintf(msg, msglen, "a running recording changes only its filter, notrace, tracer and depth");
		err = -EINVAL;
	} else if ((RECORD_CONFIG_HAS(&change, graph) && (change.graph < 0 || change.graph > 1)) ||
		   (RECORD_CONFIG_HAS(&change, depth) && (change.depth < 0 || change.depth > UINT32_MAX))) {
		snprintf(msg, msglen, "tracer or depth out of range");
		err = -EINVAL;
	} else {
		err = reconfigure_locked(&change, msg, msglen);
	}
	record_config_free(&change);
	return err;
}

/* needle ctl's requests (common/ctl_protocol.h), on the thread that
 * serves the control socket (control.c). */
static int ctl_request(char *line, const uint8_t *body, size_t body_len, char *msg, size_t msglen)
{
	if (body)
		return ctl_config(body, body_len, msg, msglen);
	if (!strcmp(line, "snapshot")) {
		int err = trigger_snapshot_now();
		snprintf(msg, msglen, "%s", err ? "not a --snapshot recording: nothing to snapshot"
						: "snapshot asked for; needle record writes it");
		return err;
	}
	if (!strcmp(line, "kernel on") || !strcmp(line, "kernel off")) {
		/* needle record stops or starts the kernel's events at its next
		 * drain (shm_layout.h). */
		if (!shm || !atomic_load_explicit(&shm->kernel_on, memory_order_relaxed)) {
			snprintf(msg, msglen, "not recording the kernel's events (needle record --kernel)");
			return -ENOENT;
		}
		int off = !strcmp(line, "kernel off");
		atomic_store_explicit(&shm->kernel_paused, (uint32_t)off, memory_order_relaxed);
		snprintf(msg, msglen, "kernel events %s", off ? "paused" : "recorded");
		return 0;
	}
	if (strcmp(line, "status")) {
		snprintf(msg, msglen, "unknown command '%.64s' (filter, notrace, tracer, depth, snapshot, kernel, status)",
			 line);
		return -EINVAL;
	}
	struct record_config none;
	memset(&none, 0, sizeof(none));
	return reconfigure_locked(&none, msg, msglen); /* changes nothing, says what is traced */
}


/* A program needle record started: what it asked for, from the memfd
 * whose descriptor is RECORD_CONFIG_ENV's, read once (the constructor,
 * before any other thread) and kept for the process's life. */
static struct record_config env_config;
static int env_config_read; /* 1 read: env_config_err says how */
static int env_config_err;  /* 1 there, 0 no such variable, negative errno */

/* The program and the processes it starts see the environment they
 * would have without needle.  When the config could not be read, its
 * orig_ld_preload is unknown: needle record put libneedle first in
 * LD_PRELOAD (src/cli/record/spawn.c), so that entry goes and the rest
 * stays. */
static void restore_environment(int config_read)
{
	const char *orig = env_config.orig_ld_preload;
	/* An exec'ed program's config carries no orig_ld_preload: the
	 * exec'ing process put libneedle first in the program's own value. */
	if (!config_read || !orig) {
		const char *cur = getenv("LD_PRELOAD");
		const char *colon = cur ? strchr(cur, ':') : NULL;
		const char *first_end = colon ? colon : cur ? cur + strlen(cur) : NULL;
		const char *base = cur ? memrchr(cur, '/', (size_t)(first_end - cur)) : NULL;
		base = base ? base + 1 : cur;
		if (cur && !strncmp(base, "libneedle", 9))
			orig = colon ? colon + 1 : NULL;
		else
			orig = cur;
	}
	/* orig may point into the variable setenv replaces. */
	char *keep = orig && *orig ? strdup(orig) : NULL;
	if (keep)
		setenv("LD_PRELOAD", keep, 1);
	else
		unsetenv("LD_PRELOAD");
	free(keep);
	unsetenv(RECORD_CONFIG_ENV);
}

int recorder_env_config(const struct record_config **config)
{
	if (env_config_read) {
		*config = env_config_err == 1 ? &env_config : NULL;
		return env_config_err;
	}
	env_config_read = 1;
	*config = NULL;
	const char *env = getenv(RECORD_CONFIG_ENV);
	if (!env)
		return env_config_err = 0;
	env_mode = 1;
	int fd = atoi(env), err = -EPROTO;
	struct stat st;
	uint8_t *bytes = NULL;
	if (fd > 2 && !fstat(fd, &st) && st.st_size >= RECORD_CONFIG_HEADER && (bytes = malloc((size_t)st.st_size))) {
		ssize_t got = pread(fd, bytes, (size_t)st.st_size, 0);
		err = got == st.st_size ? record_config_decode(bytes, (size_t)got, &env_config) : -EIO;
	}
	free(bytes);
	if (fd > 2)
		close(fd);
	if (err) {
		/* Nothing can be told to needle record without the descriptors
		 * the bytes carry: it says the agent never started. */
		restore_environment(0);
		return env_config_err = err;
	}
	*config = &env_config;
	return env_config_err = 1;
}

/* What the user asked for cannot be traced in this program at all. */
static int user_error(int err)
{
	return err == -ENOEXEC || err == -ENOENT;
}

/* Says why in the meta file and the buffer header, and closes meta_fd:
 * a process left running keeps no descriptor of a recording that did not
 * start. */
static void exec_template_build(void);
static int fail(int meta_fd, int err, const char *msg)
{
	char line[512];

	if (env_mode)
		restore_environment(1); /* the program runs on, and its children too */
	snprintf(line, sizeof(line), META_ERROR_WRITE, -err, msg);
	if (join_mode) {
		snprintf(line, sizeof(line), META_ERROR_WRITE, -err, "");
		size_t n = strlen(line) - 1;
		snprintf(line + n, sizeof(line) - n, "%s: %s\n", program_invocation_name, msg);
		/* An exec'ed program: said in its own block, for needle record
		 * to report; the recording's state is its first program's. */
		meta_append(line, strlen(line));
		if (meta_fd >= 0)
			close(meta_fd);
		/* Nothing of it to trace (--sites=compiled and a shell in
		 * between, filters that name none of its functions): the
		 * programs it exec's in turn are followed all the same. */
		if (user_error(err) && !attach_tried && shm && meta_map) {
			exec_forward = 1;
			exec_template_build();
			return err;
		}
		if (attach_tried)
			needle_sync();
		if (meta_map)
			munmap(meta_map, meta_len);
		meta_map = NULL;
		meta_len = 0;
		if (shm)
			munmap(shm, shm_mapped);
		shm = NULL;
		ring = NULL;
		shm_mapped = 0;
		return err;
	}
	if (meta_fd >= 0) {
		meta_write(meta_fd, line);
		close(meta_fd);
	}
	if (shm) {
		shm->agent_error = err;
		atomic_store(&shm->agent_state, user_error(err) ? AGENT_FAILED : AGENT_UNTRACED);
		/* needle record reads the state through its own mapping; a
		 * process left running (needle record -p) keeps nothing of a
		 * recording that did not start, so a later -p finds it free.
		 * After an attach that failed half-way, handlers may have run:
		 * a grace period first, so that none still writes the ring. */
		if (attach_tried)
			needle_sync();
		hold_client_detach();
		munmap(shm, shm_mapped);
		shm = NULL;
		ring = NULL;
		shm_mapped = 0;
	}
	return err;
}

void recorder_report_failure_fds(int buf_fd, int meta_fd, int err)
{
	struct shm_header probe;

	if (pread(buf_fd, &probe, sizeof(probe), 0) == (ssize_t)sizeof(probe) && probe.magic == SHM_MAGIC) {
		void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, buf_fd, 0);
		if (map != MAP_FAILED) {
			shm = map; /* only the header: for fail() to set the state */
			shm_mapped = 4096;
		}
	}
	close(buf_fd);
	fail(meta_fd, err, err == -ENOMEM ? "libneedle could not start: out of memory"
					  : "libneedle could not start in this process");
}

void recorder_report_failure(int err)
{
	const struct record_config *config;

	if (recorder_env_config(&config) != 1)
		return;
	if (config->image > 0) {
		/* An exec'ed program: it runs untraced, and the recording's
		 * state stays its first program's. */
		close((int)config->buf_fd);
		close((int)config->meta_fd);
		restore_environment(1);
		return;
	}
	recorder_report_failure_fds((int)config->buf_fd, (int)config->meta_fd, err);
}

int recorder_start_from_env(void)
{
	const struct record_config *config;
	int err = recorder_env_config(&config);

	if (err <= 0)
		return err;
	struct recorder_start_cfg cfg = {
		.buf_fd = (int)config->buf_fd,
		.meta_fd = (int)config->meta_fd,
		.config = config,
	};
	err = recorder_start(&cfg);
	/* An exec'ed program that cannot be traced (filters that match none
	 * of its functions) runs untraced: the recording is its parent's. */
	return join_mode && err < 0 ? 0 : err;
}

/* The config of a program this process exec's into (exec_follow.c):
 * this one's, with image, buf_fd and meta_fd to be filled in and no
 * orig_ld_preload (the exec'ing process puts libneedle first in the
 * program's own LD_PRELOAD).  Encoded once, at the start, so that an exec
 * allocates nothing: it may run in a vfork child or a signal handler. */
static uint8_t *exec_tmpl;
static size_t exec_tmpl_len, exec_off_image, exec_off_buf, exec_off_meta;

static void exec_template_build(void)
{
	struct record_config c = env_config;

	free(exec_tmpl);
	exec_tmpl = NULL;
	exec_follow_init();
	if (!c.rec_pid || !c.rec_buf_fd || !c.rec_meta_fd || !meta_map || c.no_follow_exec)
		return; /* --no-follow-exec, or an older needle record: exec'ed programs run untraced */
	c.orig_ld_preload = NULL;
	c.image = 1;
	c.buf_fd = c.meta_fd = 1; /* present, filled in at each exec */
	if (record_config_encode(&c, &exec_tmpl, &exec_tmpl_len))
		return;
	exec_off_image = record_config_int_offset(exec_tmpl, exec_tmpl_len, RECORD_CONFIG_TAG_image);
	exec_off_buf = record_config_int_offset(exec_tmpl, exec_tmpl_len, RECORD_CONFIG_TAG_buf_fd);
	exec_off_meta = record_config_int_offset(exec_tmpl, exec_tmpl_len, RECORD_CONFIG_TAG_meta_fd);
	if (!exec_off_image || !exec_off_buf || !exec_off_meta) {
		free(exec_tmpl);
		exec_tmpl = NULL;
	}
}

/* A descriptor of needle record's fd (its buffer or meta file), opened
 * again through /proc (the program keeps none of its own), at a number
 * out of the program's way and without close-on-exec. */
static int reopen_recorder_fd(int64_t fd, int *out)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%lld/fd/%lld", (long long)env_config.rec_pid, (long long)fd);
	int f = open(path, O_RDWR | O_CLOEXEC);
	if (f < 0)
		return -errno;
	*out = fd_dup_high(f, F_DUPFD);
	int e = errno;
	close(f);
	return *out < 0 ? -e : 0;
}

static int write_all_at(int fd, const void *p, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p = (const char *)p + w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

int recorder_exec_prepare(struct exec_follow *f)
{
	f->config_fd = f->buf_fd = f->meta_fd = -1;
	if (!exec_tmpl || !shm || !(__atomic_load_n(&rec_active, __ATOMIC_RELAXED) || exec_forward))
		return -ENOENT;
	int err = reopen_recorder_fd(env_config.rec_buf_fd, &f->buf_fd);
	if (!err)
		err = reopen_recorder_fd(env_config.rec_meta_fd, &f->meta_fd);
	int c = err ? -1 : memfd_create("needle-config", MFD_CLOEXEC);
	if (!err && c < 0)
		err = -errno;
	if (!err) {
		int64_t image = (int64_t)atomic_fetch_add_explicit(&shm->images, 1, memory_order_relaxed) + 1;
		int64_t b = f->buf_fd, m = f->meta_fd;
		err = write_all_at(c, exec_tmpl, exec_tmpl_len, 0);
		if (!err)
			err = write_all_at(c, &image, 8, (off_t)exec_off_image);
		if (!err)
			err = write_all_at(c, &b, 8, (off_t)exec_off_buf);
		if (!err)
			err = write_all_at(c, &m, 8, (off_t)exec_off_meta);
		if (!err && (f->config_fd = fd_dup_high(c, F_DUPFD)) < 0)
			err = -errno;
	}
	if (c >= 0)
		close(c);
	if (err) {
		recorder_exec_abandon(f);
		return err;
	}
	return 0;
}

void recorder_exec_abandon(struct exec_follow *f)
{
	int e = errno;
	if (f->config_fd >= 0)
		close(f->config_fd);
	if (f->buf_fd >= 0)
		close(f->buf_fd);
	if (f->meta_fd >= 0)
		close(f->meta_fd);
	f->config_fd = f->buf_fd = f->meta_fd = -1;
	errno = e;
}

void recorder_exec_note(const char *line)
{
	/* From a forked child too: blocks are reserved, not placed. */
	if (shm && meta_map)
		meta_append(line, strlen(line));
}

/* The meta file mapped for the records appended later (meta_append); the
 * descriptor goes: the program sees none of needle's.  0, or -errno. */
static int meta_map_fd(int meta_fd)
{
	struct stat st;

	if (fstat(meta_fd, &st) || st.st_size <= 0)
		return -EINVAL;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, meta_fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	meta_map = m;
	meta_len = (size_t)st.st_size;
	meta_pid = getpid();
	return 0;
}

int recorder_start(const struct recorder_start_cfg *cfg)
{
	const struct record_config *rc = cfg->config;
	const char *filter = rc->filter, *notrace = rc->notrace;
	int graph = rc->graph != 0, buf_fd = cfg->buf_fd, meta_fd = cfg->meta_fd, err;
	uint64_t *addrs;
	size_t n = 0, usable = 0;

	if (rec_link) {
		/* Said in the new buffer's header, never in the one this
		 * recording writes. */
		struct shm_header *h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, buf_fd, 0);
		char line[128];
		snprintf(line, sizeof(line), META_ERROR_WRITE, EBUSY, "the process is already being recorded");
		meta_write(meta_fd, line);
		if (h != MAP_FAILED) {
			h->agent_error = -EBUSY;
			atomic_store(&h->agent_state, AGENT_FAILED);
			munmap(h, 4096);
		}
		close(buf_fd);
		close(meta_fd);
		return -EBUSY;
	}
	struct shm_header probe;
	if (pread(buf_fd, &probe, sizeof(probe), 0) != (ssize_t)sizeof(probe) || probe.magic != SHM_MAGIC ||
	    probe.version != SHM_VERSION) {
		close(buf_fd);
		return fail(meta_fd, -EINVAL, "trace buffer is not a needle buffer of this version");
	}
	/* MAP_POPULATE: page-table entries up front, not a fault per page
	 * on the hot path. */
	void *map = mmap(NULL, probe.total_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, buf_fd, 0);
	close(buf_fd);
	if (map == MAP_FAILED)
		return fail(meta_fd, -errno, "cannot map the trace buffer");
	shm = map;
	shm_mapped = probe.total_size;
	ring = shm_ring(shm);
	hold_client_attach(shm);
	join_mode = env_mode && rc->image > 0;
	rec_image = join_mode ? (uint32_t)rc->image : 0;
	if (join_mode) {
		/* The clock its first program chose, whatever this one would. */
		use_tsc = shm->clock_source == CLOCK_SOURCE_TSC;
		int e = meta_map_fd(meta_fd);
		close(meta_fd);
		meta_fd = -1;
		if (e)
			return fail(meta_fd, e, "cannot map the meta file");
	} else {
		use_tsc = tsc_usable();
		shm->clock_source = use_tsc ? CLOCK_SOURCE_TSC : CLOCK_SOURCE_MONOTONIC;
	}
	if (overwrite_init(shm))
		return fail(meta_fd, -ENOMEM, "out of memory");
	rec_max_depth = rc->depth > 0 && rc->depth < UINT32_MAX ? (uint32_t)rc->depth : UINT32_MAX;
	estimate_return = rc->estimate_return > 0;
	rec_watch_cpu = (rc->watch & RECORD_WATCH_CPU) != 0;
	/* A later session (needle record -p again) counts its own. */
	if (atomic_exchange(&entry_only_used, 0))
		memset(entry_only_seen, 0, sizeof(entry_only_seen));

	meta_sites = meta_objects = 0;
	meta_modules = 0;
	attach_tried = 0;
	if ((err = meta_dump(meta_fd)))
		return fail(meta_fd, err, "cannot write the site table");
	if (needle_site_count() <= 0)
		return fail(meta_fd, -ENOEXEC,
			    "the program has no patchable function entries: record it without "
			    "--sites=compiled (its functions are then relocated), or build it with "
			    "-fpatchable-function-entry=5 (gcc or clang), or -pg -mfentry");
	args_set_max_string(rc->max_string > 0 ? (uint32_t)rc->max_string : VALUE_STRING_DEFAULT);
	args_reset(); /* the last recording's link is detached and synchronized */
	if (((rc->args && *rc->args) || (rc->arg_filters && *rc->arg_filters)) &&
	    (err = args_configure(rc->args, rc->arg_filters)))
		return fail(meta_fd, err, err == -ENOENT ? "-A/-R: no traceable function matches" : "-A/-R: a spec it cannot use");
	libcall_mode = (int)rc->libcall;
	rec_libcall_program = libcall_mode == LIBCALL_PROGRAM;
	min_size = rc->min_size > 0 ? (uint64_t)rc->min_size : 0;
	patch_keeps_libcalls = rc->patch_keeps_libcalls > 0;
	rec_have_subtree = rc->subtree && *rc->subtree;
	rec_have_flags = 0;
	free(cur_subtree);
	free(cur_drop);
	cur_subtree = dup_or_null(rc->subtree);
	cur_drop = dup_or_null(rc->drop);
	free(cur_on);
	free(cur_off);
	free(cur_finish);
	cur_on = dup_or_null(rc->trace_on);
	cur_off = dup_or_null(rc->trace_off);
	cur_finish = dup_or_null(rc->finish);
	atomic_store_explicit(&rec_paused, rc->start_paused > 0 ? PAUSE_OFF : 0, memory_order_relaxed);
	if (rc->signals && *rc->signals && (err = signals_configure(rc->signals)))
		return fail(meta_fd, err, "--signal: needle cannot take that signal in this program");
	/* Read before the sites are chosen: select_sites marks the ones a
	 * trigger names, for the recorder to time. */
	trigger_stop(); /* a failed start's */
	trigger_init(shm, rec_image);
	if (rc->triggers && *rc->triggers) {
		char why[512];
		if ((err = trigger_parse(rc->triggers, (uint64_t)rc->trigger_gap_ns, (uint64_t)rc->trigger_after_ns, why,
					 sizeof(why))))
			return fail(meta_fd, err, why);
	}
	if (!(addrs = select_sites(filter, notrace, &n, &usable))) {
		trigger_stop();
		return fail(meta_fd, -ENOMEM, "out of memory");
	}
	if (rec_have_subtree && !subtree_sites && !subtree_awaits_object(cur_subtree) && rc->subtree_optional > 0) {
		pr_warn("-F names no function here; recording every call, as uftrace does\n");
		rec_have_subtree = 0;
		free(cur_subtree);
		cur_subtree = NULL;
	}
	if ((rec_have_subtree && !subtree_sites && !subtree_awaits_object(cur_subtree)) ||
	    (patch_keeps_libcalls && filter && *filter && !patch_sites)) {
		free(addrs);
		if (!patch_sites && patch_libcalls_dropped)
			return fail(meta_fd, -ENOENT, "-P names only library functions, which --no-libcall leaves out: "
				    "name them as -P NAME@LIBRARY to patch them as functions of their own");
		return fail(meta_fd, -ENOENT, "the filters match no function");
	}
	cur_filter = dup_or_null(filter);
	cur_notrace = dup_or_null(notrace);
	graph_tracer = graph;
	if (env_mode)
		restore_environment(1);
	if (!n) {
		free(addrs);
		/* Nothing usable at all is the agent's failure, not the filters'. */
		if (!usable)
			return fail(meta_fd, -EIO, "no function could be prepared for tracing (see above)");
		return fail(meta_fd, -ENOENT, "the filters match no function");
	}
	struct needle_attach_opts o = {
		.sz = sizeof(o),
		.addrs = addrs,
		.addr_cnt = n,
		.entry = tracer_entry(graph),
		.exit = tracer_exit(graph),
		.thread_data_size = sizeof(struct rec_thread),
		.thread_exit = thread_exit,
		.thread_fork = after_fork_child,
		.context_switch = context_switch,
	};
	/* The direct path (recorder_direct.c) for function_graph; NEEDLE_DIRECT=0
	 * leaves every call to the full one (benchmarks measure both). */
	const char *direct = getenv("NEEDLE_DIRECT");
	/* -W: every event looks at the CPU, which the direct path does not. */
	if (graph && !estimate_return && !rec_watch_cpu && !(direct && *direct == '0')) {
		o.direct_entry = rec_graph_direct_entry;
		o.direct_exit = rec_graph_direct_exit;
	}
	rec_active = 1;
	attach_tried = 1;
	err = needle_attach(&o, &rec_link);
	free(addrs);
	if (err == -EOPNOTSUPP) {
		rec_active = 0;
		return fail(meta_fd, err, "CET shadow stacks are enabled in this process, so function_graph "
			    "cannot hook returns: record with -t function, or run with "
			    "GLIBC_TUNABLES=glibc.cpu.x86_shstk=off");
	}
	if (err < 0) {
		char why[160];
		rec_active = 0;
		rec_link = NULL;
		snprintf(why, sizeof(why), "cannot patch the program's functions: %s", strerror(-err));
		return fail(meta_fd, err, why);
	}
	int traced = err;
	char why[512];
	if ((err = refold(why, sizeof(why)))) {
		rec_active = 0;
		trigger_stop();
		needle_link_destroy(rec_link);
		rec_link = NULL;
		return fail(meta_fd, err, why);
	}
	if (join_mode) {
		exec_template_build(); /* it may exec in turn */
		return 1; /* no T: the recording's state is its first program's */
	}
	char line[64];
	snprintf(line, sizeof(line), META_TRACED_WRITE, traced);
	meta_write(meta_fd, line);
	/* Mapped for the objects dlopen'ed later (recorder_object_loaded)
	 * and the records of exec'ed programs, which append from the end of
	 * what was written so far (the release pairs with nothing: an exec
	 * that reads meta_tail runs in a thread of this process, later). */
	off_t pos = lseek(meta_fd, 0, SEEK_CUR);
	if (pos > 0 && !meta_map_fd(meta_fd)) {
		if ((size_t)pos < meta_len)
			atomic_store_explicit(&shm->meta_tail, (uint64_t)pos, memory_order_relaxed);
		else {
			munmap(meta_map, meta_len);
			meta_map = NULL;
			meta_len = 0;
		}
	}
	close(meta_fd);
	if (env_mode)
		exec_template_build();
	if (rc->ctl && (err = control_start(!cfg->ctl_polled, ctl_request)))
		pr_warn("cannot open the control socket (%d): needle ctl will not reach this process\n", err);
	atomic_store(&shm->agent_state, AGENT_RECORDING);
	return 1;
}

/* Under config_lock.  publish: this process is the recording's own, whose
 * AGENT_DETACHED tells the reader to salvage every chunk still owned; a
 * forked copy's release must not say it for its parent, which records on. */
static int stop_locked(int publish)
{
	int err;

	/* A copy without a link (an exec'ed image whose filters matched
	 * nothing) still maps the buffer: that goes. */
	if (!rec_link && (publish || !shm))
		return 0;
	if (!rec_link)
		goto unmap;
	rec_active = 0;
	trigger_stop();
	signal_front_remove_all();
	/* Every site back to its NOP in one batch, then a grace period: no
	 * handler of the link runs after this, and frames entered under it
	 * no longer call its exit handler (their generation is retired), so
	 * the buffer can go. */
	if ((err = needle_link_destroy(rec_link)))
		return err;
	rec_link = NULL;
	/* Release: the events of every handler that ran (ordered before the
	 * grace period's end) are visible before the reader's acquire load
	 * of the state tells it to salvage the chunks threads still own. */
	if (publish)
		atomic_store_explicit(&shm->agent_state, AGENT_DETACHED, memory_order_release);
unmap:
	exec_forward = 0; /* an exec from now on runs untraced (recorder_exec_prepare) */
	hold_client_detach();
	munmap(shm, shm_mapped);
	shm = NULL;
	ring = NULL;
	shm_mapped = 0;
	free(cur_filter);
	free(cur_notrace);
	cur_filter = cur_notrace = NULL;
	rec_max_depth = UINT32_MAX;
	if (meta_map)
		munmap(meta_map, meta_len);
	meta_map = NULL;
	meta_len = 0;
	meta_sites = meta_objects = 0;
	meta_modules = 0;
	return 0;
}

int recorder_stop(void)
{
	/* The control thread first, outside config_lock: it may be waiting
	 * for it, in reconfigure. */
	control_stop();
	pthread_mutex_lock(&config_lock);
	int err = stop_locked(1);
	pthread_mutex_unlock(&config_lock);
	return err;
}

int recorder_release_copy(void)
{
	/* The recording's own process, whose needle record was killed: its
	 * control thread too, as a detach would. */
	if (getpid() == meta_pid)
		control_stop();
	/* The copies of config_lock and of the control mutex are the
	 * parent's at the fork: held for good if another thread of the
	 * parent held one then (a `needle ctl` reconfiguration, a dlclose),
	 * since no atfork handler takes them.  Waited for a while, not
	 * forever: a thread of this process may hold them too.  In the order
	 * recorder_stop takes them (the control mutex inside the link's
	 * functions, recursive: taken here first, it is not waited for
	 * there). */
	for (int i = 0;; i++) {
		if (!pthread_mutex_trylock(&config_lock))
			break;
		if (i == 200)
			return -EDEADLK;
		struct timespec t = { 0, 5 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	int err = control_lock_try(1000);
	if (err) {
		pthread_mutex_unlock(&config_lock);
		return err;
	}
	err = stop_locked(0);
	pthread_mutex_unlock(&config_lock);
	control_unlock();
	return err;
}

int recorder_wants_new_objects(void)
{
	return __atomic_load_n(&rec_active, __ATOMIC_RELAXED) && meta_map && getpid() == meta_pid;
}

void recorder_object_loaded(void)
{
	pthread_mutex_lock(&config_lock);
	/* A forked child shares the meta file and the site numbering up to
	 * the fork only: its own objects stay untraced. */
	if (!rec_link || !meta_map || getpid() != meta_pid) {
		pthread_mutex_unlock(&config_lock);
		return;
	}
	int err = needle_refresh();
	if (err < 0)
		pr_warn("cannot discover the functions of a newly loaded object (%d); they stay untraced\n", err);
	/* Sites found since the meta file was last written (by this refresh,
	 * or one the API or a link update made meanwhile). */
	if (err >= 0 && needle_site_count() > meta_sites) {
		/* Named in the meta file before any of their events can be
		 * written: the link takes them only after. */
		if ((err = meta_dump(-1)))
			pr_warn("cannot name the functions of a newly loaded object (%d); they stay untraced\n", err);
		size_t n, usable;
		uint64_t *addrs = err ? NULL : select_sites(cur_filter, cur_notrace, &n, &usable);
		if (addrs && n) {
			struct needle_attach_opts o = { .sz = sizeof(o), .addrs = addrs, .addr_cnt = n };
			if ((err = needle_link_update(rec_link, &o)) < 0)
				pr_warn("cannot patch the functions of a newly loaded object (%d)\n", err);
			int traced = err < 0 ? -1 : needle_link_site_count(rec_link);
			char line[64];
			/* The newest count is the one read (record_meta.c). */
			snprintf(line, sizeof(line), META_TRACED_WRITE, traced);
			if (traced >= 0 && !join_mode)
				meta_append(line, strlen(line));
			char why[256];
			if (err >= 0 && refold(why, sizeof(why)))
				pr_warn("%s\n", why);
		}
		free(addrs);
	}
	pthread_mutex_unlock(&config_lock);
}

void recorder_untraced_counters(_Atomic uint64_t **refused, _Atomic uint64_t **shared_tls)
{
	*refused = shm ? &shm->threads_refused : NULL;
	*shared_tls = shm ? &shm->threads_shared_tls : NULL;
}
