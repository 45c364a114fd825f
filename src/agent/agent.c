/* agent.c - libneedle's start-up: the top of the agent, the only file
 * that knows every layer (docs/design.md, "Layers").
 *
 * The constructor runs start-up as soon as libneedle is loaded, so that
 * gcc's multi-NOP sites and -pg's fentry calls are rewritten while the
 * process usually has a single thread (and the signal masks of every
 * thread are known, which keeps patch batches O(1) in threads); when
 * `needle record` preloaded it, the recorder starts too, before main.
 * When `needle record -p` loads it into a running process, the loading
 * thread is libneedle-boot.so's "needle-boot": the constructor then does
 * nothing, and the session thread of remote_attach.c runs start-up.
 * Start-up failures are reported once and returned by every later call. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent/base/phdr_walk.h"
#include "agent/agent.h"
#include "agent/base/control_lock.h"
#include "agent/patch/core_sync.h"
#include "agent/base/interpose.h"
#include "agent/base/log.h"
#include "agent/link/refresh.h"
#include "agent/sites/elf_image.h"
#include "agent/sites/module.h"
#include "agent/sites/site_discover.h"
#include "needle.h"
#include "agent/rcu/rcu.h"
#include "agent/patch/sigmask_watch.h"
#include "agent/graph_direct.h"
#include "agent/record/recorder.h"
#include "agent/thread/thread_state.h"
#include "agent/arch/arch.h"
#include "agent/dispatch/dispatch.h"
#include "agent/dispatch/dispatch_direct.h"

static int init_error;

static void agent_init(void)
{
	int err;

	interpose_init();
	err = thread_state_init();

	dispatch_init();
	/* NEEDLE_GRAPH_ASM=0: the recorder's calls stay on the C direct path
	 * (the benchmarks' ablation, the tests' reference). */
	const char *graph_asm = getenv("NEEDLE_GRAPH_ASM");
	graph_asm_enabled = !(graph_asm && !strcmp(graph_asm, "0"));
	dispatch_probe_asm_enabled = graph_asm_enabled;
	reloc_set_moved_calls(dispatch_returns_hookable());
	sigmask_watch_init();
	if (!err)
		err = rcu_init();
	if (!err)
		err = core_sync_init();
	/* When `needle record` asked for a trace and the agent or the
	 * recorder cannot do its part, the reason goes to needle record
	 * through the buffer's metadata, and the program runs on, untraced:
	 * a tracer that fails must not stop the program.  A recorder failure
	 * leaves the C API working. */
	if (!err) {
		control_lock_raw();
		err = refresh_locked();
		control_unlock();
		if (err > 0)
			err = 0;
	}
	if (err)
		recorder_report_failure(err);
	init_error = err;
	control_lock_set_error(err);
}

void agent_site_kinds(int kinds)
{
	site_discover_kinds(kinds);
}

int agent_start(void)
{
	control_lock_startup(agent_init);
	return init_error;
}

void agent_recording_started(void)
{
	_Atomic uint64_t *refused, *shared_tls;

	recorder_untraced_counters(&refused, &shared_tls);
	if (refused)
		thread_state_mirror_counters(refused, shared_tls);
}

void agent_recording_stopping(void)
{
	thread_state_mirror_counters(NULL, NULL);
}

void agent_discover_in_steps(int on)
{
	module_discover_take(on ? MODULE_TAKE_PROGRAM_AND_LIBC : MODULE_TAKE_ALL);
}

size_t agent_discover_step(void)
{
	module_discover_take(MODULE_TAKE_ONE);
	recorder_object_loaded(); /* discovers, names and records it */
	size_t left = module_left_for_later();
	if (!left)
		module_discover_take(MODULE_TAKE_ALL);
	return left;
}

void agent_adopt_process(void)
{
	int err = interpose_bind_loaded();
	if (err < 0)
		pr_warn("cannot bind the program's calls to libneedle's interposers (%d)\n", err);
	sigmask_watch_adopt(err >= 0);
}

/* The recorder is a consumer of the public API, which waits for start-up:
 * it starts after it, not inside it. */
static void recorder_start_preloaded(void)
{
	/* The recorder's own calls (the meta file, its locks) once the sites
	 * are on are the agent's, not the program's. */
	needle_agent_busy++;
	int err = recorder_start_from_env();
	needle_agent_busy--;

	/* The request itself cannot be met (no patchable entry, filters that
	 * match nothing): end the program before main rather than let it run
	 * untraced by mistake. */
	if (err == -ENOEXEC || err == -ENOENT)
		_exit(126);
	if (err == 1)
		agent_recording_started();
}

/* What discovery is told before its first run: which entries are sites
 * (what needle record asked for a program it started, else NEEDLE_SITES
 * for a program that uses the API: compiled, relocated or all), and the
 * names --with-syms gives stripped objects. */
static void site_kinds_chosen(const struct record_config *config)
{
	const char *k = getenv("NEEDLE_SITES");
	int kinds = config ? (int)config->sites
		    : !k ? 0
		    : !strcmp(k, "relocated") ? SITE_KINDS_RELOCATED
		    : !strcmp(k, "all") ? SITE_KINDS_ALL
		    : !strcmp(k, "compiled") ? SITE_KINDS_COMPILED : 0;
	if (kinds)
		site_discover_kinds(kinds);
	/* The config is kept for the process's life (exec_follow.c sends
	 * it on), and so are these lines. */
	if (config && config->syms)
		elf_image_extra_symbols(config->syms);
}

_Static_assert(RECORD_SITES_COMPILED == SITE_KINDS_COMPILED && RECORD_SITES_RELOCATED == SITE_KINDS_RELOCATED &&
		       RECORD_SITES_ALL == SITE_KINDS_ALL,
	       "record_config.h's site kinds are the agent's");

__attribute__((constructor)) static void agent_load(void)
{
	char name[17] = "";
	const struct record_config *config;

	control_lock_register(agent_init);
	prctl(PR_GET_NAME, name);
	if (!strcmp(name, "needle-boot"))
		return; /* needle record -p: the session thread starts up */
	int recorded = recorder_env_config(&config) == 1;
	site_kinds_chosen(config);
	if (!agent_start() && recorded)
		recorder_start_preloaded();
}

/* An object unloaded by dlclose takes its sites with it.  The real dlclose
 * runs under the control mutex, so that no patch batch writes into the
 * object while it is unmapped; then its sites leave the indexes
 * (module_forget_unloaded).  Lock order: control mutex, then the loader's
 * lock, as in discovery.  The mutex is recursive: a destructor of the
 * object may call dlclose or the API.  A thread that holds the loader's
 * lock (in dlopen, running a constructor) and calls the API while another
 * thread is in here would deadlock: documented in docs/design.md. */
static __thread int in_dlclose __attribute__((tls_model("initial-exec")));

NEEDLE_INTERPOSER_SITE int dlclose(void *handle)
{
	int (*real)(void *) = interpose_next(IP_DLCLOSE);

	if (init_error || in_dlclose || control_lock())
		return real(handle);
	in_dlclose = 1;
	int r = real(handle);
	in_dlclose = 0;
	int saved = errno;
	int gone = module_forget_unloaded();
	if (gone < 0)
		pr_warn("cannot forget the sites of an unloaded object (%d)\n", gone);
	control_unlock();
	errno = saved;
	return r;
}


/* An object dlopen'ed while a recording is on is traced from its first
 * call: after the C library's dlopen returns (the loader's lock released,
 * the object's constructors run), the recorder discovers it and patches
 * what its filters select, before the caller can call into it.
 *
 * The loader finds the calling object by dlopen's return address (its
 * RUNPATH, NODEFLIB, $ORIGIN, its namespace, and the RPATHs of the chain
 * of objects that loaded it).  Called from here, the caller is libneedle,
 * which has none of them: the search is the same when no loaded object
 * has an RPATH, the real caller is in the base namespace, the name holds
 * no '$' token, and either it holds a '/' (no search) or the caller has
 * no RUNPATH and no NODEFLIB.  Such a call is made from here
 * (dlopen_wrapped).  Any other call jumps to the C library's dlopen with
 * a return address in the caller's object, so that the loader searches
 * as it would untraced: when the caller called through a PLT stub that
 * jumps to this dlopen (the usual call), the return address is that
 * stub, and the C library's dlopen returns into it and so back here,
 * where the object is discovered before the caller gets the handle
 * (dlopen_landing; the stack pointer tells a return from a call: a call
 * enters with it 8 bytes off 16-byte alignment, a return with it
 * aligned).  A caller that calls dlopen otherwise (through its GOT slot,
 * -fno-plt) keeps its own return address, and its object is traced only
 * from the next refresh.  Hence the assembly: the jumps must keep the
 * stack exactly as the caller left it. */
__attribute__((used)) static void *dlopen_real;
/* A dlopen made from a constructor that a wrapped dlopen runs (the
 * loader's lock held) goes straight through: the outer call's discovery
 * finds its object too, and needle's locks are never taken under the
 * loader's (lock order: control mutex, then the loader's lock). */
static __thread int in_wrapped_dlopen __attribute__((tls_model("initial-exec")));

/* A dlopen sent back through the caller's PLT stub: where the caller's
 * stack pointer will be when it returns there, and its return address. */
static __thread struct {
	uint64_t rsp;
	uint64_t ret;
} dlopen_pending __attribute__((tls_model("initial-exec")));

/* This object's dlopen below, not the one a lookup by name would find
 * (the C library's, when libneedle was loaded into a running process). */
extern const char dlopen_interposer[] __attribute__((visibility("hidden")));

/* The PLT stub that the call returning to ret went through, if it is a
 * direct call to a stub of the caller's own object (lm) that jumps to
 * this dlopen through its GOT slot: "[endbr64] [bnd] jmp *slot(%rip)". */
static uint64_t plt_stub_of(uint64_t ret, const struct link_map *lm)
{
	Dl_info info;
	struct link_map *stub_lm = NULL;
	const uint8_t *call = (const uint8_t *)(uintptr_t)(ret - 5);
	int32_t rel;

	if (call[0] != 0xe8)
		return 0;
	memcpy(&rel, call + 1, sizeof(rel));
	uint64_t stub = ret + (uint64_t)(int64_t)rel;
	if (!dladdr1((void *)(uintptr_t)stub, &info, (void **)&stub_lm, RTLD_DL_LINKMAP) || stub_lm != lm)
		return 0;
	const uint8_t *p = (const uint8_t *)(uintptr_t)stub;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4;
	if (p[0] == 0xf2)
		p++;
	if (p[0] != 0xff || p[1] != 0x25)
		return 0;
	memcpy(&rel, p + 2, sizeof(rel));
	const uint64_t *slot = (const uint64_t *)(uintptr_t)((uint64_t)(uintptr_t)(p + 6) + (uint64_t)(int64_t)rel);
	return *slot == (uint64_t)(uintptr_t)dlopen_interposer ? stub : 0;
}

/* Does any loaded object have a DT_RPATH?  The loader searches those of
 * the caller and of the objects that loaded it, in a chain a call from
 * libneedle would not follow. */
static int rpath_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
		for (; d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_RPATH) {
				*(int *)arg = 1;
				return 1;
			}
	}
	return 0;
}

/* 1: make the call from here (dlopen_wrapped).  0: jump to the C
 * library's dlopen; with *ret_slot (the caller's return address) changed
 * to its PLT stub when the landing can be used. */
__attribute__((used)) static int dlopen_wrap_wanted(const char *file, int mode, const void *caller,
						    uint64_t *ret_slot)
{
	Dl_info info;
	struct link_map *lm = NULL;
	Lmid_t ns = LM_ID_BASE;
	int wrap = 1, rpath = 0, known = 1;

	dlopen_real = interpose_next(IP_DLOPEN);
	if (!dlopen_real || init_error || in_wrapped_dlopen || !file || (mode & RTLD_NOLOAD))
		return 0;
	/* What is called here is the agent's, not the program's. */
	needle_agent_busy++;
	if (!recorder_wants_new_objects() || !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		known = wrap = 0;
	if (wrap && (strchr(file, '$') || dlinfo(lm, RTLD_DI_LMID, &ns) || ns != LM_ID_BASE))
		wrap = 0;
	if (wrap)
		agent_dl_iterate_phdr(rpath_cb, &rpath);
	if (rpath)
		wrap = 0;
	/* A name without a '/' is searched: the caller's DT_RUNPATH and its
	 * DF_1_NODEFLIB count, which libneedle has not. */
	for (const ElfW(Dyn) *d = lm ? lm->l_ld : NULL; wrap && !strchr(file, '/') && d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_RUNPATH || (d->d_tag == DT_FLAGS_1 && (d->d_un.d_val & DF_1_NODEFLIB)))
			wrap = 0;
	if (!wrap && known) {
		uint64_t stub = plt_stub_of((uint64_t)(uintptr_t)caller, lm);
		if (stub) {
			/* The caller's stack pointer after its return pops the
			 * return address. */
			dlopen_pending.rsp = (uint64_t)(uintptr_t)ret_slot + 8;
			dlopen_pending.ret = (uint64_t)(uintptr_t)caller;
			in_wrapped_dlopen = 1;
			recorder_thread_loading(1);
			*ret_slot = stub;
		}
	}
	needle_agent_busy--;
	return wrap;
}

/* The C library's dlopen returned into the caller's PLT stub and so here:
 * entry_rsp is the stack pointer at that entry, handle what dlopen
 * returned.  The caller's return address if this is that return, 0 if it
 * is a call after all. */
__attribute__((used)) static uint64_t dlopen_landing(uint64_t entry_rsp, void *handle)
{
	if (!dlopen_pending.rsp || entry_rsp != dlopen_pending.rsp)
		return 0;
	uint64_t ret = dlopen_pending.ret;
	dlopen_pending.rsp = 0;
	in_wrapped_dlopen = 0;
	recorder_thread_loading(0);
	if (handle) {
		int saved = errno;
		needle_agent_busy++;
		recorder_object_loaded();
		dlerror(); /* as dlopen_wrapped: nothing after a success */
		needle_agent_busy--;
		errno = saved;
	}
	return ret;
}

__attribute__((used)) static void *dlopen_wrapped(const char *file, int mode)
{
	void *(*real)(const char *, int) = (void *(*)(const char *, int))dlopen_real;
	in_wrapped_dlopen = 1;
	recorder_thread_loading(1);
	void *h = real(file, mode);
	recorder_thread_loading(0);
	in_wrapped_dlopen = 0;
	if (h) {
		int saved = errno;
		needle_agent_busy++;
		recorder_object_loaded();
		/* The program's next dlerror() says what dlopen left it:
		 * nothing, after a success, whatever discovery looked up. */
		dlerror();
		needle_agent_busy--;
		errno = saved;
	}
	return h;
}

/* The interposer of NEEDLE_INTERPOSED's dlopen: .globl with no .hidden is
 * what NEEDLE_INTERPOSER gives a C definition (exported, unversioned). */
__asm__("	.text\n"
	"	.globl	dlopen\n"
	"	.type	dlopen, @function\n"
	"	.globl	dlopen_interposer\n"
	"	.hidden	dlopen_interposer\n"
	"	.p2align 4\n"
	"dlopen:\n"
	"dlopen_interposer:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	testq	$8, %rsp\n" /* a call: 8 bytes off alignment */
	"	jnz	2f\n"
	"	pushq	%rax\n"     /* a return through the PLT: the handle */
	"	.cfi_adjust_cfa_offset 8\n"
	"	subq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	leaq	16(%rsp), %rdi\n"
	"	movq	%rax, %rsi\n"
	"	call	dlopen_landing\n"
	"	movq	%rax, %r11\n"
	"	addq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq	%rax\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	testq	%r11, %r11\n"
	"	jz	2f\n"
	"	jmp	*%r11\n"
	/* A call: the program's dlopen is a site here, as the compiler
	 * lays one out (listed in __patchable_function_entries), past the
	 * test above so that a return through the caller's stub is none.
	 * The stack is as the caller left it, so the site sees its return
	 * address; an entry-only site (caller_names in site_discover.c),
	 * whose return is never hooked, since the loader reads it. */
	"2:	nop; nop; nop; nop; nop\n"
	"	.pushsection __patchable_function_entries, \"aw\", @progbits\n"
	"	.balign	8\n"
	"	.quad	2b\n"
	"	.popsection\n"
	"	pushq	%rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	pushq	%rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	subq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	movq	24(%rsp), %rdx\n" /* the caller's return address */
	"	leaq	24(%rsp), %rcx\n" /* where it is */
	"	call	dlopen_wrap_wanted\n"
	"	addq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq	%rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq	%rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	testl	%eax, %eax\n"
	"	jnz	dlopen_wrapped\n"
	"	jmp	*dlopen_real(%rip)\n"
	"	.cfi_endproc\n"
	"	.size	dlopen, .-dlopen\n");

/* A vfork child runs on its parent's stack and in its parent's thread
 * (the same TLS, the same shadow stack, the same chunk) until it exec's
 * or exits: whatever it traced would be written as its parent's calls,
 * and the frames it pushed would be its parent's to unwind.  So it runs
 * untraced: the interposer is the C library's vfork (the return address
 * popped into a register, as the child may overwrite the stack slot)
 * with needle_agent_busy raised in the child, which every site's dispatch
 * reads first, and lowered again in the parent, which resumes only once
 * the child has exec'ed or exited (the two share the variable: the
 * child's raise is always there to lower).  The program it exec's is
 * followed (record/exec_follow.c), as a thread of its own.  The
 * interposer's entry is an entry-only site, as setjmp's are (its return
 * is the child's first, then the parent's): the program's call is a
 * line of its graph, written before the system call, in the parent. */
__attribute__((visibility("hidden"))) long vfork_failed(long neg_errno);
long vfork_failed(long neg_errno)
{
	errno = (int)-neg_errno;
	return -1;
}

__asm__("	.text\n"
	"	.globl	vfork\n"
	"	.type	vfork, @function\n"
	"	.p2align 4\n"
	"vfork:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"1:	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* an entry-only site: the program's call is a line */
	"	.pushsection __patchable_function_entries, \"awo\", @progbits, vfork\n"
	"	.p2align 3\n"
	"	.quad	1b\n"
	"	.popsection\n"
	"	popq	%rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_register %rip, %rdi\n"
	"	movl	$58, %eax\n" /* SYS_vfork */
	"	syscall\n"
	"	pushq	%rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rip, 0\n"
	"	cmpq	$-4095, %rax\n"
	"	jae	2f\n"
	"	movq	needle_agent_busy@gottpoff(%rip), %rdx\n"
	"	testl	%eax, %eax\n"
	"	jnz	1f\n"
	"	addl	$1, %fs:(%rdx)\n" /* the child */
	"	ret\n"
	"1:	subl	$1, %fs:(%rdx)\n" /* the parent, the child gone */
	"	ret\n"
	"2:	movq	%rax, %rdi\n"
	"	subq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call	vfork_failed\n"
	"	addq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size	vfork, .-vfork\n");
