/* unwind.c - keeps hijacked returns out of the way of everything that
 * walks or unwinds the stack: C++ exceptions, thread exit, backtrace().
 *
 * The unwinder reads return addresses from the machine stack; a hijacked
 * one points at needle_return_trampoline, whose unwind info ends the walk,
 * so an exception would find no handler and terminate the program.  Like
 * uftrace (and unlike the kernel, whose unwinders ask ftrace_graph_ret_addr),
 * needle interposes the entry points: before an exception is raised it
 * writes every real return address back; when a handler catches it
 * (__cxa_begin_catch), the calls that were unwound are closed at that point
 * and the calls still live are hijacked again.  pthread_exit closes every
 * call of the thread first; backtrace() sees real addresses for the
 * duration of its walk.
 *
 * Each wrapper finds the real function with dlsym(RTLD_NEXT); libneedle
 * is loaded before libstdc++ and libgcc_s (LD_PRELOAD, or linked first), so
 * the program's calls reach the wrappers. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "agent/base/interpose.h"
#include "needle.h"
#include "agent/rcu/rcu.h"
#include "agent/dispatch/shadow_frame.h"
#include "agent/thread/thread_state.h"
#include "agent/arch/arch.h"
#include "agent/dispatch/dispatch.h"

/* Write every hijacked frame's real return address back. */
static void restore_returns(struct thread_state *ts)
{
	for (struct frame_header *h = ts->shadow_top ? frame_top(ts) : NULL; h; h = frame_below(ts, h)) {
		uint64_t *slot = frame_ret_slot(h);
		if (is_return_trampoline(*slot))
			*slot = h->return_addr;
	}
}

/* Hijack again the frames whose real return address is still in place. */
static void rehijack_returns(struct thread_state *ts)
{
	for (struct frame_header *h = ts->shadow_top ? frame_top(ts) : NULL; h; h = frame_below(ts, h)) {
		uint64_t *slot = frame_ret_slot(h);
		if (frame_hijacked(h) && *slot == h->return_addr)
			*slot = frame_hook_for(h);
	}
}

static struct thread_state *traced_thread(void)
{
	struct thread_state *ts = thread_state_self();
	return ts && ts->shadow_top ? ts : NULL;
}

typedef _Unwind_Reason_Code (*raise_fn)(struct _Unwind_Exception *);

NEEDLE_INTERPOSER _Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception *exc)
{
	struct thread_state *ts = traced_thread();

	if (ts)
		restore_returns(ts);
	return ((raise_fn)interpose_next(IP_UNWIND_RAISE))(exc);
}

/* Rethrow (throw; and std::rethrow_exception) unwinds again from a catch
 * block, where the live frames were hijacked again. */
NEEDLE_INTERPOSER _Unwind_Reason_Code _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *exc)
{
	struct thread_state *ts = traced_thread();

	if (ts)
		restore_returns(ts);
	return ((raise_fn)interpose_next(IP_UNWIND_RETHROW))(exc);
}

/* The personality routine of the hijacked-return pseudo frame (see
 * trampoline.S).  A forced unwind (pthread_cancel) is sent to
 * needle_unwind_landing, which closes the call and resumes the unwind from
 * a frame with the real return address.  Exceptions never get here: their
 * raise restored every return address first. */
__attribute__((visibility("hidden"))) _Unwind_Reason_Code
needle_return_personality(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
			  struct _Unwind_Exception *exc, struct _Unwind_Context *ctx)
{
	(void)version;
	(void)cls;
	if (!(actions & _UA_CLEANUP_PHASE))
		return _URC_FATAL_PHASE1_ERROR;
	_Unwind_SetGR(ctx, __builtin_eh_return_data_regno(0), (_Unwind_Word)(uintptr_t)exc);
	_Unwind_SetIP(ctx, (_Unwind_Ptr)needle_unwind_landing);
	return _URC_INSTALL_CONTEXT;
}

NEEDLE_INTERPOSER void *__cxa_begin_catch(void *exc)
{
	struct thread_state *ts = traced_thread();

	if (ts) {
		/* The catching function called us: every traced call whose frame
		 * is at or below our own caller's stack pointer was unwound. */
		uint64_t catch_sp = (uint64_t)__builtin_frame_address(0) + 16;
		uint64_t saved = rcu_read_lock(ts);
		shadow_close_unwound(ts, catch_sp);
		rehijack_returns(ts);
		rcu_read_unlock(ts, saved);
	}
	return ((void *(*)(void *))interpose_next(IP_CXA_BEGIN_CATCH))(exc);
}

NEEDLE_INTERPOSER_SITE void pthread_exit(void *retval)
{
	struct thread_state *ts = traced_thread();

	if (ts) {
		/* Every traced call of the thread ends here; the forced unwind
		 * that follows must see real return addresses. */
		uint64_t saved = rcu_read_lock(ts);
		restore_returns(ts);
		shadow_close_unwound(ts, UINT64_MAX);
		rcu_read_unlock(ts, saved);
	}
	((void (*)(void *))interpose_next(IP_PTHREAD_EXIT))(retval);
	__builtin_unreachable();
}

NEEDLE_INTERPOSER_SITE int backtrace(void **buffer, int size)
{
	struct thread_state *ts = traced_thread();
	int n;

	/* No allocation here: crash handlers call backtrace() from signal
	 * handlers. */
	if (ts)
		restore_returns(ts);
	n = ((int (*)(void **, int))interpose_next(IP_BACKTRACE))(buffer, size);
	if (ts)
		rehijack_returns(ts);
	/* The first frame is this wrapper's own: the caller asked for its. */
	uint64_t self = (uint64_t)(uintptr_t)backtrace;
	if (n > 0 && (uint64_t)(uintptr_t)buffer[0] - self < 512) {
		memmove(buffer, buffer + 1, (size_t)(n - 1) * sizeof(*buffer));
		n--;
	}
	return n;
}
