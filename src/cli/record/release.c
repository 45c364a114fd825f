/* release.c - letting go of the processes a recording's forks left
 * behind.
 *
 * A child forked while its parent is recorded inherits the recording:
 * the patched code, the buffer's mapping and the agent's state (it
 * records into the same buffer, as the threads of another process).
 * Nothing of the parent's session reaches it: a fork copies no thread
 * but the one that forked, and the parent's detach unpatches the
 * parent.  Left alone, such a child (nginx's new workers after a reload,
 * a daemon a started program left) keeps the patched code and the
 * buffer for good, and goes on writing events nobody reads.
 *
 * So when the recording ends in its own process, needle record looks for
 * every process that still maps the buffer (the memfd's inode in
 * /proc/PID/maps) and holds a session with each: one of its threads is
 * borrowed as -p borrows one (inject.c), but nothing is loaded: the
 * libneedle it has is called (needle_remote_release, found in that very
 * file), untraced, to start the session thread (agent_session.c), whose
 * hello asks only that the child's copy end (ATTACH_HELLO_RELEASE,
 * common/attach_protocol.h): its sites go back to their NOPs in one
 * batch, its buffer and meta mappings go, and it runs on untraced with
 * libneedle idle, as after a detach.
 *
 * Invariants:
 *  - Only processes that map this recording's buffer are touched, and
 *    never the recording's own process (its own session ended it).
 *  - The buffer is drained while a child unpatches: its last events are
 *    the trace's, and a child that waits for a free chunk gets one.
 *  - Rounds until none is left, at most RELEASE_ROUNDS: a child may fork
 *    while the others are let go.
 *  - The hold service (hold.c) serves the child being let go, and no
 *    other process, for the length of its session.
 *  - A child that cannot be let go is named in one line with the reason;
 *    the others are let go regardless, and the trace is written.
 *  - Never visited: a vfork child (its parent's memory), one in another
 *    network namespace (the abstract socket is not there), one stopped
 *    or traced (no thread to borrow). */
#include <dirent.h>
#include <errno.h>
#include <gelf.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>
#include <unistd.h>

#include "cli/inject/inject.h"
#include "cli/record/hold.h"
#include "cli/record/record.h"
#include "cli/util/cli_util.h"
#include "cli/util/procfs.h"
#include "common/attach_protocol.h"
#include "common/shm_layout.h"
#include "common/tsc.h"

#define RELEASE_ROUNDS 4
#define RELEASE_MAX 512 /* processes a round */

/* The libneedle a process loaded, from its executable mappings (a
 * read-only mapping at offset 0 may be the agent's own look at a file's
 * symbols): the file, one mapping of it (lo-hi at file offset off), and
 * the range every executable mapping of it covers. */
struct agent_map {
	char path[PATH_MAX];
	uint64_t lo, hi, off, text_lo, text_hi;
	ino_t ino;
};

/* Is this a libneedle.so, as maps names it (" (deleted)" once the file
 * was replaced: rebuilt, or upgraded, during the recording)? */
static int is_libneedle(const char *path)
{
	const char *base = strrchr(path, '/');
	if (!base)
		return 0;
	size_t n = strcspn(base, " ");
	return (n == 13 && !strncmp(base, "/libneedle.so", 13)) || (n == 15 && !strncmp(base, "/libneedle.so.1", 15));
}

/* Does process pid map the buffer of inode ino?  With the libneedle.so
 * it maps in *agent (path[0] 0 if none). */
static int holds_buffer(pid_t pid, ino_t ino, struct agent_map *agent)
{
	struct maps_reader m;
	struct maps_line l;
	int found = 0;

	memset(agent, 0, sizeof(*agent));
	if (maps_open(&m, pid))
		return 0;
	while (maps_next(&m, &l)) {
		if (strstr(l.path, "needle-buffer") && (ino_t)l.inode == ino)
			found = 1;
		if (l.perms[2] != 'x' || !is_libneedle(l.path))
			continue;
		if (!agent->path[0]) {
			snprintf(agent->path, sizeof(agent->path), "%s", l.path);
			agent->lo = agent->text_lo = l.lo;
			agent->hi = l.hi;
			agent->off = l.offset;
			agent->ino = (ino_t)l.inode;
		}
		if ((ino_t)l.inode == agent->ino)
			agent->text_hi = l.hi;
	}
	maps_close(&m);
	return found;
}

/* Where needle_remote_release is in process pid, from its libneedle's
 * dynamic symbols: the file it mapped (through /proc/PID/map_files, or
 * its path when that is still the same file), at the address its
 * executable segment was loaded at (the mapping at file offset off lies
 * in the segment whose page-aligned file offset that is: its address
 * there less the segment's page-aligned address is the load base).
 * Only an address inside the executable mappings is returned.  0 when
 * it cannot be told: then nothing is called. */
static uint64_t release_entry(pid_t pid, const struct agent_map *a)
{
	char mf[96];
	struct stat st;
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)a->lo,
		 (unsigned long long)a->hi);
	int fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && !strstr(a->path, " (deleted)") && (fd = open(a->path, O_RDONLY | O_CLOEXEC)) >= 0 &&
	    (fstat(fd, &st) || st.st_ino != a->ino)) {
		close(fd); /* rebuilt since: its symbols may have moved */
		fd = -1;
	}
	if (fd < 0)
		return 0;
	uint64_t at = 0, base = 0;
	int based = 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t nph = 0;
	for (size_t i = 0; e && !elf_getphdrnum(e, &nph) && i < nph && !based; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    (ph.p_offset & ~0xfffull) <= a->off && a->off < ph.p_offset + ph.p_filesz) {
			/* The mapping's start is the segment's page at its offset. */
			base = a->lo - (a->off - (ph.p_offset & ~0xfffull)) - (ph.p_vaddr & ~0xfffull);
			based = 1;
		}
	}
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while (e && based && !at && (scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			if (gelf_getsym(d, (int)i, &sym) && sym.st_shndx != SHN_UNDEF &&
			    GELF_ST_TYPE(sym.st_info) == STT_FUNC && (name = elf_strptr(e, sh.sh_link, sym.st_name)) &&
			    !strcmp(name, "needle_remote_release")) {
				at = base + sym.st_value;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return at >= a->text_lo && at < a->text_hi ? at : 0;
}

/* Process pid's state letter and parent, from /proc/PID/stat ("pid
 * (comm) S ppid ...", the comm may hold parentheses): 0, or -1 when it
 * is gone. */
static int proc_state(pid_t pid, char *state, int *ppid)
{
	char *stat = proc_read(pid, "stat", NULL);
	const char *close_paren = stat ? strrchr(stat, ')') : NULL;
	int ok = close_paren && sscanf(close_paren + 1, " %c %d", state, ppid) == 2;
	free(stat);
	return ok ? 0 : -1;
}

/* Has process pid ended (gone, or a zombie its parent has not reaped)? */
static int process_ended(pid_t pid)
{
	char state;
	int ppid;
	return proc_state(pid, &state, &ppid) || state == 'Z' || state == 'X';
}

/* A vfork (or posix_spawn) child runs in its parent's memory until it
 * execs: its maps are its parent's, and a thread started in it would run
 * in the parent.  Not one to let go of: the next round finds what it
 * exec'ed, if that records. */
static int shares_parent_memory(pid_t pid)
{
	char state;
	int ppid;
	return !proc_state(pid, &state, &ppid) && ppid > 0 &&
	       syscall(SYS_kcmp, (pid_t)pid, (pid_t)ppid, KCMP_VM, 0, 0) == 0;
}

int record_maps_buffer(pid_t pid, ino_t ino)
{
	struct agent_map a;
	return holds_buffer(pid, ino, &a);
}

static size_t buffer_holders(ino_t ino, pid_t except, pid_t *pids, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;
	struct agent_map a;

	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		if (*end || p <= 0 || p == except || p == getpid())
			continue;
		if (holds_buffer((pid_t)p, ino, &a) && !shares_parent_memory((pid_t)p))
			pids[n++] = (pid_t)p;
	}
	closedir(d);
	return n;
}

/* Until the agent says it let go (1), says why not and closes (-1), or
 * 30 s passed (0); the buffer drained meanwhile (r, when it is still
 * read), as during a detach (attach.c).  After its answer, until its end
 * of the session (a second at most): then the process may be attached to
 * again at once. */
static int wait_released(struct recording *r, int sock)
{
	uint64_t end = monotonic_ns() + 30000000000ull;
	int s = 0;
	while (!s && monotonic_ns() < end) {
		struct pollfd p = { sock, POLLIN, 0 };
		int drained = r && r->out.begun ? (int)record_drain_some(r, 16) : 0;
		s = poll(&p, 1, drained ? 0 : 1) > 0 ? agent_session_read(sock) : 0;
	}
	if (s > 0) {
		struct pollfd p = { sock, POLLIN, 0 };
		char c;
		if (poll(&p, 1, 1000) > 0 && recv(sock, &c, 1, MSG_DONTWAIT) > 0) {
			/* nothing else comes after its answer */
		}
	}
	return s;
}

/* Let go of process pid's copy of the recording whose buffer is inode
 * ino.  1 when it was let go, 0 when it ended (or exec'ed) meanwhile,
 * else -1 with why in err, or -EBUSY when its libneedle was in a session
 * of its own (a recording stopped during its start-up, which it lets go
 * of when that ends).  r: the recording, drained meanwhile, or NULL
 * (nobody reads that buffer any more); hold, if any, is retargeted to
 * pid. */

static int release_one(struct recording *r, ino_t ino, struct record_hold *hold, pid_t pid, char *err,
		       size_t errlen)
{
	char name[ATTACH_NAME_MAX + 1];
	struct agent_map a;
	int lfd = -1, sock = -1, ok = 0, busy = 0;

	err[0] = 0;
	if (!holds_buffer(pid, ino, &a))
		return 0; /* ended, or exec'ed, since it was found */
	if (!record_same_netns(pid)) {
		snprintf(err, errlen, "it is in another network namespace, where libneedle could not reach needle record");
		return -1;
	}
	/* No thread of it can be borrowed: said at once, not after the 10 s
	 * a session is waited for. */
	char *status = proc_read(pid, "status", NULL);
	const char *state = status ? strstr(status, "\nState:\t") : NULL, *tracer = status ? strstr(status, "\nTracerPid:\t") : NULL;
	long tracer_pid = tracer ? strtol(tracer + 12, NULL, 10) : 0;
	int stopped = state && (state[8] == 'T' || state[8] == 't');
	free(status);
	if (tracer_pid > 0 || stopped) {
		if (tracer_pid > 0)
			snprintf(err, errlen, "it is traced by process %ld (a debugger?): a later needle record -p on it "
				 "lets go of it once that has detached", tracer_pid);
		else
			snprintf(err, errlen, "it is stopped (SIGSTOP?): a later needle record -p on it lets go of it once "
				 "it runs");
		return -1;
	}
	/* The agent it has is called, nothing loaded: what a borrowed thread
	 * runs in a process that records is traced, unless libneedle's own
	 * code runs it (needle_remote_release). */
	struct inject_request req = { .entry_at = a.path[0] ? release_entry(pid, &a) : 0 };
	if (!req.entry_at) {
		snprintf(err, errlen, "its libneedle (%s) cannot be read", a.path[0] ? a.path : "not mapped");
		goto fail;
	}
	if ((lfd = agent_session_listen(name, sizeof(name))) < 0) {
		snprintf(err, errlen, "cannot set up a session: %s", strerror(errno));
		goto fail;
	}
	req.arg = name;
	struct inject_result res;
	if (hold)
		record_hold_retarget(hold, pid);
	if (inject_library(pid, &req, &res, err, errlen))
		goto fail;
	if (res.entry_ret) {
		busy = res.entry_ret == -EBUSY;
		snprintf(err, errlen, "%s", res.entry_ret == -EBUSY ? "it is in a needle session of its own"
								  : strerror((int)-res.entry_ret));
		goto fail;
	}
	if ((sock = agent_session_accept(lfd, pid, 10000)) < 0) {
		snprintf(err, errlen, "libneedle in it never connected back");
		goto fail;
	}
	struct attach_hello hello = {
		.magic = ATTACH_MAGIC,
		.version = ATTACH_VERSION,
		.flags = ATTACH_HELLO_RELEASE | (hold && hold->started ? 0 : ATTACH_HELLO_UNSERVED),
	};
	if (agent_session_send(sock, (const uint8_t *)&hello, sizeof(hello))) {
		snprintf(err, errlen, "lost the session");
		goto fail;
	}
	int w = wait_released(r, sock);
	/* Said, and done: nothing of the recording is mapped there. */
	if ((ok = w > 0) && holds_buffer(pid, ino, &a)) {
		ok = 0;
		snprintf(err, errlen, "it still maps the buffer after it said it let go");
	}
	if (w < 0)
		snprintf(err, errlen, "its libneedle could not end the recording there");
	else if (!w)
		snprintf(err, errlen, "it did not confirm within 30 s");
fail:
	if (sock >= 0) {
		agent_session_read(sock); /* what it said last (why, when it failed) */
		close(sock);
	}
	if (lfd >= 0)
		close(lfd);
	return ok ? 1 : process_ended(pid) ? 0 : busy ? -EBUSY : -1;
}

/* The header of the buffer of inode ino that process pid maps, mapped
 * here through /proc/PID/map_files (root only), or NULL. */
static struct shm_header *map_header_of(pid_t pid, ino_t ino)
{
	struct maps_reader m;
	struct maps_line l;
	char path[96] = "";

	if (maps_open(&m, pid))
		return NULL;
	while (maps_next(&m, &l))
		if (strstr(l.path, "needle-buffer") && (ino_t)l.inode == ino && !l.offset) {
			snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)l.lo,
				 (unsigned long long)l.hi);
			break;
		}
	maps_close(&m);
	int fd = path[0] ? open(path, O_RDWR | O_CLOEXEC) : -1;
	if (fd < 0)
		return NULL;
	void *h = mmap(NULL, SHM_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return h == MAP_FAILED ? NULL : h;
}

int record_release_orphan(pid_t pid, ino_t ino, char *err, size_t errlen)
{
	/* Its threads that block every signal are held, for its batch, by a
	 * hold service on the header its agent asks through: that of the
	 * dead recording, whose needle record served it. */
	static struct record_hold hold;
	struct shm_header *h = map_header_of(pid, ino);
	int held = h && !record_hold_start(&hold, h, pid);
	int done = release_one(NULL, ino, held ? &hold : NULL, pid, err, errlen);
	if (held)
		record_hold_stop(&hold);
	if (h)
		munmap(h, SHM_HEADER_SIZE);
	return done >= 0 ? 0 : done;
}

static int pid_in(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return 1;
	return 0;
}

size_t record_release_forked(struct recording *r, struct record_hold *hold, pid_t except)
{
	pid_t pids[RELEASE_MAX], failed[RELEASE_MAX], done_pids[RELEASE_MAX];
	size_t released = 0, failed_cnt = 0, shown = 0;
	char list[160];
	struct stat st;

	if (r->buf_fd < 0 || fstat(r->buf_fd, &st))
		return 0;
	list[0] = 0;
	for (int round = 0; round < RELEASE_ROUNDS; round++) {
		size_t n = buffer_holders(st.st_ino, except, pids, RELEASE_MAX), tried = 0;
		for (size_t i = 0; i < n; i++) {
			if (pid_in(failed, failed_cnt, pids[i]))
				continue; /* said once */
			tried++;
			char why[600], comm[64];
			int done = release_one(r, st.st_ino, hold, pids[i], why, sizeof(why));
			if (done < 0) {
				proc_comm(pids[i], comm, sizeof(comm));
				cli_error("process %d (%s), forked during the recording, keeps its patched code: %s",
					  (int)pids[i], comm, why);
				if (failed_cnt < RELEASE_MAX)
					failed[failed_cnt++] = pids[i];
			}
			if (done <= 0)
				continue;
			if (pid_in(done_pids, released < RELEASE_MAX ? released : RELEASE_MAX, pids[i]))
				continue; /* counted once */
			if (released < RELEASE_MAX)
				done_pids[released] = pids[i];
			released++;
			size_t at = strlen(list);
			if (shown < 8 && at + 16 < sizeof(list))
				snprintf(list + at, sizeof(list) - at, "%s%d", shown ? " " : "", (int)pids[i]), shown++;
		}
		if (!tried)
			break;
	}
	record_hold_retarget(hold, except);
	/* Still there after the last round: forked faster than let go of. */
	size_t left = buffer_holders(st.st_ino, except, pids, RELEASE_MAX), unsaid = 0;
	for (size_t i = 0; i < left; i++)
		unsaid += !pid_in(failed, failed_cnt, pids[i]);
	if (unsaid)
		cli_error("%zu process%s forked during the recording still record%s (they forked faster than they were "
			  "let go of)", unsaid, unsaid > 1 ? "es" : "", unsaid > 1 ? "" : "s");
	if (released)
		fprintf(stderr, "needle: let go of %zu process%s forked during the recording (%s%s)\n", released,
			released > 1 ? "es" : "", list, released > shown ? " ..." : "");
	return released;
}
