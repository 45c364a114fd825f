/* needle.h - the public API of libneedle, the in-process function tracer.
 *
 * libneedle finds every patchable function entry in the running process
 * (the main executable and every shared object, including ones dlopen'ed
 * later), and switches those entries between a 5-byte NOP and a CALL into
 * needle's trampoline while other threads keep running them.  Callers
 * attach entry and exit handlers to many functions at once and get back a
 * link; detaching the link restores the NOPs.
 *
 * Conventions (as in libbpf): functions return 0 or a non-negative value on
 * success and a negative errno on failure; option structs start with a
 * `sz` field set to sizeof(struct), so that the struct can grow without
 * breaking callers built against an older header.  Error details are
 * reported through the print callback (needle_set_print), which by default
 * writes warnings and errors to stderr.
 *
 * Linking.  The library is libneedle.so.1 (soname); its needle_* functions
 * carry the symbol version NEEDLE_1.0.  NEEDLE_VERSION is the version this
 * header describes, needle_version() the one the program runs with.
 *
 * What loading libneedle brings.  It interposes these functions of the C
 * library and of the C++ runtime (each wrapper calls the real one, which
 * it finds with dlsym(RTLD_NEXT)).  They are exported without a symbol
 * version, so that they take the place of the versioned originals; for
 * that, libneedle must come before the C library in the symbol search
 * order: link with -lneedle, or preload it (LD_PRELOAD=libneedle.so, ahead
 * of any library that uses it).
 *   pthread_sigmask, sigprocmask: note whether the calling thread now
 *       blocks SIGTRAP (a thread that hits a site being patched while it
 *       blocks SIGTRAP would be killed), so that patch batches know it
 *       without reading /proc, and SIGSEGV or SIGBUS (string arguments
 *       are then read with a system call); the mask is set as asked.
 *   pthread_create: a thread created by one that blocks SIGTRAP inherits
 *       that mask, and is noted as blocking it.
 *   sigaction, signal: a handler's sa_mask is installed without SIGTRAP
 *       (a site hit inside the handler during a patch batch must not kill
 *       the process) and with needle's stop signal (a thread is never
 *       stopped for a rewrite inside a signal handler), and, once
 *       `needle record` has read string arguments in the process, without
 *       SIGSEGV and SIGBUS (a bad string pointer read inside the handler
 *       would otherwise kill the process); reading the action back shows
 *       the mask the program gave.  The program's own SIGSEGV and SIGBUS
 *       handlers are then called through libneedle's.
 *   swapcontext, setcontext: the shadow stack of hooked returns follows
 *       the switch to another machine stack (coroutines); the mask the
 *       context sets is noted.
 *   sigsuspend, ppoll, __ppoll_chk, pselect, epoll_pwait, epoll_pwait2:
 *       note that a handler may run inside under the mask passed; the
 *       call is the C library's, unchanged.
 *   _Unwind_RaiseException, _Unwind_Resume_or_Rethrow: the real return
 *       addresses go back on the stack before a C++ exception unwinds it
 *       (the unwinder cannot walk through a hooked return).
 *   __cxa_begin_catch: where an exception is caught, the exit handlers of
 *       the calls it unwound run (NEEDLE_EXIT_UNWOUND) and the returns of
 *       the live calls are hooked again.
 *   pthread_exit: the exit handlers of the thread's open calls run
 *       (NEEDLE_EXIT_UNWOUND) and real return addresses are restored
 *       before the thread unwinds.
 *   backtrace: walks the stack with the real return addresses.
 *   dlclose: unloads under libneedle's lock, so that no patch batch writes
 *       into an object being unmapped, then retires the object's sites.
 *   dlopen: while `needle record` records, the new object's functions are
 *       discovered and patched before dlopen returns (when the loader's
 *       search is the same from libneedle; otherwise the call goes to the
 *       C library's dlopen untouched).
 *   longjmp, _longjmp, siglongjmp, __longjmp_chk: unblock libneedle's stop
 *       signal (which sigaction adds to handlers' masks) unless the program
 *       blocked it itself, so that leaving a handler by a jump leaves the
 *       mask as it would be untraced; and a jump out of a signal handler
 *       that interrupted needle (one of these handlers, or a trampoline)
 *       closes the read section the interrupted code had open.
 *   sigaltstack: remembers the thread's alternate signal stack, so that a
 *       handler's calls on it (SS_AUTODISARM included) nest above the
 *       interrupted call instead of closing it.
 *
 * Where handlers run.  An entry or exit handler runs on the thread that
 * made the traced call, wherever that call is made:
 *   - in signal handlers (a traced function called from a signal handler,
 *     which may have interrupted the program anywhere, e.g. inside malloc
 *     or while holding a lock);
 *   - on the way out of threads and processes: thread_local destructors,
 *     atexit handlers, destructors; at thread exit libneedle's own pthread
 *     key destructor runs the exit handlers of the calls the thread left
 *     open (NEEDLE_EXIT_UNWOUND), and key destructors called after it
 *     (keys created after libneedle was loaded) run untraced;
 *   - during unwinding: exit handlers with NEEDLE_EXIT_UNWOUND run inside
 *     __cxa_begin_catch, pthread_exit, a pthread_cancel unwind, or the next
 *     traced call or return after a longjmp;
 *   - in forked children, which keep the parent's links;
 *   - for calls that hit a site while a patch batch had its int3 on it:
 *     libneedle's SIGTRAP handler emulates the call and the handlers run
 *     as for any other, as soon as needle_attach has started patching;
 *   - on any thread, including threads the program made with a raw clone
 *     system call that have their own TLS (threads that share their
 *     creator's TLS run untraced: threads_shared_tls in needle_get_stats).
 * So handlers must be async-signal-safe (no malloc, stdio, locks or
 * anything else a signal handler may not call; keep errno as found) and
 * reentrant across threads; they must not block, must return (no longjmp
 * or exception out of a handler), and must not call the needle_* functions
 * declared below (the inline accessors and needle_version excepted): those
 * take libneedle's lock, which a detach holds while it waits for running
 * handlers (needle_link_detach and needle_link_destroy called from a
 * handler, when they get the lock, detach the link and return -EDEADLK
 * rather than wait for themselves).  A traced function called from a
 * handler runs untraced.
 */
#ifndef NEEDLE_H
#define NEEDLE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NEEDLE_API __attribute__((visibility("default")))

/* The version of the API this header describes.  NEEDLE_VERSION orders
 * versions as one number (minor and patch stay below 100): compare it with
 * NEEDLE_VERSION_CODE(1, 0, 0) in #if, and with needle_version() at run
 * time.  The soname changes with the major version only. */
#define NEEDLE_VERSION_MAJOR 1
#define NEEDLE_VERSION_MINOR 0
#define NEEDLE_VERSION_PATCH 0
#define NEEDLE_VERSION_CODE(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define NEEDLE_VERSION NEEDLE_VERSION_CODE(NEEDLE_VERSION_MAJOR, NEEDLE_VERSION_MINOR, NEEDLE_VERSION_PATCH)

/* The NEEDLE_VERSION of the libneedle the program runs with. */
NEEDLE_API uint32_t needle_version(void);

/* Registers as the entry trampoline saved them.  On entry they hold the
 * traced function's arguments; on exit rax/rdx and xmm0/xmm1 hold its
 * return value.  Handlers must treat them as read-only. */
struct needle_regs {
	/* The integer argument registers, by name or as args[0..5]. */
	__extension__ union {
		uint64_t args[6];
		__extension__ struct {
			uint64_t rdi, rsi, rdx, rcx, r8, r9;
		};
	};
	uint64_t rax;                        /* vector count for varargs; return value on exit */
	uint64_t r10;                        /* static chain */
	uint8_t xmm[8][16] __attribute__((aligned(16)));
};

/* A traced function, as handlers see it.  Stable for the life of the
 * process. */
struct needle_func {
	uint64_t ip;           /* the function's symbol address (like bpf_get_func_ip) */
	uint64_t site_addr;    /* the patched 5 bytes: ip, or ip + 4 after endbr64 */
	const char *name;      /* symbol name, never NULL ("?" when unknown) */
	uint32_t site_id;      /* stable index of the site, see needle_site_info() */
	uint32_t reserved;
};

/* What a handler gets: the registers the trampoline saved (so reading an
 * argument is one load) and the function.  It lives on the traced
 * thread's stack for the duration of the handler call. */
struct needle_ctx {
	struct needle_regs regs;
	const struct needle_func *func;
	uint32_t is_exit;      /* 0 entry, NEEDLE_EXIT_RETURN or NEEDLE_EXIT_UNWOUND */
	uint32_t exit_flags;   /* at an exit: NEEDLE_EXIT_NO_RETVAL; at an entry: NEEDLE_ENTRY_NO_EXIT */
	/* This link's storage in the running thread (opts.thread_data_size
	 * bytes, zeroed before the thread's first use), or NULL if it reserved
	 * none.  Like the kernel's fgraph_get_task_var. */
	void *thread_data;
	/* This call's storage for this link (opts.call_data_size bytes): the
	 * entry handler fills it, the exit handler of the same call reads it.
	 * Like fgraph_reserve_data / fgraph_retrieve_data.  NULL if the link
	 * reserved none, or if this call's exit will not run (the shadow stack
	 * is full); not zeroed. */
	void *call_data;
	/* The stack pointer: at the entry, the traced function's own at its
	 * first instruction (it points at the return address; the arguments
	 * the ABI passes in memory start 8 bytes above it); at the exit, its
	 * caller's after the return; 0 for a call unwound (a longjmp or an
	 * exception skipped its return).  Read what it points at with care:
	 * only the words the function's parameters occupy are known to be
	 * the caller's. */
	uint64_t sp;
	uint64_t reserved2;
};

/* The layout the trampoline (src/agent/arch/x86_64/trampoline.S) writes. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define NEEDLE_LAYOUT_(cond) static_assert(cond, "struct needle_ctx layout: " #cond)
#elif defined(__cplusplus)
#define NEEDLE_LAYOUT_(cond) extern int needle_layout_check_[(cond) ? 1 : -1]
#else
#define NEEDLE_LAYOUT_(cond) __extension__ _Static_assert(cond, "struct needle_ctx layout: " #cond)
#endif
NEEDLE_LAYOUT_(offsetof(struct needle_regs, args) == 0 && sizeof(((struct needle_regs *)0)->args) == 48);
NEEDLE_LAYOUT_(offsetof(struct needle_regs, rdi) == 0 && offsetof(struct needle_regs, rsi) == 8);
NEEDLE_LAYOUT_(offsetof(struct needle_regs, rdx) == 16 && offsetof(struct needle_regs, rcx) == 24);
NEEDLE_LAYOUT_(offsetof(struct needle_regs, r8) == 32 && offsetof(struct needle_regs, r9) == 40);
NEEDLE_LAYOUT_(offsetof(struct needle_regs, rax) == 48 && offsetof(struct needle_regs, r10) == 56);
NEEDLE_LAYOUT_(offsetof(struct needle_regs, xmm) == 64 && sizeof(struct needle_regs) == 192);
NEEDLE_LAYOUT_(offsetof(struct needle_ctx, func) == 192 && offsetof(struct needle_ctx, is_exit) == 200);
NEEDLE_LAYOUT_(offsetof(struct needle_ctx, thread_data) == 208 && offsetof(struct needle_ctx, call_data) == 216);
NEEDLE_LAYOUT_(offsetof(struct needle_ctx, sp) == 224 && sizeof(struct needle_ctx) == 240);
#undef NEEDLE_LAYOUT_

/* ctx->is_exit in an exit handler: the function returned (regs hold its
 * return value), or it was unwound (longjmp, a C++ exception, thread exit)
 * without returning: its exit handler runs where the unwind was seen, and
 * regs are zero. */
#define NEEDLE_EXIT_RETURN 1
#define NEEDLE_EXIT_UNWOUND 2

/* ctx->exit_flags: the function left through a sibling call (a tail
 * call: an exit site before its jmp, a compiler's NOP5 or an XRay
 * tail-call sled), so the return value is its callee's, not yet in the
 * registers. */
#define NEEDLE_EXIT_NO_RETVAL 1u

/* ctx->exit_flags in an entry handler: this call's exit will not be seen,
 * and no exit handler runs for it (call_data is NULL).  Its return
 * address points into code outside every loaded ELF object (a JIT's: a
 * HotSpot or V8 stub, compiled Java or JavaScript) or into code a runtime
 * walks by its own rules (V8's builtins), and such runtimes read that
 * slot to find their frames, so needle leaves it alone.  Exit sites are
 * not affected: with them the exit is seen. */
#define NEEDLE_ENTRY_NO_EXIT 2u
/* With NEEDLE_ENTRY_NO_EXIT: no call of this function ever has its exit
 * seen, whoever calls it.  It finds its caller by its return address
 * (dlopen, dlsym, dlvsym, dlmopen: the caller's RUNPATH, $ORIGIN,
 * namespace, RTLD_NEXT), which a hooked return would change, returns
 * twice (setjmp, getcontext) or switches stacks (longjmp, siglongjmp,
 * swapcontext, setcontext). */
#define NEEDLE_ENTRY_NO_EXIT_FUNC 4u

/* Entry handlers return 0, or NEEDLE_SKIP_EXIT so that this call's exit
 * handler (of the same link) does not run.  *cookie starts at 0 and is
 * passed to the exit handler of the same call. */
#define NEEDLE_SKIP_EXIT 1

typedef int (*needle_entry_fn)(const struct needle_ctx *ctx, uint64_t *cookie, void *user_data);
typedef void (*needle_exit_fn)(const struct needle_ctx *ctx, uint64_t cookie, void *user_data);

/* Direct handlers (needle_attach_opts.direct_entry, .direct_exit): the
 * fast path of a link that is alone on a function, as the kernel's
 * ftrace_ops with a trampoline of its own.  The site's trampoline saves
 * only the general-purpose registers and calls them with no needle_ctx
 * built and no indirect dispatch through the consumer list; of regs,
 * only the integer part (args, rax, r10) is there to read, never xmm.  Contract, which needle cannot check:
 *   - built with -mgeneral-regs-only (gcc, clang), and calling nothing
 *     that is not: an SSE or x87 register they touched would reach the
 *     traced function as a changed argument or return value;
 *   - no effect at all when they return NEEDLE_DIRECT_DECLINE: the call
 *     then takes the full path, and the ordinary handler (entry, or exit
 *     for the same call) runs instead, with its needle_ctx.
 * They run in the same contexts as the ordinary handlers (any traced
 * thread, signal handlers included, never nested in another handler of
 * the thread).  The entry one gets the return address (ret_addr: for a
 * tail call of a traced function, needle's return hook, which
 * needle_is_return_hook tells) and returns 0, NEEDLE_SKIP_EXIT, NEEDLE_DIRECT_DECLINE or
 * NEEDLE_DIRECT_DECLINE_FUNC; the exit one
 * returns 0 or NEEDLE_DIRECT_DECLINE and runs at a hooked return (into
 * the trampoline that called the function, or a hijacked one), or at
 * an exit site before a ret, of any call of the link, whichever entry
 * handler took it (the cookie can tell them apart); never for an unwound
 * call or before a sibling call (the ordinary exit handler sees those).  needle declines for them too: a thread's first
 * traced call, a longjmp just noticed, call data, a return it cannot
 * hook, a link that shares the function.  needle_link_set_handlers drops
 * them unless it is given back the entry and exit they came with. */
#define NEEDLE_DIRECT_DECLINE 2
/* An entry's decline that holds for the function until the link's
 * functions or handlers change (needle_link_update, set_handlers, another
 * link on it): needle stops trying the direct path there, entry and exit,
 * until then. */
#define NEEDLE_DIRECT_DECLINE_FUNC 3
typedef int (*needle_direct_entry_fn)(const struct needle_func *func, const struct needle_regs *regs,
				      uint64_t ret_addr, void *thread_data, uint64_t *cookie, void *user_data);
typedef int (*needle_direct_exit_fn)(const struct needle_func *func, uint64_t cookie, void *thread_data,
				     void *user_data);

/* Argument n (0-based) of the integer class: rdi, rsi, rdx, rcx, r8, r9. */
static inline uint64_t needle_arg(const struct needle_ctx *ctx, unsigned n)
{
	return n < 6 ? ctx->regs.args[n] : 0;
}

/* Argument n (0-based) of the SSE class (double in xmm0..xmm7). */
static inline double needle_arg_double(const struct needle_ctx *ctx, unsigned n)
{
	double d = 0;
	if (n < 8)
		memcpy(&d, ctx->regs.xmm[n], sizeof(d));
	return d;
}

/* In an exit handler: the integer return value (rax). */
static inline uint64_t needle_retval(const struct needle_ctx *ctx)
{
	return ctx->regs.rax;
}

/* In an exit handler: the floating-point return value (xmm0). */
static inline double needle_retval_double(const struct needle_ctx *ctx)
{
	return needle_arg_double(ctx, 0);
}

struct needle_attach_opts {
	size_t sz; /* sizeof(struct needle_attach_opts) */
	/* Functions to trace: symbol names or globs (fnmatch(3) syntax, as in
	 * ftrace's set_ftrace_filter), which also match a C++ function's
	 * demangled name, without or with its parameters (needle_site_match);
	 * a pattern with ^, $, '.', (, | or + is a POSIX extended regular
	 * expression, found anywhere in the symbol or the demangled name
	 * without its parameters (as uftrace's patterns are) ... */
	const char *const *patterns;
	size_t pattern_cnt;
	/* ... and/or addresses (a function's symbol address or its site
	 * address).  Every pattern and address must match at least one site. */
	const uint64_t *addrs;
	size_t addr_cnt;
	needle_entry_fn entry; /* may be NULL */
	needle_exit_fn exit;   /* may be NULL; at least one of the two is set */
	void *user_data;
	uint32_t flags;        /* NEEDLE_ATTACH_* */
	/* Everything below is optional (zero: none).  Like the kernel's
	 * fgraph_ops, a link can keep state per thread and per call, and hear
	 * of a thread's end, a fork and coroutine switches. */
	size_t thread_data_size; /* ctx->thread_data bytes per thread (at most 1024) */
	size_t call_data_size;   /* ctx->call_data bytes per call (at most 256) */
	/* A thread whose thread_data this link used exits (runs in that
	 * thread, after the exits of its calls still open). */
	void (*thread_exit)(void *thread_data, void *user_data);
	/* In a forked child, for the thread that forked: thread_data is its
	 * copy of the parent's (also after raw clone/clone3 forks). */
	void (*thread_fork)(void *thread_data, void *user_data);
	/* The thread switches coroutine context (swapcontext, setcontext, a
	 * context ending through uc_link): from (NULL if unknown) and to are
	 * the ucontext_t pointers.  Runs before the switch. */
	void (*context_switch)(const void *from, const void *to, void *thread_data, void *user_data);
	/* The fast path of entry and exit (see needle_direct_entry_fn):
	 * direct_entry only with entry set, direct_exit only with exit and
	 * direct_entry set (an entry-only link may have a direct entry). */
	needle_direct_entry_fn direct_entry;
	needle_direct_exit_fn direct_exit;
};

/* Fail with -EBUSY instead of sharing a function with another link. */
#define NEEDLE_ATTACH_EXCLUSIVE 0x1u
/* Entry only, no needle_ctx: the link gives direct_entry and nothing
 * else of the handlers (entry, exit, direct_exit, thread_exit,
 * thread_fork, context_switch NULL; thread_data_size and call_data_size
 * 0), and every call of its functions runs it, with
 * thread_data NULL, its return value ignored (return 0) and no exit.
 * Where the link is alone on a function, the site reaches it through a
 * minimal path: the nine registers a C handler may change saved, one
 * read section, no frame, no ctx, no vector register touched; where it
 * shares the function, or on a thread's first traced call, the full
 * path calls it with the ctx's registers.  The kernel's ftrace_ops with
 * only a func and a trampoline of its own; a counter, a probe. */
#define NEEDLE_ATTACH_ENTRY_ONLY 0x2u

struct needle_link;

/* Attach handlers to a set of functions as one patch batch.  On success
 * stores a new link in *link and returns the number of functions traced.
 * Errors: -EINVAL (bad options), -ENOEXEC (the process has no patchable
 * function entries at all), -ENOENT (a pattern or address matched no
 * site), -EBUSY (NEEDLE_ATTACH_EXCLUSIVE and a function is already
 * traced), -EDEADLK (a thread blocks SIGTRAP and could not be stopped),
 * -ENOMEM, -ENOSPC (too many links), or the errno of a failed system call. */
NEEDLE_API int needle_attach(const struct needle_attach_opts *opts, struct needle_link **link);

/* Detach as one patch batch.  Returns when no thread can still be running
 * the link's handlers.  -ENOENT if the link is already detached. */
NEEDLE_API int needle_link_detach(struct needle_link *link);

/* Detach, but leave the wait for running handlers to a later needle_sync():
 * many links can be dropped behind one grace period. */
NEEDLE_API int needle_link_detach_nosync(struct needle_link *link);

/* Wait until no thread can still run handlers of links detached before. */
NEEDLE_API int needle_sync(void);

/* Change the functions a link traces, as one patch batch (functions
 * gained and lost together): opts gives the new set with patterns and/or
 * addrs, as for needle_attach; its other fields are ignored.  The link
 * keeps its handlers and storage, so calls in flight keep their exits.
 * Returns the number of functions now traced, or -ENOENT (a pattern or
 * address matched nothing: nothing changed), -EINVAL, -ENOMEM. */
NEEDLE_API int needle_link_update(struct needle_link *link, const struct needle_attach_opts *opts);

/* Replace a link's handlers, entry and exit as one: a call entered before
 * keeps the exit handler it was entered with.  An entry-only link
 * (NEEDLE_ATTACH_ENTRY_ONLY) takes (NULL, NULL) to get its direct entry
 * back; no other link takes two NULLs (-EINVAL).  Returns when no thread runs
 * the old entry handler any more.  -EOPNOTSUPP for an exit handler where
 * returns cannot be hooked (CET shadow stacks) and a function has no
 * compiler exit sites. */
NEEDLE_API int needle_link_set_handlers(struct needle_link *link, needle_entry_fn entry, needle_exit_fn exit);

/* The real-time signal libneedle uses to stop threads for the rewrites the
 * int3 protocol cannot cover: a thread a tool creates should not block it
 * (nor SIGTRAP). */
NEEDLE_API int needle_stop_signal(void);

/* Free a link, detaching it first if it is still attached, and waiting
 * for a grace period if it was detached without one.  Returns 0 once the
 * link is freed and no thread can still run its handlers.  On an error
 * (-ENOMEM: it could not be detached; -EDEADLK: called from one of its
 * own handlers, which cannot wait for itself) nothing is freed, the
 * handlers may still run, and the call can be made again later. */
NEEDLE_API int needle_link_destroy(struct needle_link *link);

/* Number of functions the link traces. */
NEEDLE_API int needle_link_site_count(const struct needle_link *link);

/* Sites: every patchable function entry found so far. */
enum needle_site_form {
	NEEDLE_FORM_NOP5 = 1,        /* one 5-byte NOP (clang, -mnop-mcount) */
	NEEDLE_FORM_GCC_NOPS = 2,    /* five 1-byte NOPs (gcc), normalized to NOP5 */
	NEEDLE_FORM_FENTRY_CALL = 3, /* call __fentry__ (-pg -mfentry), turned into NOP5 */
	NEEDLE_FORM_RELOCATED = 4,   /* no compiler help: the first instructions moved to a
				      * detour, the entry switched to a jmp to it */
	NEEDLE_FORM_XRAY = 5,        /* an LLVM XRay entry sled (clang -fxray-instrument):
				      * jmp over nops, switched like a NOP5 */
};

struct needle_site_info {
	size_t sz;
	uint32_t id;
	int form;             /* enum needle_site_form */
	uint64_t addr;        /* the patched bytes */
	uint64_t func_ip;     /* the function's symbol address */
	const char *name;     /* symbol name */
	const char *module;   /* path of the object that holds it */
	int enabled;          /* 1 while the site calls the trampoline */
	uint8_t off_bytes[5]; /* the bytes the site holds while disabled */
	int traceable;        /* 0 when it cannot be attached (unprepared, unloaded) */
	uint64_t func_size;   /* the function's size in bytes, from its symbol (0: not known) */
	/* 1 when the object's build marked the function for tracing: a
	 * compiled entry, or, relocated, a function that calls mcount in an
	 * object built with gcc -pg (without -mfentry); 0 for a function of
	 * a library no compiler prepared. */
	int compiler_marked;
	/* The object's load bias: its addresses in this process less its
	 * file's (func_ip less the symbol's value). */
	uint64_t module_bias;
	/* Its file's build id (.note.gnu.build-id, the first 32 bytes),
	 * module_build_id_len bytes; 0 when it has none. */
	uint8_t module_build_id[32];
	uint32_t module_build_id_len;
};

/* Discover sites in objects loaded since the last call (it also runs at
 * load time and before every attach).  Returns the total site count. */
NEEDLE_API int needle_refresh(void);
NEEDLE_API int needle_site_count(void);
NEEDLE_API int needle_site_info(uint32_t id, struct needle_site_info *info);
/* Site id of the function with this exact name, or -ENOENT. */
NEEDLE_API int needle_site_find(const char *name);
/* 1 if pattern (a name, an fnmatch(3) glob or a regular expression, as
 * in needle_attach_opts.patterns) names site id, 0 if not, -ENOENT if there
 * is no such site.  A pattern names a function by its symbol or, for a
 * C++ function, by its demangled name without or with its parameter list
 * ("ns::Cls::get", "ns::Cls::get(int) const"). */
NEEDLE_API int needle_site_match(uint32_t id, const char *pattern);
/* 1 if addr is where needle makes a traced call return to (its return
 * hook, which takes the call's exit and then returns to the caller), 0
 * if not.  An entry handler that finds it as its call's return address
 * (*(uint64_t *)ctx->sp) sees a tail call: the function that jumped here
 * was itself traced, and this call returns for it.  Any context, no
 * lock (version NEEDLE_1.2). */
NEEDLE_API int needle_is_return_hook(uint64_t addr);

/* Objects (the program and its shared libraries) as discovery saw them:
 * how many entries compilers prepared, how many other functions were
 * tried for relocation (needle record --sites), how many were relocated,
 * and why the others were not (refused[i], reason needle_refusal_name(i);
 * refused[0] is unused).  Objects are numbered from 0 in the order they
 * were found; an unloaded one keeps its number. */
#define NEEDLE_REFUSAL_MAX 16
struct needle_object_info {
	size_t sz;
	const char *path;
	uint32_t sites_compiled;
	uint32_t funcs_tried;
	uint32_t sites_relocated;
	uint32_t refused[NEEDLE_REFUSAL_MAX];
};
NEEDLE_API int needle_object_count(void);
NEEDLE_API int needle_object_info(uint32_t index, struct needle_object_info *info);
/* "too short", "branch into the patch", ...; NULL for an unknown reason. */
NEEDLE_API const char *needle_refusal_name(int reason);

struct needle_stats {
	size_t sz;
	uint64_t patch_batches;  /* batches applied */
	uint64_t core_syncs;     /* membarrier SYNC_CORE calls, all batches */
	uint64_t last_batch_syncs;
	uint64_t last_batch_sites;
	uint64_t sites_enabled;  /* sites currently calling the trampoline */
	uint64_t grace_periods;
	uint64_t recursion_skips; /* traced calls made by handlers, not dispatched */
	uint64_t shadow_overflows; /* exits not hooked: the shadow stack was full */
	uint64_t threads_refused;  /* threads running untraced: the state pool was full */
	uint64_t threads_shared_tls; /* threads running untraced: they shared another's TLS (raw clone) */
	/* Calls the direct path took in C.  needle record's function_graph
	 * calls are taken in its own assembly trampoline instead, once a
	 * site's first call has been (docs/design.md, "The recorder's own
	 * path"): a count that grows with the calls says that one declines. */
	uint64_t direct_c_entries;
	/* Calls the full path dispatched (a needle_ctx built, every consumer
	 * of the site called in turn): those of shared sites, of handlers
	 * with no direct twin, and the calls the direct paths decline (a
	 * thread's first, a longjmp's skipped frames to close, a coroutine
	 * switch, a recording's chunk found full). */
	uint64_t full_path_entries;
};
NEEDLE_API int needle_get_stats(struct needle_stats *stats);

/* For `needle record -p PID` only: it loads libneedle into a running
 * process (from the thread that libneedle-boot.so starts there) and calls
 * this, which must return at once.  It starts the session thread that connects to the
 * abstract UNIX socket `name` of needle record and receives the
 * recording's configuration (see docs/design.md, "Attaching"), and
 * returns.  0, -EBUSY if a session runs, -EINVAL, or another negative
 * errno.  Programs have no use for it. */
NEEDLE_API int needle_remote_attach(const char *name);

/* For `needle record` only: a process forked while its parent was
 * recorded keeps a copy of the recording, which needle record ends when
 * the recording ends.  It calls this on one of the process's threads,
 * borrowed (libneedle is there already: nothing is loaded); the calls it
 * makes run untraced, and the session thread it starts connects to
 * `name` to be asked to end that copy.  Returns at once: 0, -EBUSY if a
 * session runs, -EINVAL, or another negative errno.  Programs have no
 * use for it. */
NEEDLE_API int needle_remote_release(const char *name);

enum needle_print_level { NEEDLE_WARN = 0, NEEDLE_INFO = 1, NEEDLE_DEBUG = 2 };
typedef int (*needle_print_fn)(enum needle_print_level level, const char *fmt, va_list ap);
/* Replace the message callback; returns the previous one.  NULL silences. */
NEEDLE_API needle_print_fn needle_set_print(needle_print_fn fn);

#ifdef __cplusplus
}
#endif
#endif /* NEEDLE_H */
