/* altstack.c - sigaltstack interposed to remember each thread's alternate
 * signal stack: with SS_AUTODISARM the kernel reports it disabled while a
 * handler runs on it, so dispatch could not tell a handler's calls on it
 * from calls a longjmp skipped (dispatch.c, frame_skipped).
 *
 * Not a hot path.  The interposer runs during a sanitizer runtime's own
 * start-up too, which is why it sits in base (built without sanitizer
 * instrumentation where that matters, tests/robust.mk). */
#include <signal.h>
#include <stdint.h>

#include "agent/base/altstack.h"
#include "agent/base/interpose.h"
#include "needle.h"

/* Each declared with its own initial-exec model (an attribute after a
 * declarator names that declarator only): a global-dynamic one in a
 * dlopened libneedle (-p) goes through __tls_get_addr, which may call
 * malloc, a traced function, from dispatch before the thread has a
 * state: endless recursion. */
static __thread uint64_t altstack_lo __attribute__((tls_model("initial-exec")));
static __thread uint64_t altstack_hi __attribute__((tls_model("initial-exec")));

NEEDLE_INTERPOSER_SITE int sigaltstack(const stack_t *ss, stack_t *old)
{
	int (*real)(const stack_t *, stack_t *) = interpose_next(IP_SIGALTSTACK);
	int r = real(ss, old);

	if (!r && ss) {
		if (ss->ss_flags & SS_DISABLE) {
			altstack_lo = altstack_hi = 0;
		} else {
			altstack_lo = (uint64_t)(uintptr_t)ss->ss_sp;
			altstack_hi = altstack_lo + ss->ss_size;
		}
	}
	return r;
}

void altstack_last(uint64_t *lo, uint64_t *hi)
{
	*lo = altstack_lo;
	*hi = altstack_hi;
}

int altstack_kernel_on(uint64_t *lo, uint64_t *hi)
{
	int (*real)(const stack_t *, stack_t *) = interpose_next(IP_SIGALTSTACK);
	stack_t ss;

	if (!real || real(NULL, &ss) || !(ss.ss_flags & SS_ONSTACK))
		return 0;
	*lo = (uint64_t)(uintptr_t)ss.ss_sp;
	*hi = *lo + ss.ss_size;
	return 1;
}
