/* inject.h - load a shared object into a running process and call one of
 * its functions there (see inject.c). */
#ifndef NEEDLE_INJECT_H
#define NEEDLE_INJECT_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

struct inject_request {
	const char *lib_path;   /* dlopen'ed with RTLD_NOW */
	const char *entry;      /* then this function of it is called, or NULL */
	const char *arg;        /* with this string as its first argument */
	/* If set, entry gets the visit's stack as its second argument and
	 * takes it over when it returns 0: it must unmap it once its lowest
	 * word reads ATTACH_STACK_RELEASED (common/attach_protocol.h), which
	 * is written after the thread is given back. */
	int hand_over_stack;
	/* If set, no library is loaded (lib_path and entry unused): the
	 * function at this address in the target, of an object already
	 * there, is called with arg, on the visit's stack, and must return
	 * without keeping it. */
	uint64_t entry_at;
};

struct inject_result {
	uint64_t handle;        /* what dlopen returned in the target */
	int64_t entry_ret;      /* what entry returned (an int, sign-extended) */
	uint64_t held_ns;       /* longest time one thread of the target was held stopped */
	uint64_t borrowed_ns;   /* how long the borrowed thread was held */
	uint32_t tid;           /* the thread borrowed */
	uint32_t passed_over;   /* threads stopped and let go: not at a safe point */
	uint32_t rewound;       /* 1: the borrowed thread's system call, ended with EINTR by the stop, was made again */
};

/* Load req->lib_path into process pid and call req->entry(req->arg), on
 * one of its threads, borrowed and given back as it was; every other
 * thread runs on.  The work is done by a child process of the caller, so
 * that the caller being killed never leaves the thread half-way.  0, or
 * -errno with one line in err. */
/* Is system call nr one that a ptrace stop may end with EINTR having done
 * nothing, so that the thread can be put back on its syscall instruction
 * and make it again (inject.c, "System calls a thread may be borrowed in")? */
int inject_syscall_redoable(long nr);

/* Let tid of process pid go from a ptrace stop other than a signal's
 * delivery (PTRACE_EVENT_STOP), with the signals held while it was
 * stopped (held[0..cnt), taken with PTRACE_GETSIGINFO at their delivery
 * stops) delivered to it once each, as they came: queued again with
 * their own siginfo where the kernel lets another process give it
 * (sigqueue's, a timer's), else sent marked and given back their own
 * (sender, code) at their delivery stop.  In a group stop (group_stop)
 * they are only queued again. */
void inject_detach_delivering(pid_t pid, pid_t tid, const siginfo_t *held, int cnt, int group_stop);

/* tid's next wait status within ns (a stop, or its end), by polling: no
 * timer signal, so that a thread of needle record may wait.  0 with
 * *status, -ETIMEDOUT, or negative errno. */
int inject_poll_stop(pid_t tid, int *status, uint64_t ns);

int inject_library(pid_t pid, const struct inject_request *req, struct inject_result *res, char *err, size_t errlen);

#endif
