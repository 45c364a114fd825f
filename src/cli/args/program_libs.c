/* program_libs.c - the shared libraries whose DWARF --auto-args reads
 * besides the program's: the ones the dynamic loader loads for it at
 * start (its --list mode, as ldd asks it), or those a running process
 * has mapped (-p).
 *
 * Invariants: the loader's answer is the loader's own (the program's
 * PT_INTERP run as `INTERP --list PROG`, which maps the libraries and
 * prints where, running none of their code nor the program's, and is
 * given 5 seconds); libraries dlopened later are not known here.  A
 * program without an interpreter (static) has none.  Each library is
 * known by its file's identity (device and inode), which the agent
 * compares with the mapping of each site's function: a path says less (a
 * relative one, a file replaced or bind-mounted over since).  A running
 * process's libraries are read from the mapped files themselves
 * (/proc/PID/map_files), which may be in another mount namespace.
 * Nothing here is fatal: without a list, --auto-args describes the
 * program alone. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/args/program_libs.h"
#include "cli/util/procfs.h"

/* PT_INTERP of the ELF file at path, into interp: 0, or -1. */
static int interpreter_of(const char *path, char *interp, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = 0;
	if (e && !elf_getphdrnum(e, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			if (ph.p_filesz && ph.p_filesz < len &&
			    pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz) {
				interp[ph.p_filesz] = 0;
				ret = interp[0] == '/' ? 0 : -1;
			}
			break;
		}
	}
	elf_end(e);
	close(fd);
	return ret;
}

/* Adds the library named path (n bytes), read from file, of identity
 * dev:ino; one entry per identity. */
static int list_add(struct program_libs *libs, const char *path, size_t n, const char *file, uint64_t dev,
		    uint64_t ino)
{
	for (size_t i = 0; i < libs->cnt; i++)
		if (libs->v[i].dev == dev && libs->v[i].ino == ino)
			return 0;
	struct program_lib *v = realloc(libs->v, (libs->cnt + 1) * sizeof(*v));
	if (!v)
		return -1;
	libs->v = v;
	struct program_lib *l = &v[libs->cnt];
	l->dev = dev;
	l->ino = ino;
	if (!(l->path = strndup(path, n)))
		return -1;
	if (!(l->file = strdup(file))) {
		free(l->path);
		return -1;
	}
	libs->cnt++;
	return 0;
}

int program_libs_of_file(const char *prog, struct program_libs *libs)
{
	char interp[4096];
	int pipefd[2];

	memset(libs, 0, sizeof(*libs));
	if (interpreter_of(prog, interp, sizeof(interp)) || pipe2(pipefd, O_CLOEXEC))
		return 0;
	pid_t pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return 0;
	}
	if (!pid) {
		int null = open("/dev/null", O_RDWR);
		dup2(pipefd[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		alarm(5); /* an interpreter that does not answer is killed */
		execl(interp, interp, "--list", prog, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	FILE *f = fdopen(pipefd[0], "r");
	char line[4352];
	/* "\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)": the path
	 * runs to the last " (" (a path may hold one). */
	while (f && fgets(line, sizeof(line), f)) {
		char *arrow = strstr(line, " => "), *end = NULL, *p;
		for (p = arrow ? strstr(arrow + 4, " (") : NULL; p; p = strstr(p + 2, " ("))
			end = p;
		if (!arrow || !end || end == arrow + 4)
			continue;
		*end = 0;
		struct stat st;
		if (stat(arrow + 4, &st))
			continue;
		if (list_add(libs, arrow + 4, strlen(arrow + 4), arrow + 4, st.st_dev, st.st_ino))
			break;
	}
	if (f)
		fclose(f);
	else
		close(pipefd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}

int program_libs_of_process(pid_t pid, struct program_libs *libs)
{
	char path[64];
	struct stat exe;
	struct maps_reader m;
	struct maps_line l;

	memset(libs, 0, sizeof(*libs));
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &exe))
		memset(&exe, 0, sizeof(exe));
	if (maps_open(&m, pid))
		return 0;
	while (maps_next(&m, &l)) {
		if (l.perms[2] != 'x' || l.path[0] != '/')
			continue;
		uint64_t dev = makedev(l.dev_major, l.dev_minor);
		/* The program itself, and needle's own agent (which a
		 * process attached before still maps). */
		if ((dev == exe.st_dev && l.inode == exe.st_ino) || strstr(l.path, "libneedle") ||
		    strstr(l.path, " (deleted)"))
			continue;
		char file[128];
		snprintf(file, sizeof(file), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)l.lo,
			 (unsigned long long)l.hi);
		if (list_add(libs, l.path, strlen(l.path), file, dev, l.inode))
			break;
	}
	maps_close(&m);
	return 0;
}

void program_libs_free(struct program_libs *libs)
{
	for (size_t i = 0; i < libs->cnt; i++) {
		free(libs->v[i].path);
		free(libs->v[i].file);
	}
	free(libs->v);
	memset(libs, 0, sizeof(*libs));
}
