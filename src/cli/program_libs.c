/* program_libs.c - the shared libraries whose DWARF --auto-args reads
 * besides the program's: the ones the dynamic loader loads for it at
 * start (its --list mode, as ldd asks it), or those a running process
 * has mapped (-p).
 *
 * Invariants: the loader's answer is the loader's own (the program's
 * PT_INTERP run as `INTERP --list PROG`: it maps the libraries and
 * prints where, and runs none of their code nor the program's), so the
 * paths are the ones its link map, and so the agent, names them;
 * libraries dlopened later are not known here.  A program without an
 * interpreter (static) has none.  A running process's libraries are
 * named as it maps them and read through /proc/PID/root (its mount
 * namespace may not be needle's).  Nothing here is fatal: without a
 * list, --auto-args describes the program alone. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/record.h"

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

/* Adds path (n bytes), read at root + path when root is given. */
static int list_add(struct program_libs *libs, const char *path, size_t n, const char *root)
{
	for (size_t i = 0; i < libs->cnt; i++)
		if (strlen(libs->paths[i]) == n && !strncmp(libs->paths[i], path, n))
			return 0;
	char **v = realloc(libs->paths, (libs->cnt + 1) * sizeof(*v));
	if (!v)
		return -1;
	libs->paths = v;
	char **f = realloc(libs->files, (libs->cnt + 1) * sizeof(*f));
	if (!f)
		return -1;
	libs->files = f;
	if (!(v[libs->cnt] = strndup(path, n)))
		return -1;
	if (asprintf(&f[libs->cnt], "%s%.*s", root ? root : "", (int)n, path) < 0) {
		free(v[libs->cnt]);
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
		execl(interp, interp, "--list", prog, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	FILE *f = fdopen(pipefd[0], "r");
	char line[4352];
	/* "\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" */
	while (f && fgets(line, sizeof(line), f)) {
		char *arrow = strstr(line, " => /"), *end;
		if (!arrow || !(end = strstr(arrow + 4, " (")))
			continue;
		if (list_add(libs, arrow + 4, (size_t)(end - (arrow + 4)), NULL))
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
	char path[64], root[64], line[4352], exe[4096];

	memset(libs, 0, sizeof(*libs));
	/* The process's paths, in its mount namespace (a container's, a
	 * chroot's): read through its root. */
	libs->canonical = 1;
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	/* "7f... r-xp 00028000 fe:01 1234   /usr/lib/x86_64-linux-gnu/libc.so.6" */
	while (f && fgets(line, sizeof(line), f)) {
		char perms[8];
		int at = 0;
		if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &at) != 1 || !at || perms[2] != 'x' || line[at] != '/')
			continue;
		char *file = line + at;
		file[strcspn(file, "\n")] = 0;
		/* The program itself, and needle's own agent and what it
		 * brought (libdw, libelf, ... are the program's too only if it
		 * maps them itself: not told apart here, and harmless). */
		if (!strcmp(file, exe) || strstr(file, "libneedle") || strstr(file, " (deleted)"))
			continue;
		if (list_add(libs, file, strlen(file), root))
			break;
	}
	if (f)
		fclose(f);
	return 0;
}

void program_libs_free(struct program_libs *libs)
{
	for (size_t i = 0; i < libs->cnt; i++) {
		free(libs->paths[i]);
		free(libs->files[i]);
	}
	free(libs->paths);
	free(libs->files);
	memset(libs, 0, sizeof(*libs));
}
