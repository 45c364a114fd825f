/* cmd_record.c - `needle record`: run a program with libneedle preloaded,
 * drain its shared trace buffer into a trace file, and write the metadata
 * (clock, process, threads) when it ends.  record.h lists the parts.
 *
 * Invariants:
 *  - Everything that can be refused is refused before the program starts:
 *    options, a program that cannot be found, a trace file that cannot or
 *    must not be written (output.c).  Once started, the program
 *    runs to its end, and needle record exits with its status (128+N for
 *    signal N), traced or not, with two exceptions, each said in one line:
 *    the agent stopped the program before main (no patchable entry,
 *    filters that match nothing: exit 1), and a trace file that could not
 *    be written in full (exit 1, after keeping what fit).
 *  - The trace file is replaced only when the agent reports that it
 *    records; then the modules, the sites and a first clock go in before
 *    any chunk.  If the program dies (SIGKILL, SIGSEGV), every event it
 *    wrote is still in the buffer: chunks it never published are salvaged
 *    from their release-stored fill level.
 *  - needle record is a child subreaper: processes the program forked and
 *    left behind become its children, and while any of them still maps
 *    the buffer the recording goes on (they write into it), unless the
 *    user stops it.  Each of these is said in one line on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/record/hold.h"
#include "cli/record/record.h"
#include "cli/util/cli_util.h"
#include "cli/util/procfs.h"
#include "common/tsc.h"

volatile sig_atomic_t record_sigchld;
volatile sig_atomic_t record_stop;
static volatile sig_atomic_t program_done;
static pid_t child_pid;

static void on_sigchld(int sig)
{
	(void)sig;
	record_sigchld++;
}

/* SIGTERM, SIGHUP, and SIGINT or SIGQUIT sent by a process (kill, not the
 * terminal, whose Ctrl-C reaches the program's process group anyway): the
 * program gets them while it runs; afterwards they stop the recording of
 * what it left. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if ((sig == SIGINT || sig == SIGQUIT) && si->si_code == SI_KERNEL && !program_done)
		return; /* from the terminal: the program had it too */
	if (!program_done && child_pid > 0)
		kill(child_pid, sig);
	else if (sig != SIGHUP || !record_signal_was_ignored(sig))
		record_stop = 1; /* a hangup under nohup never stops the recording */
}

/* Reap what has ended: the program (its status kept) and the orphans
 * adopted as subreaper.  1 once the program has ended. */
static int reap(struct recording *r)
{
	int st;
	pid_t w;
	struct rusage ru;

	while ((w = wait4(-1, &st, WNOHANG, &ru)) > 0) {
		if (w == r->pid) {
			r->status = st;
			r->usage = ru;
			r->have_usage = 1;
			r->exit_ns = monotonic_ns();
			program_done = 1;
		}
	}
	return program_done;
}

/* --time: the program's elapsed, system and user time, in uftrace's
 * words and layout, once it has ended (wait4's rusage). */
static void print_program_time(const struct recording *r)
{
	if (!r->o->print_time || !r->have_usage)
		return;
	uint64_t el = r->exit_ns > r->ns0 ? r->exit_ns - r->ns0 : 0;
	fprintf(stderr, "elapsed time: %6llu.%09llu sec\n", (unsigned long long)(el / 1000000000u),
		(unsigned long long)(el % 1000000000u));
	fprintf(stderr, " system time: %6ld.%09ld sec\n", (long)r->usage.ru_stime.tv_sec,
		(long)r->usage.ru_stime.tv_usec * 1000);
	fprintf(stderr, "   user time: %6ld.%09ld sec\n", (long)r->usage.ru_utime.tv_sec,
		(long)r->usage.ru_utime.tv_usec * 1000);
}

static int exit_status(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* "(PID 12)" or "(PIDs 12, 13 and 4 more)" */
static void format_pids(char *buf, size_t len, const pid_t *pids, size_t n, size_t shown)
{
	int off = snprintf(buf, len, "(PID%s ", n > 1 ? "s" : "");
	for (size_t i = 0; i < shown && off > 0 && (size_t)off < len; i++)
		off += snprintf(buf + off, len - (size_t)off, "%s%d", i ? ", " : "", (int)pids[i]);
	if (off > 0 && (size_t)off < len && n > shown)
		off += snprintf(buf + off, len - (size_t)off, " and %zu more", n - shown);
	if (off > 0 && (size_t)off < len)
		snprintf(buf + off, len - (size_t)off, ")");
}

/* Has needle record a child besides except (-E's uprobe janitor, which
 * maps no buffer)?  From each of its threads' children lists; 1 when
 * they cannot be read. */
static int has_child_besides(pid_t except)
{
	DIR *d = opendir("/proc/self/task");
	int other = 0, read_any = 0;
	for (struct dirent *de; d && !other && (de = readdir(d));) {
		char name[300];
		if (de->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "task/%s/children", de->d_name);
		char *buf = proc_read(getpid(), name, NULL);
		if (!buf)
			continue;
		read_any = 1;
		for (char *p = buf, *end; *p; p = end) {
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid != except)
				other = 1;
		}
		free(buf);
	}
	if (d)
		closedir(d);
	return other || !read_any;
}

/* The program has exited, but processes it forked may still write into
 * the buffer: drain until none maps it, or the user stops the recording. */
static void follow_descendants(struct recording *r, struct record_hold *hold)
{
	struct stat st;
	struct sigaction sa;
	siginfo_t si;
	pid_t pids[8];
	char list[160];
	size_t n;

	/* Every live descendant has a live parent among them, or is ours by
	 * now: with no child at all, there is nothing to look for. */
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) && errno == ECHILD)
		return;
	if (r->kernel.have_janitor && !has_child_besides(r->kernel.janitor_pid))
		return;
	if (fstat(r->buf_fd, &st))
		return;
	/* A descendant between its exec and its new image's start-up maps
	 * no buffer yet: looked for again for a quarter of a second. */
	for (int look = 0; !(n = record_descendants(st.st_ino, pids, 8)); look++) {
		if (look == 5)
			return;
		struct timespec t = { 0, 50 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGINT, &sa, NULL);
	format_pids(list, sizeof(list), pids, n, n < 8 ? n : 8);
	cli_error("%s exited; recording the processes it left running %s until they exit (Ctrl-C stops)",
		  r->argv[0], list);
	sig_atomic_t checked = record_sigchld;
	uint64_t last = monotonic_ns();
	for (;;) {
		sig_atomic_t seen = record_sigchld;
		reap(r);
		if (record_buffer_ready(r))
			record_drain(r, 0);
		record_kernel_drain(r, 0);
		if (record_stop)
			break;
		/* On every SIGCHLD, else five times a second: a grandchild's
		 * end is not signalled here. */
		uint64_t now = monotonic_ns();
		if (seen != checked || now - last >= 200000000ull) {
			checked = seen;
			last = now;
			if (!record_descendants(st.st_ino, pids, 8))
				return;
		}
		record_wait(r, seen, r->kernel.ring_cnt ? 10 : -1);
	}
	/* Stopped while some still run: they go on, untraced, as after a
	 * detach (release.c). */
	record_release_forked(r, hold, r->pid);
}

/* The agent never recorded.  Either it never started (a static program,
 * or one that drops LD_PRELOAD) or could not do its part (out of memory):
 * the program ran untraced and its status is needle record's, with a
 * warning.  Or the request cannot be met (no patchable entry, filters
 * that match nothing): then it ended the program before main, so that
 * nothing runs untraced by mistake, and that is an error. */
static int not_traced(struct recording *r, uint32_t state)
{
	char agent_err[512];
	uint64_t sites;
	const char *prog = r->argv[0];

	record_read_result(r, &sites, agent_err, sizeof(agent_err));
	record_out_abandon(&r->out);
	if (state == AGENT_FAILED) {
		cli_error("%s%s; %s was stopped before main, and no trace was written",
			  agent_err[0] ? agent_err : "recording failed in the program",
			  !strcmp(agent_err, "the filters match no function") ? " (check -F, -N, -P and -U)" : "",
			  prog);
		return 1;
	}
	if (state == AGENT_UNTRACED) {
		cli_error("warning: %s was not traced: %s; it ran untraced, and no trace was written", prog,
			  agent_err[0] ? agent_err : "libneedle failed in it");
		return exit_status(r->status);
	}
	cli_error("warning: %s was not traced: libneedle did not start in it (is it statically linked, or does it "
		  "drop LD_PRELOAD?); it ran untraced, and no trace was written", prog);
	return exit_status(r->status);
}

/* --snapshot: the program runs with overwrite rings; snapshots are taken
 * as snapshot.c's service decides, and a last one when the
 * program ends (always after a crash; after a normal end only without
 * triggers). */
static int snapshot_run(struct recording *r, struct record_hold *hold)
{
	struct shm_header *h = r->shm;
	struct snapshot_service ss = { 0 };

	for (;;) {
		sig_atomic_t seen = record_sigchld;
		uint32_t word = atomic_load(&h->wake_word);
		if (!ss.started && atomic_load(&h->agent_state) == AGENT_RECORDING)
			snapshot_service_start(&ss, r);
		uint64_t wait_ns = ss.started ? snapshot_service_poll(&ss, r) : 10000000ull;
		/* The kernel's rings fill in milliseconds: read every 10. */
		record_kernel_keep(r, 0);
		if (r->kernel.ring_cnt && wait_ns > 10000000ull)
			wait_ns = 10000000ull;
		if (reap(r))
			break;
		if (record_sigchld == seen)
			snapshot_service_wait(&ss, r, word, wait_ns);
	}
	uint32_t state = atomic_load(&h->agent_state);
	if (!ss.started && state != AGENT_RECORDING)
		return not_traced(r, state);
	/* What it left running is not followed in this mode: let go of
	 * (release.c), not left recording into rings nobody reads. */
	record_release_forked(r, hold, r->pid);
	int crashed = WIFSIGNALED(r->status);
	int werr = snapshot_service_end(&ss, r, crashed ? TRACE_SNAPSHOT_CRASH : TRACE_SNAPSHOT_END);
	if (crashed)
		cli_error("%s was killed by signal %d (%s)", r->argv[0], WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
	return werr ? 1 : exit_status(r->status);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct recording r = { 0 };
	char agent[PATH_MAX], prog[PATH_MAX];
	int first = record_parse_opts(argc, argv, &o);
	int exec_errno, ret = 1;

	if (first < 0)
		return 2;
	/* Before anything that takes time: a SIGUSR2 now must not kill us. */
	if (o.snapshot)
		snapshot_catch_sigusr2();
	r.o = &o;
	r.argv = argv + first;
	r.buf_fd = r.meta_fd = -1;
	if (record_find_agent(agent, sizeof(agent))) {
		cli_error("cannot find libneedle.so next to the needle binary; set NEEDLE_LIB to its path");
		return 1;
	}
	if (o.attach_pid)
		return record_attach(&r, agent);
	int perr = record_find_program(r.argv[0], prog, sizeof(prog));
	if (perr) {
		cli_error("cannot run %s: %s", r.argv[0], perr == -ENOENT ? "command not found" : strerror(-perr));
		return 127;
	}
	/* Found in the current directory (not in PATH): execvp would not. */
	if (!strchr(r.argv[0], '/') && !strncmp(prog, "./", 2))
		r.argv[0] = prog;
	record_note_inherited_signals();
	if (record_prepare(&r, prog, 0))
		return 1;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sigaction(SIGCHLD, &sa, NULL); /* no SA_RESTART: it interrupts the futex wait */
	/* Sent to needle record, each is the program's: passed on while it
	 * runs, whatever the caller's disposition, which the program has
	 * (spawn.c) and may replace with a handler of its own, as it would
	 * have had the signal itself (a background job's SIGINT, ignored,
	 * then caught by the program: kill -INT reaches that handler).  A
	 * hangup nohup ignored never stops the recording. */
	sa.sa_handler = NULL;
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	static const int forwarded[] = { SIGTERM, SIGHUP, SIGINT, SIGQUIT };
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &sa, NULL);
	/* Orphans of the program become ours: they may still record. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	r.raw0 = tsc_read();
	r.ns0 = monotonic_ns();
	r.kernel.asked = o.kernel;
	r.kernel.no_follow_exec = o.agent.no_follow_exec;
	r.kernel.keep_max = o.snapshot && o.buffer_bytes / sizeof(struct kernel_event) > KEEP_EVENTS_MIN
				    ? o.buffer_bytes / sizeof(struct kernel_event)
				    : KEEP_EVENTS_MIN;
	r.pid = child_pid = record_spawn(r.argv, agent, r.buf_fd, r.meta_fd, &o, o.kernel ? &r.kernel : NULL,
					 &exec_errno);
	if (r.pid < 0) {
		cli_error("cannot start %s: %s", r.argv[0], strerror(errno));
		goto abandon;
	}
	if (exec_errno) {
		waitpid(r.pid, NULL, 0);
		cli_error("cannot run %s: %s", r.argv[0], strerror(exec_errno));
		ret = 127;
		goto abandon;
	}

	/* Threads that block every signal are held with ptrace for the
	 * agent's patch batches (hold.c). */
	static struct record_hold hold;
	record_hold_start(&hold, r.shm, r.pid);
	if (o.snapshot) {
		int rc = snapshot_run(&r, &hold);
		kernel_close(&r.kernel);
		print_program_time(&r);
		return rc;
	}
	for (;;) {
		sig_atomic_t seen = record_sigchld;
		if (!r.out.begun && atomic_load(&r.shm->agent_state) == AGENT_RECORDING)
			record_begin(&r);
		if (r.out.begun && record_buffer_ready(&r))
			record_drain(&r, 0);
		record_kernel_drain(&r, 0);
		if (reap(&r))
			break;
		/* Until the agent records, look often: the --ctl line is
		 * printed then, and nothing wakes this loop for it.  The
		 * kernel's rings are read every 10 ms: nothing wakes this
		 * loop for them either. */
		record_wait(&r, seen, r.out.begun && !r.kernel.ring_cnt ? -1 : 10);
	}
	print_program_time(&r);
	uint32_t state = atomic_load(&r.shm->agent_state);
	if (!r.out.begun && state == AGENT_RECORDING)
		record_begin(&r);
	if (!r.out.begun) {
		int rc = not_traced(&r, state);
		kernel_close(&r.kernel); /* -E's uprobes out of tracefs */
		return rc;
	}
	follow_descendants(&r, &hold);
	int werr = record_finish(&r);
	kernel_close(&r.kernel);
	if (WIFSIGNALED(r.status))
		cli_error("%s was killed by signal %d (%s)", r.argv[0], WTERMSIG(r.status), strsignal(WTERMSIG(r.status)));
	return werr ? 1 : exit_status(r.status);

abandon:
	record_out_abandon(&r.out);
	kernel_close(&r.kernel);
	return ret;
}
