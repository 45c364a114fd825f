/* build_id.c - an object's GNU build-id, read with libelf from its note
 * sections: what pprof's mappings and needle info name an object by. */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/util/build_id.h"

void build_id_of(const char *path, char *hex, size_t len)
{
	hex[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	for (Elf_Scn *scn = NULL; e && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + name_off, "GNU", 4))
				continue;
			const unsigned char *id = (const unsigned char *)data->d_buf + desc_off;
			size_t k = 0;
			for (size_t i = 0; i < nh.n_descsz && k + 3 <= len; i++)
				k += (size_t)snprintf(hex + k, len - k, "%02x", id[i]);
			elf_end(e);
			close(fd);
			return;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
}
