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

/* Registers as the entry trampoline saved them.  On entry they hold the
 * traced function's arguments; on exit rax/rdx and xmm0/xmm1 hold its
 * return value.  Handlers must treat them as read-only. */
struct needle_regs {
	uint64_t rdi, rsi, rdx, rcx, r8, r9; /* integer arguments, in order */
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
	uint32_t reserved;
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
};

/* ctx->is_exit in an exit handler: the function returned (regs hold its
 * return value), or it was unwound (longjmp, a C++ exception, thread exit)
 * without returning: its exit handler runs where the unwind was seen, and
 * regs are zero. */
#define NEEDLE_EXIT_RETURN 1
#define NEEDLE_EXIT_UNWOUND 2

/* Entry handlers return 0, or NEEDLE_SKIP_EXIT so that this call's exit
 * handler (of the same link) does not run.  *cookie starts at 0 and is
 * passed to the exit handler of the same call. */
#define NEEDLE_SKIP_EXIT 1

typedef int (*needle_entry_fn)(const struct needle_ctx *ctx, uint64_t *cookie, void *user_data);
typedef void (*needle_exit_fn)(const struct needle_ctx *ctx, uint64_t cookie, void *user_data);

/* Argument n (0-based) of the integer class: rdi, rsi, rdx, rcx, r8, r9. */
static inline uint64_t needle_arg(const struct needle_ctx *ctx, unsigned n)
{
	const uint64_t *gpr = &ctx->regs.rdi;
	return n < 6 ? gpr[n] : 0;
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
	 * ftrace's set_ftrace_filter) ... */
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
};

/* Fail with -EBUSY instead of sharing a function with another link. */
#define NEEDLE_ATTACH_EXCLUSIVE 0x1u

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
 * keeps the exit handler it was entered with.  Returns when no thread runs
 * the old entry handler any more.  -EOPNOTSUPP for an exit handler where
 * returns cannot be hooked (CET shadow stacks). */
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
};

/* Discover sites in objects loaded since the last call (it also runs at
 * load time and before every attach).  Returns the total site count. */
NEEDLE_API int needle_refresh(void);
NEEDLE_API int needle_site_count(void);
NEEDLE_API int needle_site_info(uint32_t id, struct needle_site_info *info);
/* Site id of the function with this exact name, or -ENOENT. */
NEEDLE_API int needle_site_find(const char *name);

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
};
NEEDLE_API int needle_get_stats(struct needle_stats *stats);

enum needle_print_level { NEEDLE_WARN = 0, NEEDLE_INFO = 1, NEEDLE_DEBUG = 2 };
typedef int (*needle_print_fn)(enum needle_print_level level, const char *fmt, va_list ap);
/* Replace the message callback; returns the previous one.  NULL silences. */
NEEDLE_API needle_print_fn needle_set_print(needle_print_fn fn);

#ifdef __cplusplus
}
#endif
#endif /* NEEDLE_H */
