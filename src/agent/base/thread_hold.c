/* thread_hold.c - who offers to hold threads from outside (thread_hold.h). */
#include "agent/base/thread_hold.h"

static const struct thread_hold_ops *offered;

void thread_hold_offer(const struct thread_hold_ops *ops)
{
	offered = ops;
}

const struct thread_hold_ops *thread_hold_offered(void)
{
	return offered;
}
