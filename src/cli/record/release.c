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
 * /proc/PID/maps) and holds a session with each, as -p does (inject.c,
 * then agent_session.c), whose hello asks only that the child's copy end
 * (ATTACH_HELLO_RELEASE, common/attach_protocol.h): its sites go back to
 * their NOPs in one batch, its buffer and meta mappings go, and it runs
 * on untraced with libneedle idle, as after a detach.
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
 *    the others are let go regardless, and the trace is written. */
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

/* The libneedle a process loaded: its file and its load address, from
 * an executable mapping (start less file offset; a read-only mapping at
 * offset 0 may be the agent's own look at a file's symbols). */
struct agent_map {
	char path[PATH_MAX];
	uint64_t lo, hi, base;
	ino_t ino;
};

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
		const char *base = strrchr(l.path, '/');
		if (base && (!strcmp(base, "/libneedle.so") || !strcmp(base, "/libneedle.so.1")) &&
		    l.perms[2] == 'x' && !agent->path[0]) {
			snprintf(agent->path, sizeof(agent->path), "%s", l.path);
			agent->lo = l.lo;
			agent->hi = l.hi;
			agent->base = l.lo - l.offset;
			agent->ino = (ino_t)l.inode;
		}
	}
	maps_close(&m);
	return found;
}

/* Where needle_remote_release is in process pid, from its libneedle's
 * dynamic symbols: the file it mapped (through /proc/PID/map_files, or
 * its path when that is still the same file), at the base it loaded it
 * at (libneedle's segments have file offsets equal to their addresses,
 * as the linker lays out a shared object).  0 when it cannot be told:
 * then nothing is called. */
static uint64_t release_entry(pid_t pid, const struct agent_map *a)
{
	char mf[96];
	struct stat st;
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)a->lo,
		 (unsigned long long)a->hi);
	int fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (fd = open(a->path, O_RDONLY | O_CLOEXEC)) >= 0 && (fstat(fd, &st) || st.st_ino != a->ino)) {
		close(fd); /* rebuilt since: its symbols may have moved */
		fd = -1;
	}
	if (fd < 0)
		return 0;
	uint64_t at = 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while (e && !at && (scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			if (gelf_getsym(d, (int)i, &sym) && sym.st_shndx != SHN_UNDEF &&
			    GELF_ST_TYPE(sym.st_info) == STT_FUNC && (name = elf_strptr(e, sh.sh_link, sym.st_name)) &&
			    !strcmp(name, "needle_remote_release")) {
				at = a->base + sym.st_value;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return at;
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
		if (holds_buffer((pid_t)p, ino, &a))
			pids[n++] = (pid_t)p;
	}
	closedir(d);
	return n;
}

static void comm_of(pid_t pid, char *comm, size_t len)
{
	char *c = proc_read(pid, "comm", NULL);
	snprintf(comm, len, "%s", c ? c : "?");
	comm[strcspn(comm, "\n")] = 0;
	free(c);
}

/* Until the agent says it let go (1), says why not or closes (0), or the
 * process is gone (1: nothing left to let go of); the buffer drained
 * meanwhile (r, when it is still read), as during a detach (attach.c). */
static int wait_released(struct recording *r, int sock, pid_t pid)
{
	uint64_t end = monotonic_ns() + 30000000000ull;
	while (monotonic_ns() < end) {
		struct pollfd p = { sock, POLLIN, 0 };
		int drained = r && r->out.begun ? (int)record_drain_some(r, 16) : 0;
		int s = poll(&p, 1, drained ? 0 : 1) > 0 ? agent_session_read(sock) : 0;
		if (s > 0)
			return 1;
		if (s < 0)
			return kill(pid, 0) != 0;
	}
	return 0;
}

/* Let go of process pid's copy of the recording whose buffer is inode
 * ino.  1 when it was let go, 0 when it ended (or exec'ed) meanwhile,
 * else -1 with why in err.  r: the recording, drained meanwhile, or NULL
 * (nobody reads that buffer any more); hold, if any, is retargeted to
 * pid. */
static int release_one(struct recording *r, ino_t ino, struct record_hold *hold, pid_t pid, char *err,
		       size_t errlen)
{
	char name[ATTACH_NAME_MAX + 1];
	struct agent_map a;
	int lfd = -1, sock = -1, ok = 0;

	err[0] = 0;
	if (!holds_buffer(pid, ino, &a))
		return 0; /* ended, or exec'ed, since it was found */
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
		.flags = ATTACH_HELLO_RELEASE,
	};
	if (agent_session_send(sock, (const uint8_t *)&hello, sizeof(hello))) {
		snprintf(err, errlen, "lost the session");
		goto fail;
	}
	if (!(ok = wait_released(r, sock, pid)))
		snprintf(err, errlen, "it did not confirm within 30 s");
fail:
	if (sock >= 0) {
		agent_session_read(sock); /* what it said last (why, when it failed) */
		close(sock);
	}
	if (lfd >= 0)
		close(lfd);
	return ok ? 1 : kill(pid, 0) ? 0 : -1;
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
	return done < 0 ? -1 : 0;
}

size_t record_release_forked(struct recording *r, struct record_hold *hold, pid_t except)
{
	pid_t pids[RELEASE_MAX], failed[RELEASE_MAX];
	size_t released = 0, failed_cnt = 0, shown = 0;
	char list[160];
	struct stat st;

	if (r->buf_fd < 0 || fstat(r->buf_fd, &st))
		return 0;
	list[0] = 0;
	for (int round = 0; round < RELEASE_ROUNDS; round++) {
		size_t n = buffer_holders(st.st_ino, except, pids, RELEASE_MAX), tried = 0;
		for (size_t i = 0; i < n; i++) {
			int seen = 0;
			for (size_t k = 0; k < failed_cnt && !seen; k++)
				seen = failed[k] == pids[i];
			if (seen)
				continue; /* said once */
			tried++;
			char why[600], comm[64];
			int done = release_one(r, st.st_ino, hold, pids[i], why, sizeof(why));
			if (done < 0) {
				comm_of(pids[i], comm, sizeof(comm));
				cli_error("process %d (%s), forked during the recording, keeps its patched code: %s",
					  (int)pids[i], comm, why);
				if (failed_cnt < RELEASE_MAX)
					failed[failed_cnt++] = pids[i];
			}
			if (done <= 0)
				continue;
			released++;
			size_t at = strlen(list);
			if (shown < 8 && at + 16 < sizeof(list))
				snprintf(list + at, sizeof(list) - at, "%s%d", shown ? " " : "", (int)pids[i]), shown++;
		}
		if (!tried)
			break;
	}
	record_hold_retarget(hold, except);
	if (released)
		fprintf(stderr, "needle: let go of %zu process%s forked during the recording (%s%s)\n", released,
			released > 1 ? "es" : "", list, released > shown ? " ..." : "");
	return released;
}
