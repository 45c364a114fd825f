/* remote_attach.c - the agent's side of `needle record -p PID`: a
 * recording session in a process that was running before libneedle was
 * loaded into it (common/attach_protocol.h for the protocol, cli/inject/inject.c
 * for how the library gets there).
 *
 * needle_remote_attach() is the one function called from outside: by the
 * boot thread of libneedle-boot.so (src/boot/boot.c), right after it
 * loaded libneedle.  It starts the session thread and returns.
 * Everything slow (start-up, discovery, patching) happens in the session
 * thread while every thread of the program runs.
 *
 * Invariants:
 *  - One session at a time; a second needle_remote_attach while one runs
 *    returns -EBUSY and changes nothing.  A child forked while one ran
 *    has none (a fork copies no thread but the caller's): its atfork
 *    handler clears the word.  The word is cleared before the session's
 *    socket is closed, so that needle record, reading the end of file,
 *    may start the next session at once.
 *  - A fork's copy of a recording (the child records into its parent's
 *    buffer) is ended by a session whose hello asks only that
 *    (ATTACH_HELLO_RELEASE): needle record sends it to every such child
 *    when the recording ends, and that session starts nothing.
 *  - The session thread blocks every signal but SIGTRAP and needle's stop
 *    signal (which patching needs) from its first instruction, so that no
 *    signal meant for the program lands in it.
 *  - A session runs on that one thread, --ctl included (it serves the
 *    control socket beside its own), which first waits (0.5 s at most)
 *    for the boot thread to be gone: the C library gives a thread that mallocs while
 *    every arena is held a new 64 MiB arena reservation, and caches an
 *    exited thread's stack, both kept for good, so two agent threads
 *    alive at once would grow the process by one more of each.
 *  - The session ends when needle record asks (ATTACH_DETACH) or goes away
 *    (end of file: killed, or the program closed the descriptor): either
 *    way the recording stops and every site returns to its NOP before the
 *    thread exits, but for a process with a thread that blocks every
 *    signal whose needle record went away: only needle record could hold
 *    that thread for the batch, so its sites stay patched, recording
 *    nothing (said on stderr), until a later attach restores them.  libneedle stays loaded and idle: hijacked returns may
 *    still be on threads' stacks (a call blocked for an hour), and they
 *    return through its trampoline.  A later attach reuses it.
 *  - The program's environment is never read for configuration nor
 *    changed, and its standard streams are never written: libneedle's
 *    messages go to needle record over the session socket (log.c).
 *  - A session leaves no descriptor behind: the socket is closed when it
 *    ends, the buffer and meta descriptors when the recording starts or
 *    fails (recorder.c), and stray ones of a malformed hello at once. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/base/control_lock.h"
#include "agent/base/interpose.h"
#include "agent/base/log.h"
#include "agent/patch/sigmask_watch.h"
#include "agent/patch/thread_stop.h"
#include "agent/record/control.h"
#include "agent/base/thread_hold.h"
#include "agent/record/hold_client.h"
#include "agent/record/recorder.h"
#include "agent/thread/thread_state.h"
#include "common/attach_protocol.h"
#include "common/shm_layout.h"
#include "needle.h"

static _Atomic pid_t session_running; /* the PID of the process whose session runs, or 0 */
static char session_name[ATTACH_NAME_MAX + 1];
static pid_t caller_tid; /* the boot thread that called needle_remote_attach, or 0 */
static int session_release_only; /* started by needle_remote_release */
static int session_fd = -1; /* the running session's socket, or -1 */
static int hello_unserved;  /* the release hello's ATTACH_HELLO_UNSERVED */

static int session_fd_ours(int fd);

/* A forked child has no session: its copy of the socket is closed too,
 * which would otherwise hide from needle record the end of the parent's
 * (an exec), and stay open in the child for good. */
static void session_after_fork(void)
{
	if (atomic_load(&session_running) && session_fd >= 0 && session_fd_ours(session_fd))
		close(session_fd);
	session_fd = -1;
	atomic_store(&session_running, 0);
	session_release_only = 0;
}

/* Registered at load, not by the first session: in a program needle
 * record started, that is a release, on a borrowed thread. */
__attribute__((constructor)) static void session_atfork(void)
{
	pthread_atfork(NULL, NULL, session_after_fork);
}
/* The buffer's header as the session mapped it for holds (MAP_FAILED
 * when not): a static, so that a forked child, which inherits the
 * mapping but not the session's stack, can unmap its copy. */
static struct shm_header *session_hold_hdr = MAP_FAILED;

/* Until the thread that started this session has ended (at most 0.5 s).
 * Its malloc arena (the C library gives each thread that mallocs while
 * others hold theirs a new one, a 64 MiB reservation that is never
 * given back) then goes back to the C library's free list, and this
 * thread's first malloc takes it: attaching leaves one arena in the
 * process, not one more per attach that overlapped two threads. */
static void wait_caller_gone(void)
{
	for (int i = 0; i < 500 && caller_tid > 0; i++) {
		if (syscall(SYS_tgkill, getpid(), caller_tid, 0) && errno == ESRCH)
			return;
		struct timespec t = { 0, 1000 * 1000 };
		nanosleep(&t, NULL);
	}
}

/* The session socket, by identity: the program may close its descriptor
 * (daemons close every descriptor) and put a file of its own at the
 * number, which the session must then neither read, write nor close. */
static dev_t sock_dev;
static ino_t sock_ino;

static int session_fd_ours(int fd)
{
	struct stat st;
	return !fstat(fd, &st) && st.st_dev == sock_dev && st.st_ino == sock_ino;
}

static int session_connect(void)
{
	struct stat st;
	struct sockaddr_un addr;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	size_t n = strlen(session_name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path + 1, session_name, n);
	if (connect(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != 0 && cred.uid != getuid() && cred.uid != geteuid()) || fstat(fd, &st)) {
		/* Abstract names have no permissions: only root or the
		 * process's owner may configure a recording in it. */
		close(fd);
		return -1;
	}
	sock_dev = st.st_dev;
	sock_ino = st.st_ino;
	return fd;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = read(fd, (char *)buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/* The hello and its two descriptors, then the configuration's bytes,
 * decoded into *config (record_config_free it, whatever this returns).
 * 1 for a hello that asks to end a fork's copy of a recording (no
 * descriptor, no configuration). */
static int session_receive(int fd, struct recorder_start_cfg *cfg, struct record_config *config)
{
	struct attach_hello hello;
	char control[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { &hello, sizeof(hello) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	ssize_t n;

	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	/* A failed recvmsg leaves msg_controllen as it was given and control
	 * as it was: on this thread's stack, which the C library cached, the
	 * previous session's hello, or anything.  It fails so (ECONNRESET)
	 * when needle record dies between our connect and its hello (its
	 * listening socket closed on a connection it never accepted), and
	 * nothing came: those descriptor numbers are the program's, and must
	 * be neither closed nor written to. */
	if (n <= 0)
		return -EPROTO;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c && (size_t)n <= sizeof(hello) &&
	    ((size_t)n == sizeof(hello) || !read_full(fd, (char *)&hello + n, sizeof(hello) - (size_t)n))) {
		hello_unserved = (hello.flags & ATTACH_HELLO_UNSERVED) != 0;
		return hello.magic == ATTACH_MAGIC && hello.version == ATTACH_VERSION &&
				       (hello.flags & ~ATTACH_HELLO_UNSERVED) == ATTACH_HELLO_RELEASE && !hello.config_len
			       ? 1
			       : -EPROTO;
	}
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(2 * sizeof(int))) {
		/* Whatever descriptors did come are the program's now: none
		 * may stay open in it. */
		for (; c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
					int stray;
					memcpy(&stray, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
					close(stray);
				}
		return -EPROTO;
	}
	int fds[2];
	memcpy(fds, CMSG_DATA(c), sizeof(fds));
	cfg->buf_fd = fds[0];
	cfg->meta_fd = fds[1];
	if ((size_t)n < sizeof(hello) && read_full(fd, (char *)&hello + n, sizeof(hello) - (size_t)n))
		return -EPROTO;
	if (hello.magic != ATTACH_MAGIC || hello.version != ATTACH_VERSION || hello.flags ||
	    hello.config_len > ATTACH_CONFIG_MAX || hello.config_len < RECORD_CONFIG_HEADER)
		return -EPROTO;
	uint8_t *bytes = malloc(hello.config_len);
	if (!bytes)
		return -ENOMEM;
	int err = read_full(fd, bytes, hello.config_len) ? -EPROTO : record_config_decode(bytes, hello.config_len, config);
	free(bytes);
	if (err)
		return err;
	cfg->config = config;
	return 0;
}

/* Until needle record asks to detach, its side of the socket is gone, or
 * the program closed the descriptor; meanwhile, with --ctl, serving
 * `needle ctl` (control.h): this thread is the session's only one, so
 * the process keeps one arena and one stack for it, whatever the
 * options.  A look every second: poll rescans descriptors by number, so
 * once the program put a file of its own at the socket's, needle
 * record's byte would never wake it. */
/* Until needle record asks for the detach (0) or is gone (1: its end of
 * the socket closed, as a SIGKILL leaves it). */
static int session_wait(int fd, struct shm_header *hdr, int in_steps)
{
	/* An attach in steps: one more object between two looks, so that a
	 * detach waits for one object's discovery at most. */
	size_t left = in_steps ? 1 : 0;
	for (;;) {
		struct pollfd p[2] = { { fd, POLLIN, 0 }, { control_poll_fd(), POLLIN, 0 } };
		int n = poll(p, p[1].fd >= 0 ? 2 : 1, left ? 0 : 1000);
		if ((n < 0 && errno != EINTR) || !session_fd_ours(fd))
			return 1;
		if (n > 0 && p[0].revents) {
			char c;
			ssize_t r = read(fd, &c, 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return 1;
			if (c == ATTACH_DETACH)
				return 0;
		}
		if (n > 0 && p[1].fd >= 0 && (p[1].revents & POLLIN))
			control_serve_pending();
		if (left && !(left = agent_discover_step()))
			atomic_store(&hdr->agent_all_live, 1);
	}
}

/* A child forked while its parent was recorded: its copy of the
 * recording ends here, as the parent's did, and its half of the session
 * state (the hold header) goes.  Said to needle record with
 * ATTACH_DETACHED, or not at all when the sites stay patched (why, as a
 * message). */
static void release_copy(int fd, int unserved)
{
	/* needle record has no hold service for this copy's header (the
	 * dead recording's, out of its reach): a batch that needs one is
	 * refused at once, not after waiting 2 s with the threads stopped
	 * for a server that is gone. */
	if (unserved)
		thread_hold_offer(NULL);
	agent_recording_stopping(); /* nothing points into the header any more */
	/* A batch lists the threads from /proc: a child that chroot()ed where
	 * none is mounted cannot have its entries put back, only emptied
	 * (no consumer behind them).  Said, and the buffer let go of all the
	 * same. */
	if (access("/proc/self/task", R_OK))
		pr_warn("process %d cannot read /proc (a chroot?): its functions' entries stay patched, with "
			"nothing recorded behind them\n", (int)getpid());
	int err = recorder_release_copy();
	if (err) {
		pr_warn("cannot end the recording this process inherited from its parent (%s); its functions stay "
			"patched\n", strerror(-err));
		return;
	}
	agent_discover_in_steps(0);
	if (session_hold_hdr != MAP_FAILED) {
		munmap(session_hold_hdr, SHM_HEADER_SIZE);
		session_hold_hdr = MAP_FAILED;
	}
	char done = ATTACH_DETACHED;
	if (session_fd_ours(fd) && write(fd, &done, 1) < 0) {
		/* needle record is gone: nobody to tell. */
	}
}

static void *session(void *arg)
{
	struct recorder_start_cfg cfg = { .buf_fd = -1, .meta_fd = -1 };
	struct record_config config = { 0 };
	int fd, err;

	(void)arg;
	prctl(PR_SET_NAME, "needle-attach");
	control_mark_agent_thread();
	wait_caller_gone();
	if ((fd = session_connect()) < 0)
		goto out;
	session_fd = fd;
	log_route_socket(fd); /* what start-up says, to needle record */
	err = session_receive(fd, &cfg, &config);
	if (err == 1 || session_release_only) {
		/* Started on a borrowed thread of the program for a release:
		 * nothing else, and nothing of the copy touched but by it. */
		if (err == 1)
			release_copy(fd, hello_unserved);
		else if (!err) {
			close(cfg.buf_fd);
			close(cfg.meta_fd);
		}
		goto end_session;
	}
	struct stop_hold_stats earlier; /* an earlier session's: not this one's */
	thread_stop_take_hold_stats(&earlier);
	/* Start-up patches (gcc's NOPs normalized, relocated entries made)
	 * before the recorder maps the buffer: threads that block every
	 * signal are held through its header from now on (hold_client.c). */
	struct shm_header *hold_hdr = MAP_FAILED;
	if (!err && (hold_hdr = mmap(NULL, SHM_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, cfg.buf_fd, 0)) != MAP_FAILED)
		hold_client_attach(hold_hdr);
	session_hold_hdr = hold_hdr;
	/* Recording every function: the first events need not wait for every
	 * library's functions to be decoded (agent_discover_in_steps).  A
	 * filter, a trigger or an argument spec may name a library's
	 * function, which must be found from the start. */
	int in_steps = !err && hold_hdr != MAP_FAILED && !config.filter && !config.subtree && !config.triggers &&
		       !config.args && !config.arg_filters;
	if (in_steps) {
		atomic_store(&hold_hdr->agent_in_steps, 1); /* before the recorder says it records */
		agent_discover_in_steps(1);
	}
	if (!err) {
		if (config.sites)
			agent_site_kinds((int)config.sites);
		err = agent_start();
	}
	if (err) {
		/* Through the buffer and the meta file when they came (which
		 * closes both); a broken hello closes the socket, which needle
		 * record reads as a failed attach. */
		if (cfg.buf_fd >= 0 && cfg.meta_fd >= 0)
			recorder_report_failure_fds(cfg.buf_fd, cfg.meta_fd, err);
		goto done;
	}
	agent_adopt_process();
	cfg.ctl_polled = 1; /* served in session_wait */
	if (recorder_start(&cfg) == 1) {
		agent_recording_started();
		/* needle record gone, nobody holds a thread from outside any
		 * more: a batch that needs one is refused at once, not after
		 * the 2 s a request waits for its answer, with every other
		 * thread stopped meanwhile (redis, whose jemalloc thread blocks
		 * every signal, froze for 2 s after a SIGKILL of needle
		 * record). */
		if (session_wait(fd, hold_hdr, in_steps) && hold_hdr != MAP_FAILED)
			thread_hold_offer(NULL); /* hold_area stays: a batch under way may still use it */
		agent_recording_stopping();
		if ((err = recorder_stop()))
			pr_warn("cannot stop recording (%d); sites stay patched\n", err);
	}
	if (hold_hdr != MAP_FAILED) {
		/* Read by needle record once it has our answer (the write
		 * below orders them: a socket write is a full barrier). */
		struct stop_hold_stats hs;
		thread_stop_take_hold_stats(&hs);
		hold_hdr->agent_stops = hs.stops;
		hold_hdr->agent_stop_window_max_ns = hs.window_max_ns;
		hold_hdr->agent_outside_hold_max_ns = hs.outside_max_ns;
	}
	char done = ATTACH_DETACHED;
	if (session_fd_ours(fd) && write(fd, &done, 1) < 0) {
		/* needle record is gone: nobody to tell. */
	}
done:
	agent_discover_in_steps(0); /* a dlopen from now on takes every new object */
	if (session_hold_hdr != MAP_FAILED) {
		hold_client_detach();
		munmap(session_hold_hdr, SHM_HEADER_SIZE);
		session_hold_hdr = MAP_FAILED;
	}
end_session:
	log_route_end();
	record_config_free(&config);
	int ours = session_fd_ours(fd);
	session_fd = -1;
	atomic_store(&session_running, 0); /* before the end of file needle record reads */
	if (ours)
		close(fd);
	return NULL;
out:
	log_route_end();
	record_config_free(&config);
	atomic_store(&session_running, 0);
	return NULL;
}

static int session_start(const char *name, int release_only)
{
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t mask;
	pid_t self = getpid(), owner = 0;

	if (!name || strlen(name) > ATTACH_NAME_MAX)
		return -EINVAL;
	/* Another process's PID is the copy a raw fork (clone without the C
	 * library: no atfork handler ran) left of its parent's session,
	 * whose thread it does not have. */
	while (!atomic_compare_exchange_strong(&session_running, &owner, self))
		if (owner == self)
			return -EBUSY;
	memcpy(session_name, name, strlen(name) + 1);
	session_release_only = release_only;
	/* The boot thread ends after this; a borrowed thread lives on. */
	caller_tid = release_only ? 0 : gettid();
	/* From here on the program's stderr is its own: what the agent has
	 * to say waits for the session's socket. */
	log_route_hold();
	/* The C library's pthread_create, not the interposer: nothing of the
	 * agent may run before start-up, which the session thread does. */
	create = interpose_resolve(IP_PTHREAD_CREATE);
	sigfillset(&mask);
	sigdelset(&mask, SIGTRAP);
	sigdelset(&mask, needle_stop_signal());
	int err = create ? pthread_attr_init(&attr) : ENOSYS;
	if (!err) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_attr_setsigmask_np(&attr, &mask);
		if (!err)
			err = create(&thread, &attr, session, NULL);
		pthread_attr_destroy(&attr);
	}
	if (err)
		atomic_store(&session_running, 0);
	return -err;
}

NEEDLE_API int needle_remote_attach(const char *name)
{
	control_mark_agent_thread(); /* the boot thread, which ends after this */
	return session_start(name, 0);
}

NEEDLE_API int needle_remote_release(const char *name)
{
	/* A thread of the program, borrowed by needle record while this
	 * process records (a fork's copy): the C library's functions it
	 * calls here are sites, and their entries on the visit's stack,
	 * above its own, would take its open calls for ones a longjmp
	 * skipped.  Untraced for the length of the call, then as it was. */
	unsigned was_busy = needle_agent_busy;
	needle_agent_busy = 1u << 30;
	int err = session_start(name, 1);
	needle_agent_busy = was_busy;
	return err;
}
