/* libc_protos.c - the parameters of the C library's string and memory
 * functions, for --auto-args and -A PATTERN where debug info cannot give
 * them.
 *
 * On x86-64 the C library picks these functions' implementations at load
 * time (IFUNCs: strlen is __strlen_avx2 or __strlen_evex...), and the
 * implementations are assembly: libc6-dbg's DWARF describes only the
 * resolver, which takes nothing.  So are the system call stubs listed
 * at the end.  Their prototypes are the C standard's
 * and POSIX's, fixed for good, so a table is the reliable source; uftrace
 * keeps one for the same reason.  Used only for a function the loaded
 * debug info did not describe.
 *
 * The system calls whose arguments are flags or a signal (open's oflag,
 * mmap's prot and flags, kill's sig) have them as enums of this file's
 * own (uftrace prints O_RDONLY, PROT_READ, MAP_ANON|MAP_PRIVATE,
 * SIGNULL), which the views show by name, or as the OR of their bits:
 * these entries take the place of what the C library's debug info says
 * (an int).
 *
 * Invariants: each entry's items follow the ABI's integer registers in
 * order (none of these takes a floating-point or struct argument), with
 * the widths of their C types; a flags enum's nonzero enumerators are
 * single bits (the views decompose a value into them). */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "cli/args/libc_protos.h"
#include "common/shm_layout.h"

/* The enums, by the upper-case letter that names them in a table entry:
 * x86-64 Linux's values (the program's ABI is the host's). */
#define E(v) (int64_t)(v)
static int64_t open_values[] = { 0, E(O_WRONLY), E(O_RDWR), E(O_CREAT), E(O_EXCL), E(O_NOCTTY), E(O_TRUNC),
				 E(O_APPEND), E(O_NONBLOCK), E(O_DSYNC), E(O_ASYNC), E(O_DIRECT),
				 /* glibc's O_LARGEFILE is 0 on x86-64; the kernel's bit: */ 0100000,
				 E(O_DIRECTORY), E(O_NOFOLLOW), E(O_NOATIME), E(O_CLOEXEC),
				 /* O_SYNC is O_DSYNC and this bit: */ E(O_SYNC & ~O_DSYNC), E(O_PATH),
				 /* O_TMPFILE is O_DIRECTORY and this bit: */ E(O_TMPFILE & ~O_DIRECTORY) };
static char *open_names[] = { "O_RDONLY", "O_WRONLY", "O_RDWR", "O_CREAT", "O_EXCL", "O_NOCTTY", "O_TRUNC",
			      "O_APPEND", "O_NONBLOCK", "O_DSYNC", "O_ASYNC", "O_DIRECT", "O_LARGEFILE",
			      "O_DIRECTORY", "O_NOFOLLOW", "O_NOATIME", "O_CLOEXEC", "O_SYNC", "O_PATH",
			      "O_TMPFILE" };
static int64_t prot_values[] = { E(PROT_NONE), E(PROT_READ), E(PROT_WRITE), E(PROT_EXEC), E(PROT_GROWSDOWN),
				 E(PROT_GROWSUP) };
static char *prot_names[] = { "PROT_NONE", "PROT_READ", "PROT_WRITE", "PROT_EXEC", "PROT_GROWSDOWN", "PROT_GROWSUP" };
static int64_t map_values[] = { E(MAP_SHARED), E(MAP_PRIVATE), E(MAP_FIXED), E(MAP_ANONYMOUS), E(MAP_32BIT),
				E(MAP_GROWSDOWN), E(MAP_DENYWRITE), E(MAP_EXECUTABLE), E(MAP_LOCKED),
				E(MAP_NORESERVE), E(MAP_POPULATE), E(MAP_NONBLOCK), E(MAP_STACK), E(MAP_HUGETLB),
				0x80000 /* MAP_SYNC */, 0x100000 /* MAP_FIXED_NOREPLACE */ };
static char *map_names[] = { "MAP_SHARED", "MAP_PRIVATE", "MAP_FIXED", "MAP_ANON", "MAP_32BIT", "MAP_GROWSDOWN",
			     "MAP_DENYWRITE", "MAP_EXECUTABLE", "MAP_LOCKED", "MAP_NORESERVE", "MAP_POPULATE",
			     "MAP_NONBLOCK", "MAP_STACK", "MAP_HUGETLB", "MAP_SYNC", "MAP_FIXED_NOREPLACE" };
static int64_t sig_values[] = { 0, SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGKILL,
				SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGSTKFLT, SIGCHLD, SIGCONT,
				SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF,
				SIGWINCH, SIGIO, SIGPWR, SIGSYS };
static char *sig_names[] = { "SIGNULL", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS",
			     "SIGFPE", "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
			     "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG",
			     "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS" };
static int64_t madv_values[] = { MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED,
				 MADV_FREE, MADV_REMOVE, MADV_DONTFORK, MADV_DOFORK, MADV_MERGEABLE,
				 MADV_UNMERGEABLE, MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_DONTDUMP, MADV_DODUMP,
				 MADV_WIPEONFORK, MADV_KEEPONFORK, MADV_HWPOISON };
static char *madv_names[] = { "MADV_NORMAL", "MADV_RANDOM", "MADV_SEQUENTIAL", "MADV_WILLNEED", "MADV_DONTNEED",
			      "MADV_FREE", "MADV_REMOVE", "MADV_DONTFORK", "MADV_DOFORK", "MADV_MERGEABLE",
			      "MADV_UNMERGEABLE", "MADV_HUGEPAGE", "MADV_NOHUGEPAGE", "MADV_DONTDUMP", "MADV_DODUMP",
			      "MADV_WIPEONFORK", "MADV_KEEPONFORK", "MADV_HWPOISON" };
#undef E
#define ENUM(v, n) { sizeof(v) / sizeof(v[0]), v, n }
static struct dw_enum enums[] = {
	ENUM(open_values, open_names), ENUM(prot_values, prot_names), ENUM(map_values, map_names),
	ENUM(sig_values, sig_names), ENUM(madv_values, madv_names),
};
#undef ENUM
static const char enum_letters[] = "OPMGV"; /* enums[i]'s letter */
_Static_assert(sizeof(enum_letters) - 1 == sizeof(enums) / sizeof(enums[0]), "a letter per enum");
_Static_assert(sizeof(open_values) / sizeof(open_values[0]) == sizeof(open_names) / sizeof(open_names[0]) &&
		       sizeof(prot_values) / sizeof(prot_values[0]) == sizeof(prot_names) / sizeof(prot_names[0]) &&
		       sizeof(map_values) / sizeof(map_values[0]) == sizeof(map_names) / sizeof(map_names[0]) &&
		       sizeof(sig_values) / sizeof(sig_values[0]) == sizeof(sig_names) / sizeof(sig_names[0]) &&
		       sizeof(madv_values) / sizeof(madv_values[0]) == sizeof(madv_names) / sizeof(madv_names[0]),
	       "a name per value");

/* One letter per value: s a string (const char *), p another pointer,
 * u size_t, d int, l long (off_t), c a char passed as int (strchr's);
 * upper case, an int of the enum of that letter (enum_letters). */
static const struct libc_proto {
	const char *name;
	const char *params; /* letter:label, comma-separated */
	char ret;           /* a letter, or 0 for none */
} protos[] = {
	{ "strlen", "s:s", 'u' },
	{ "strnlen", "s:s,u:maxlen", 'u' },
	{ "strcmp", "s:s1,s:s2", 'd' },
	{ "strncmp", "s:s1,s:s2,u:n", 'd' },
	{ "strcasecmp", "s:s1,s:s2", 'd' },
	{ "strncasecmp", "s:s1,s:s2,u:n", 'd' },
	{ "strcpy", "p:dest,s:src", 'p' },
	{ "strncpy", "p:dest,s:src,u:n", 'p' },
	{ "stpcpy", "p:dest,s:src", 'p' },
	{ "stpncpy", "p:dest,s:src,u:n", 'p' },
	{ "strcat", "s:dest,s:src", 'p' },
	{ "strncat", "s:dest,s:src,u:n", 'p' },
	{ "strchr", "s:s,c:c", 'p' },
	{ "strrchr", "s:s,c:c", 'p' },
	{ "strchrnul", "s:s,c:c", 'p' },
	{ "strstr", "s:haystack,s:needle", 'p' },
	{ "strcasestr", "s:haystack,s:needle", 'p' },
	{ "strspn", "s:s,s:accept", 'u' },
	{ "strcspn", "s:s,s:reject", 'u' },
	{ "strpbrk", "s:s,s:accept", 'p' },
	{ "memcpy", "p:dest,p:src,u:n", 'p' },
	{ "mempcpy", "p:dest,p:src,u:n", 'p' },
	{ "memmove", "p:dest,p:src,u:n", 'p' },
	{ "memset", "p:s,d:c,u:n", 'p' },
	{ "memcmp", "p:s1,p:s2,u:n", 'd' },
	{ "bcmp", "p:s1,p:s2,u:n", 'd' },
	{ "memchr", "p:s,c:c,u:n", 'p' },
	{ "memrchr", "p:s,c:c,u:n", 'p' },
	{ "rawmemchr", "p:s,c:c", 'p' },
	/* System call stubs the C library writes in assembly
	 * (syscalls.list): no debug info either. */
	{ "kill", "d:pid,G:sig", 'd' },
	{ "raise", "G:sig", 'd' },
	{ "signal", "G:signum,p:handler", 'p' },
	{ "mprotect", "p:addr,u:len,P:prot", 'd' },
	{ "munmap", "p:addr,u:length", 'd' },
	{ "madvise", "p:addr,u:length,V:advice", 'd' },
	/* Their flags as names; the mode after open's flags is variadic,
	 * given only with O_CREAT or O_TMPFILE, and not shown (uftrace's
	 * form). */
	{ "open", "s:file,O:oflag", 'd' },
	{ "open64", "s:file,O:oflag", 'd' },
	{ "openat", "d:fd,s:file,O:oflag", 'd' },
	{ "openat64", "d:fd,s:file,O:oflag", 'd' },
	{ "mmap", "p:addr,u:len,P:prot,M:flags,d:fd,l:offset", 'p' },
	{ "mmap64", "p:addr,u:len,P:prot,M:flags,d:fd,l:offset", 'p' },
	{ "mlock", "p:addr,u:len", 'd' },
	{ "munlock", "p:addr,u:len", 'd' },
};

static void item(struct dw_item *it, uint8_t kind, uint8_t index, char letter, const char *label, size_t label_len)
{
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->index = index;
	const char *e = letter >= 'A' && letter <= 'Z' ? strchr(enum_letters, letter) : NULL;
	it->enum_id = e ? (int32_t)(e - enum_letters) : -1;
	/* The table's letters are formats, but for l and the enums'. */
	it->fmt = e ? 'e' : letter == 'l' ? 'd' : (uint8_t)letter;
	it->bits = letter == 'd' || e ? 32 : letter == 'c' ? 8 : 64;
	if (label_len >= sizeof(it->label))
		label_len = sizeof(it->label) - 1;
	memcpy(it->label, label, label_len);
}

size_t libc_protos_count(void)
{
	return sizeof(protos) / sizeof(protos[0]);
}

void libc_proto_func(size_t i, struct dw_func *f)
{
	const struct libc_proto *p = &protos[i];

	memset(f, 0, sizeof(*f));
	f->sym = (char *)p->name;
	f->file_off = UINT64_MAX;
	/* Named by its object, as an IFUNC's site is (dwarf_params.h). */
	f->ifunc = 1;
	for (const char *s = p->params; *s && f->entry_cnt < DW_ITEMS_MAX;) {
		const char *label = s + 2, *end = strchr(label, ',');
		size_t n = end ? (size_t)(end - label) : strlen(label);
		item(&f->entry[f->entry_cnt], ARG_KIND_INT, (uint8_t)(f->entry_cnt + 1), s[0], label, n);
		f->entry_cnt++;
		s = end ? end + 1 : label + n;
	}
	if (p->ret) {
		item(&f->exit[0], ARG_KIND_RET, 0, p->ret, "", 0);
		f->exit_cnt = 1;
		f->returns = 1;
	}
}

int libc_proto_has_enum(size_t i)
{
	for (const char *s = protos[i].params; *s; s++)
		if ((s == protos[i].params || s[-1] == ',') && *s >= 'A' && *s <= 'Z')
			return 1;
	return 0;
}

void libc_protos_enums(struct dw_info *out)
{
	memset(out, 0, sizeof(*out));
	out->enums = enums;
	out->enum_cnt = sizeof(enums) / sizeof(enums[0]);
}
