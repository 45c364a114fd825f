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
 * Invariants: each entry's items follow the ABI's integer registers in
 * order (none of these takes a floating-point or struct argument), with
 * the widths of their C types. */
#include <string.h>

#include "cli/args/libc_protos.h"
#include "common/shm_layout.h"

/* One letter per value: s a string (const char *), p another pointer,
 * u size_t, d int, c a char passed as int (strchr's). */
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
	{ "kill", "d:pid,d:sig", 'd' },
	{ "mprotect", "p:addr,u:len,d:prot", 'd' },
	{ "munmap", "p:addr,u:length", 'd' },
	{ "madvise", "p:addr,u:length,d:advice", 'd' },
	{ "mlock", "p:addr,u:len", 'd' },
	{ "munlock", "p:addr,u:len", 'd' },
};

static void item(struct dw_item *it, uint8_t kind, uint8_t index, char letter, const char *label, size_t label_len)
{
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->index = index;
	it->enum_id = -1;
	it->fmt = (uint8_t)letter; /* the table's letters are formats */
	it->bits = letter == 'd' ? 32 : letter == 'c' ? 8 : 64;
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
