/* usdt.c - an object's USDT probes from its .note.stapsdt notes (libelf).
 *
 * A note (owner "stapsdt", type 3) holds three addresses, then three
 * strings: the probe's address, the link-time address of the
 * .stapsdt.base section, the semaphore's address (0: none), then
 * provider, name and the arguments' spec.  The addresses are virtual
 * addresses of the object as linked; if the object was moved after (a
 * prelinked one), the .stapsdt.base section says by how much.  The kernel
 * takes a uprobe and its semaphore ("reference counter") as offsets in
 * the file, read here from the program headers: the PT_LOAD segment that
 * holds each address. */
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "cli/util/usdt.h"

#define NT_STAPSDT 3

/* The file offset of vaddr, by the PT_LOAD segment that holds it; 0 if
 * none does (the file has no bytes there).  in_memory: up to the
 * segment's size in memory, as the kernel takes a semaphore anywhere in
 * the object's mapping (one in .bss, not .probes). */
static uint64_t file_offset(Elf *e, uint64_t vaddr, int in_memory)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + (in_memory ? ph.p_memsz : ph.p_filesz))
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

int usdt_each(const char *path, int (*cb)(void *arg, const struct usdt_note *n), void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		if (e)
			elf_end(e);
		close(fd);
		return -1;
	}
	/* Where .stapsdt.base is now (0: no such section, nothing moved). */
	uint64_t base_now = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		const char *nm;
		if (gelf_getshdr(scn, &sh) && (nm = elf_strptr(e, shstrndx, sh.sh_name)) && !strcmp(nm, ".stapsdt.base"))
			base_now = sh.sh_addr;
	}
	int count = 0, stop = 0;
	for (Elf_Scn *scn = NULL; !stop && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		const char *nm;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(nm = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(nm, ".note.stapsdt"))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while (!stop && data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const char *owner = (const char *)data->d_buf + name_off;
			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 || memcmp(owner, "stapsdt", 8) || nh.n_descsz < 3 * 8 + 3)
				continue;
			const char *d = (const char *)data->d_buf + desc_off, *end = d + nh.n_descsz;
			uint64_t pc, base, sema;
			memcpy(&pc, d, 8);
			memcpy(&base, d + 8, 8);
			memcpy(&sema, d + 16, 8);
			const char *provider = d + 24;
			const char *name = memchr(provider, 0, (size_t)(end - provider));
			const char *args = name ? memchr(name + 1, 0, (size_t)(end - name - 1)) : NULL;
			if (!name || !args || !memchr(args + 1, 0, (size_t)(end - args - 1)))
				continue; /* malformed: strings not terminated within the note */
			if (base_now && base) {
				pc += base_now - base;
				if (sema)
					sema += base_now - base;
			}
			struct usdt_note n = { .provider = provider, .name = name + 1, .args = args + 1,
					       .pc_off = file_offset(e, pc, 0), .sema_off = sema ? file_offset(e, sema, 1) : 0 };
			if (!n.pc_off || (sema && !n.sema_off))
				continue;
			count++;
			stop = cb(arg, &n);
		}
	}
	elf_end(e);
	close(fd);
	return count;
}
