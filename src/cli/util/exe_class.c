/* exe_class.c - whether an executable is one needle record -p can load
 * libneedle into: a 64-bit ELF for x86-64.
 *
 * Kept apart from attach.c so that it can be tested on files: on a
 * kernel that cannot run 32-bit programs no such process exists to attach
 * to, but the check must still refuse one (tests/unit/test_exe_class.c).
 *
 * Invariant: a file too short to hold an ELF identification is not judged
 * (1): the refusal is for what is known to be another class or machine. */
#include <elf.h>
#include <unistd.h>

#include "cli/util/exe_class.h"

int exe_class_check(int fd)
{
	Elf64_Ehdr eh;
	ssize_t n = pread(fd, &eh, sizeof(eh), 0);

	if (n < (ssize_t)EI_NIDENT)
		return 1;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || n < (ssize_t)sizeof(eh) || eh.e_machine != EM_X86_64)
		return -1;
	return 0;
}
