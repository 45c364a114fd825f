/* test_exe_class - the ELF check behind needle record -p's refusal of a
 * program that is not x86-64 (src/cli/util/exe_class.c), on files: headers
 * written here (x86-64, i386, a 64-bit aarch64 one, truncated ones), this
 * program itself, and each file named on the command line with what the
 * check must say of it (PATH=x86_64 or PATH=refused).  test_attach_errors.sh
 * passes the 32-bit ticker this way where the kernel cannot run it, so
 * that no process of it can exist to attach to. */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "cli/util/exe_class.h"

static int check_bytes(const void *bytes, size_t n)
{
	char path[] = "/tmp/needle-exe-class-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 99;
	unlink(path);
	if (write(fd, bytes, n) != (ssize_t)n) {
		close(fd);
		return 99;
	}
	int r = exe_class_check(fd);
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	Elf64_Ehdr e64;
	Elf32_Ehdr e32;

	memset(&e64, 0, sizeof(e64));
	memcpy(e64.e_ident, ELFMAG, SELFMAG);
	e64.e_ident[EI_CLASS] = ELFCLASS64;
	e64.e_ident[EI_DATA] = ELFDATA2LSB;
	e64.e_ident[EI_VERSION] = EV_CURRENT;
	e64.e_type = ET_DYN;
	e64.e_machine = EM_X86_64;
	CHECK_EQ(check_bytes(&e64, sizeof(e64)), 0, "a 64-bit x86-64 header: accepted");
	e64.e_machine = EM_AARCH64;
	CHECK_EQ(check_bytes(&e64, sizeof(e64)), -1, "a 64-bit aarch64 header: refused");
	e64.e_machine = EM_X86_64;
	CHECK_EQ(check_bytes(&e64, EI_NIDENT + 4), -1, "a 64-bit header cut before e_machine: refused");
	CHECK_EQ(check_bytes(&e64, EI_NIDENT - 1), 1, "less than an identification: not judged");

	memset(&e32, 0, sizeof(e32));
	memcpy(e32.e_ident, ELFMAG, SELFMAG);
	e32.e_ident[EI_CLASS] = ELFCLASS32;
	e32.e_ident[EI_DATA] = ELFDATA2LSB;
	e32.e_ident[EI_VERSION] = EV_CURRENT;
	e32.e_type = ET_DYN;
	e32.e_machine = EM_386;
	CHECK_EQ(check_bytes(&e32, sizeof(e32)), -1, "a 32-bit i386 header: refused");
	e32.e_machine = EM_X86_64; /* x32's class and machine */
	CHECK_EQ(check_bytes(&e32, sizeof(e32)), -1, "a 32-bit header for x86-64 (x32): refused");

	int fd = open("/proc/self/exe", O_RDONLY);
	CHECK_EQ(fd >= 0 ? exe_class_check(fd) : 99, 0, "this program (/proc/self/exe): accepted");
	if (fd >= 0)
		close(fd);

	for (int i = 1; i < argc; i++) {
		char *eq = strrchr(argv[i], '=');
		if (!eq) {
			CHECK(0, "argument %s: PATH=x86_64 or PATH=refused", argv[i]);
			continue;
		}
		*eq = 0;
		int want = strcmp(eq + 1, "refused") ? 0 : -1;
		fd = open(argv[i], O_RDONLY);
		CHECK(fd >= 0, "%s: readable", argv[i]);
		if (fd < 0)
			continue;
		CHECK_EQ(exe_class_check(fd), want, "%s: %s", argv[i], want ? "refused" : "accepted");
		close(fd);
	}
	return harness_exit();
}
