/* elf_syms.h - an ELF object's dynamic symbols with their symbol versions
 * and its soname, read with libelf (for the API tests). */
#ifndef NEEDLE_TEST_ELF_SYMS_H
#define NEEDLE_TEST_ELF_SYMS_H

#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ELF_SYMS_MAX_VERSIONS 256

struct elf_sym {
	const char *name;
	int defined;         /* st_shndx != SHN_UNDEF */
	int abs;             /* st_shndx == SHN_ABS (a version definition's symbol) */
	int bind;            /* STB_* */
	const char *version; /* "" when unversioned (*local* or *global*) */
	const char *file;    /* an undefined symbol's version: the object that defines it */
	int hidden;          /* versym bit 15: not the default version */
};

struct elf_syms {
	Elf *elf;
	int fd;
	const char *soname;
	size_t cnt;
	struct elf_sym *v;
	const char *verdefs[ELF_SYMS_MAX_VERSIONS]; /* names of the versions it defines, by index */
};

static inline void elf_syms_free(struct elf_syms *s)
{
	free(s->v);
	if (s->elf)
		elf_end(s->elf);
	if (s->fd >= 0)
		close(s->fd);
}

/* 0, or -1 with a message on stderr. */
static inline int elf_syms_read(const char *path, struct elf_syms *s)
{
	const char *vname[ELF_SYMS_MAX_VERSIONS] = { 0 }, *vfile[ELF_SYMS_MAX_VERSIONS] = { 0 };
	Elf_Scn *scn = NULL, *dynsym = NULL, *versym = NULL;
	size_t dynsym_str = 0;

	memset(s, 0, sizeof(*s));
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0 || elf_version(EV_CURRENT) == EV_NONE ||
	    !(s->elf = elf_begin(s->fd, ELF_C_READ, NULL))) {
		fprintf(stderr, "elf_syms: cannot read %s\n", path);
		elf_syms_free(s);
		return -1;
	}
	while ((scn = elf_nextscn(s->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || !(d = elf_getdata(scn, NULL)))
			continue;
		if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsym_str = sh.sh_link;
		} else if (sh.sh_type == SHT_GNU_versym) {
			versym = scn;
		} else if (sh.sh_type == SHT_GNU_verdef) {
			size_t off = 0;
			for (unsigned i = 0; i < sh.sh_info; i++) {
				GElf_Verdef vd;
				GElf_Verdaux vda;
				if (!gelf_getverdef(d, (int)off, &vd) || !gelf_getverdaux(d, (int)(off + vd.vd_aux), &vda))
					break;
				if (vd.vd_ndx < ELF_SYMS_MAX_VERSIONS) {
					vname[vd.vd_ndx] = elf_strptr(s->elf, sh.sh_link, vda.vda_name);
					s->verdefs[vd.vd_ndx] = vname[vd.vd_ndx];
				}
				if (!vd.vd_next)
					break;
				off += vd.vd_next;
			}
		} else if (sh.sh_type == SHT_GNU_verneed) {
			size_t off = 0;
			for (unsigned i = 0; i < sh.sh_info; i++) {
				GElf_Verneed vn;
				if (!gelf_getverneed(d, (int)off, &vn))
					break;
				const char *file = elf_strptr(s->elf, sh.sh_link, vn.vn_file);
				size_t aoff = off + vn.vn_aux;
				for (unsigned j = 0; j < vn.vn_cnt; j++) {
					GElf_Vernaux va;
					if (!gelf_getvernaux(d, (int)aoff, &va))
						break;
					if (va.vna_other < ELF_SYMS_MAX_VERSIONS) {
						vname[va.vna_other] = elf_strptr(s->elf, sh.sh_link, va.vna_name);
						vfile[va.vna_other] = file;
					}
					if (!va.vna_next)
						break;
					aoff += va.vna_next;
				}
				if (!vn.vn_next)
					break;
				off += vn.vn_next;
			}
		} else if (sh.sh_type == SHT_DYNAMIC) {
			for (size_t i = 0; i < sh.sh_size / (sh.sh_entsize ? sh.sh_entsize : 1); i++) {
				GElf_Dyn dyn;
				if (gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_SONAME)
					s->soname = elf_strptr(s->elf, sh.sh_link, dyn.d_un.d_val);
			}
		}
	}
	if (!dynsym) {
		fprintf(stderr, "elf_syms: %s has no dynamic symbols\n", path);
		elf_syms_free(s);
		return -1;
	}
	GElf_Shdr sh;
	Elf_Data *d = elf_getdata(dynsym, NULL), *vd = versym ? elf_getdata(versym, NULL) : NULL;
	gelf_getshdr(dynsym, &sh);
	size_t n = sh.sh_size / sh.sh_entsize;
	s->v = calloc(n ? n : 1, sizeof(*s->v));
	if (!s->v) {
		elf_syms_free(s);
		return -1;
	}
	for (size_t i = 1; i < n; i++) { /* 0 is the null symbol */
		GElf_Sym sym;
		GElf_Versym ver = 1;
		if (!gelf_getsym(d, (int)i, &sym))
			continue;
		if (vd)
			gelf_getversym(vd, (int)i, &ver);
		struct elf_sym *e = &s->v[s->cnt++];
		unsigned idx = ver & 0x7fff;
		e->name = elf_strptr(s->elf, dynsym_str, sym.st_name);
		e->defined = sym.st_shndx != SHN_UNDEF;
		e->abs = sym.st_shndx == SHN_ABS;
		e->bind = GELF_ST_BIND(sym.st_info);
		e->version = idx > 1 && idx < ELF_SYMS_MAX_VERSIONS && vname[idx] ? vname[idx] : "";
		e->file = idx > 1 && idx < ELF_SYMS_MAX_VERSIONS && vfile[idx] ? vfile[idx] : "";
		e->hidden = !!(ver & 0x8000);
	}
	return 0;
}

static inline const struct elf_sym *elf_syms_find(const struct elf_syms *s, const char *name)
{
	for (size_t i = 0; i < s->cnt; i++)
		if (!strcmp(s->v[i].name, name))
			return &s->v[i];
	return NULL;
}

#endif
