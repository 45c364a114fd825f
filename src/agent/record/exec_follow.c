/* exec_follow.c - a program that a traced process exec's into is traced
 * too, into the same recording, as uftrace and `strace -f` follow an
 * exec: the execve family and posix_spawn are interposed, and the
 * environment the new program gets carries libneedle in LD_PRELOAD and a
 * config of its own (recorder_exec_prepare: the recording's, with the
 * next image number).  Its agent maps the same buffer and meta file and
 * records as image N: site ids of its own, in blocks of the meta file of
 * its own, which needle record turns into the trace's (meta.c there).
 *
 * The program's call is a line of the graph like any other (each
 * interposer is a site: `execl() {`, with no end when the exec
 * succeeds); the calling thread's chunk is published first, since an
 * exec ends the thread with no thread exit.
 *
 * Invariants:
 *  - the new program sees the environment it was given: its agent
 *    removes RECORD_CONFIG_ENV and libneedle's LD_PRELOAD entry before
 *    main, and closes the three descriptors it inherits (all at numbers
 *    out of the program's way);
 *  - an exec that fails returns its own errno with nothing left open
 *    and the caller's environment untouched (the copy is a new array);
 *  - nothing here calls malloc or takes a lock: an exec may be made by
 *    a vfork child, which shares its parent's memory, or by a signal
 *    handler.  The new array and strings are an anonymous mapping;
 *  - not followed, and the exec left exactly as the program made it:
 *    a set-user-ID or set-group-ID file, an executable the preload would
 *    not load into (a static one, no PT_INTERP; another class or
 *    machine), a script whose interpreter is one of those, and every
 *    exec of a process needle record did not start (record -p).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/base/interpose.h"
#include "agent/record/event_writer.h"
#include "agent/record/recorder.h"
#include "common/meta_protocol.h"
#include "common/record_config.h"

extern char **environ;

/* libneedle's path, for the new program's LD_PRELOAD: found once, where
 * dladdr (which takes the loader's lock) may run. */
static char agent_path[PATH_MAX];

void exec_follow_init(void)
{
	Dl_info di;
	if (!agent_path[0] && dladdr((void *)&exec_follow_init, &di) && di.dli_fname && di.dli_fname[0] == '/' &&
	    strlen(di.dli_fname) < sizeof(agent_path))
		strcpy(agent_path, di.dli_fname);
}

/* Would LD_PRELOAD load libneedle into what fd holds?  1 yes; 0 no (why:
 * a static string).  A script is judged by its interpreter, once. */
static int loadable(int fd, int depth, const char **why)
{
	struct stat st;
	unsigned char head[256];

	if (fstat(fd, &st))
		return 1; /* the exec will say what is wrong */
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		*why = "a set-user-ID or set-group-ID program, which the loader runs without LD_PRELOAD";
		return 0;
	}
	ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
	if (n >= 2 && head[0] == '#' && head[1] == '!') {
		if (depth)
			return 1;
		head[n] = 0;
		char *p = (char *)head + 2;
		while (*p == ' ' || *p == '\t')
			p++;
		char *e = p;
		while (*e && *e != ' ' && *e != '\t' && *e != '\n')
			e++;
		*e = 0;
		int ifd = *p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
		if (ifd < 0)
			return 1;
		int ok = loadable(ifd, depth + 1, why);
		close(ifd);
		return ok;
	}
	if (n < (ssize_t)sizeof(Elf64_Ehdr) || memcmp(head, ELFMAG, SELFMAG))
		return 1; /* not ELF: the exec fails or the kernel has a handler */
	Elf64_Ehdr eh;
	memcpy(&eh, head, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		*why = "not an x86-64 program, which libneedle cannot be loaded into";
		return 0;
	}
	for (unsigned i = 0; i < eh.e_phnum && i < 64; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) != (ssize_t)sizeof(ph))
			return 1;
		if (ph.p_type == PT_INTERP)
			return 1;
	}
	*why = "a static executable, which loads no library";
	return 0;
}

static int loadable_path(int dirfd, const char *path, int flags, const char **why)
{
	int fd = (flags & AT_EMPTY_PATH) && path && !*path ? dup(dirfd) : openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	int ok = loadable(fd, 0, why);
	close(fd);
	return ok;
}

/* The file execvp would run for file: the first executable one along
 * PATH (its default when unset), into buf. */
static const char *path_search(const char *file, char *buf, size_t len)
{
	if (strchr(file, '/'))
		return file;
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	size_t fl = strlen(file);
	for (const char *p = path;; p++) {
		const char *c = strchr(p, ':');
		size_t dl = c ? (size_t)(c - p) : strlen(p);
		if (dl + fl + 2 <= len) {
			if (dl) {
				memcpy(buf, p, dl);
				buf[dl] = '/';
				memcpy(buf + dl + 1, file, fl + 1);
			} else {
				memcpy(buf, file, fl + 1);
			}
			if (!access(buf, X_OK))
				return buf;
		}
		if (!c)
			return NULL;
		p = c;
	}
}

/* An exec being followed: the descriptors it hands on and the new
 * environment (an anonymous mapping of map_len bytes). */
struct follow {
	struct exec_follow fds;
	void *map;
	size_t map_len;
};

static void note(int err, const char *what, const char *why)
{
	char line[PATH_MAX + 256];
	snprintf(line, sizeof(line), META_NOTE_WRITE, err, "");
	size_t n = strlen(line) - 1; /* before its newline */
	snprintf(line + n, sizeof(line) - n, "%s: %s\n", what ? what : "?", why);
	recorder_exec_note(line);
}

static int env_is(const char *e, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(e, name, n) && e[n] == '=';
}

/* envp with libneedle first in LD_PRELOAD and the config's descriptor:
 * a new array, or NULL when the exec is not followed (then f holds
 * nothing).  what names the program for a note. */
static char **follow_begin(struct follow *f, char *const envp[], int is_loadable, const char *what, const char *why)
{
	f->map = NULL;
	f->fds.config_fd = f->fds.buf_fd = f->fds.meta_fd = -1;
	if (!agent_path[0])
		return NULL;
	if (!is_loadable) {
		note(0, what, why);
		return NULL;
	}
	int err = recorder_exec_prepare(&f->fds);
	if (err) {
		if (err != -ENOENT)
			note(-err, what, "needle record's buffer cannot be opened from this process (another user?): it runs untraced");
		return NULL;
	}
	size_t cnt = 0, strings = 0;
	const char *orig = NULL;
	for (; envp && envp[cnt]; cnt++)
		if (env_is(envp[cnt], "LD_PRELOAD"))
			orig = envp[cnt] + sizeof("LD_PRELOAD");
	strings += sizeof("LD_PRELOAD=") + strlen(agent_path) + 1 + (orig ? strlen(orig) : 0);
	strings += sizeof(RECORD_CONFIG_ENV) + 24;
	f->map_len = (cnt + 3) * sizeof(char *) + strings;
	f->map = mmap(NULL, f->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->map == MAP_FAILED) {
		f->map = NULL;
		recorder_exec_abandon(&f->fds);
		return NULL;
	}
	char **env = f->map, *s = (char *)(env + cnt + 3);
	size_t k = 0;
	for (size_t i = 0; i < cnt; i++)
		if (!env_is(envp[i], "LD_PRELOAD") && !env_is(envp[i], RECORD_CONFIG_ENV))
			env[k++] = envp[i];
	env[k++] = s;
	s += sprintf(s, "LD_PRELOAD=%s%s%s", agent_path, orig && *orig ? ":" : "", orig && *orig ? orig : "") + 1;
	env[k++] = s;
	sprintf(s, "%s=%d", RECORD_CONFIG_ENV, f->fds.config_fd);
	env[k] = NULL;
	/* The calling thread's events so far reach needle record now: the
	 * exec ends it without a thread exit. */
	chunk_publish_current();
	return env;
}

/* The exec returned (it failed), or posix_spawn is done with them. */
static void follow_end(struct follow *f)
{
	int e = errno;
	recorder_exec_abandon(&f->fds);
	if (f->map)
		munmap(f->map, f->map_len);
	f->map = NULL;
	errno = e;
}

static int do_execve(const char *path, char *const argv[], char *const envp[])
{
	int (*real)(const char *, char *const[], char *const[]) = interpose_next(IP_EXECVE);
	const char *why = NULL;
	struct follow f;
	int ok = loadable_path(AT_FDCWD, path, 0, &why);
	char **env = follow_begin(&f, envp, ok, path, why);
	int r = real(path, argv, env ? env : envp);
	follow_end(&f);
	return r;
}

static int do_execvpe(const char *file, char *const argv[], char *const envp[])
{
	int (*real)(const char *, char *const[], char *const[]) = interpose_next(IP_EXECVPE);
	char buf[PATH_MAX];
	const char *why = NULL, *path = path_search(file, buf, sizeof(buf));
	struct follow f;
	int ok = !path || loadable_path(AT_FDCWD, path, 0, &why);
	char **env = follow_begin(&f, envp, ok, file, why);
	int r = real(file, argv, env ? env : envp);
	follow_end(&f);
	return r;
}

NEEDLE_INTERPOSER_SITE int execve(const char *path, char *const argv[], char *const envp[])
{
	return do_execve(path, argv, envp);
}

NEEDLE_INTERPOSER_SITE int execv(const char *path, char *const argv[])
{
	return do_execve(path, argv, environ);
}

NEEDLE_INTERPOSER_SITE int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return do_execvpe(file, argv, envp);
}

NEEDLE_INTERPOSER_SITE int execvp(const char *file, char *const argv[])
{
	return do_execvpe(file, argv, environ);
}

/* execl's arguments: how many there are before the NULL, first
 * included.  The array is built on the stack, as the C library builds
 * it; a list longer than EXECL_ARGS_MAX fails with E2BIG, as the kernel
 * would fail one longer than it takes. */
#define EXECL_ARGS_MAX 65536
static size_t count_args(va_list ap)
{
	va_list cp;
	size_t n = 1;
	va_copy(cp, ap);
	while (n < EXECL_ARGS_MAX && va_arg(cp, char *))
		n++;
	va_end(cp);
	return n;
}

static void fill_args(const char **argv, size_t n, const char *first, va_list *ap)
{
	argv[0] = first;
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(*ap, const char *);
	argv[n] = NULL;
	(void)va_arg(*ap, const char *); /* the NULL: execle's envp follows it */
}

enum execl_kind { EXECL, EXECLP, EXECLE };

/* execl, execlp and execle after their va_start: the arguments gathered
 * into an array, then the exec itself. */
static int execl_common(enum execl_kind kind, const char *file, const char *arg, va_list *ap)
{
	size_t n = count_args(*ap);
	if (n >= EXECL_ARGS_MAX) {
		errno = E2BIG;
		return -1;
	}
	const char *argv[n + 1];
	fill_args(argv, n, arg, ap);
	char *const *envp = kind == EXECLE ? va_arg(*ap, char *const *) : environ;
	return kind == EXECLP ? do_execvpe(file, (char *const *)argv, envp) : do_execve(file, (char *const *)argv, envp);
}

NEEDLE_INTERPOSER_SITE int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = execl_common(EXECL, path, arg, &ap);
	va_end(ap);
	return r;
}

NEEDLE_INTERPOSER_SITE int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = execl_common(EXECLP, file, arg, &ap);
	va_end(ap);
	return r;
}

NEEDLE_INTERPOSER_SITE int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = execl_common(EXECLE, path, arg, &ap);
	va_end(ap);
	return r;
}

NEEDLE_INTERPOSER_SITE int fexecve(int fd, char *const argv[], char *const envp[])
{
	int (*real)(int, char *const[], char *const[]) = interpose_next(IP_FEXECVE);
	const char *why = NULL;
	struct follow f;
	int ok = loadable(fd, 0, &why);
	char **env = follow_begin(&f, envp, ok, "fexecve", why);
	int r = real(fd, argv, env ? env : envp);
	follow_end(&f);
	return r;
}

NEEDLE_INTERPOSER_SITE int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	int (*real)(int, const char *, char *const[], char *const[], int) = interpose_next(IP_EXECVEAT);
	const char *why = NULL;
	struct follow f;
	int ok = loadable_path(dirfd, path, flags, &why);
	char **env = follow_begin(&f, envp, ok, path, why);
	int r = real(dirfd, path, argv, env ? env : envp, flags);
	follow_end(&f);
	return r;
}

/* posix_spawn returns once the child has exec'ed or failed (the C
 * library's spawn is a vfork-like clone), so the descriptors are closed
 * here right after; the child has its copies. */
NEEDLE_INTERPOSER_SITE int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
				       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
		    char *const[], char *const[]) = interpose_next(IP_POSIX_SPAWN);
	const char *why = NULL;
	struct follow f;
	int ok = loadable_path(AT_FDCWD, path, 0, &why);
	char **env = follow_begin(&f, envp, ok, path, why);
	int r = real(pid, path, fa, attr, argv, env ? env : envp);
	follow_end(&f);
	return r;
}

NEEDLE_INTERPOSER_SITE int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
					const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
		    char *const[], char *const[]) = interpose_next(IP_POSIX_SPAWNP);
	char buf[PATH_MAX];
	const char *why = NULL, *path = path_search(file, buf, sizeof(buf));
	struct follow f;
	int ok = !path || loadable_path(AT_FDCWD, path, 0, &why);
	char **env = follow_begin(&f, envp, ok, file, why);
	int r = real(pid, file, fa, attr, argv, env ? env : envp);
	follow_end(&f);
	return r;
}
