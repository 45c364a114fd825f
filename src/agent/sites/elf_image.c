/* elf_image.c - reads an object file with libelf: function symbols from
 * .symtab (or .dynsym when stripped), the spans of the sections that list
 * patchable entries, and the GOT slots relocated against __fentry__.
 * Only section headers are read; in-memory contents (already relocated)
 * are read by the site finder from the loaded image. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/sites/elf_image.h"

struct string_arena {
	char *buf;
	size_t len, cap;
};

static long arena_add(struct string_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	if (a->len + n > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 4096;
		while (cap < a->len + n)
			cap *= 2;
		char *buf = realloc(a->buf, cap);
		if (!buf)
			return -1;
		a->buf = buf;
		a->cap = cap;
	}
	memcpy(a->buf + a->len, s, n);
	a->len += n;
	return (long)(a->len - n);
}

static int func_cmp(const void *a, const void *b)
{
	const struct elf_func *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Prefer the sized, global-looking symbol: larger size first. */
	return x->size > y->size ? -1 : x->size < y->size;
}

/* Collect STT_FUNC symbols of one symbol table.  Names are stored as arena
 * offsets in .name until the arena stops moving. */
static int read_funcs(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, uint64_t bias,
		      struct elf_image *img, struct string_arena *arena, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (img->func_cnt == *cap) {
			size_t ncap = *cap ? *cap * 2 : 1024;
			struct elf_func *f = realloc(img->funcs, ncap * sizeof(*f));
			if (!f)
				return -ENOMEM;
			img->funcs = f;
			*cap = ncap;
		}
		long off = arena_add(arena, name);
		if (off < 0)
			return -ENOMEM;
		img->funcs[img->func_cnt++] = (struct elf_func){
			.addr = sym.st_value + bias,
			.size = sym.st_size,
			.name = (const char *)(uintptr_t)off,
		};
	}
	return 0;
}

static int add_fentry_slot(struct elf_image *img, uint64_t slot)
{
	uint64_t *s = realloc(img->fentry_slots, (img->fentry_slot_cnt + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	img->fentry_slots = s;
	s[img->fentry_slot_cnt++] = slot;
	return 0;
}

static int is_profiling_symbol(const char *name)
{
	return !strcmp(name, "__fentry__") || !strcmp(name, "mcount") || !strcmp(name, "_mcount");
}

/* GOT slots whose relocation names __fentry__ (JUMP_SLOT for calls through
 * the PLT, GLOB_DAT for "call *__fentry__@GOTPCREL(%rip)"). */
static int read_relocs(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, uint64_t bias, struct elf_image *img)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr symsh;
	Elf_Data *symdata;

	if (!data || !symscn || !gelf_getshdr(symscn, &symsh) || !(symdata = elf_getdata(symscn, NULL)))
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Rela rela;
		GElf_Sym sym;
		if (!gelf_getrela(data, (int)i, &rela))
			continue;
		size_t symi = GELF_R_SYM(rela.r_info);
		if (!symi || !gelf_getsym(symdata, (int)symi, &sym))
			continue;
		const char *name = elf_strptr(elf, symsh.sh_link, sym.st_name);
		if (!name || !is_profiling_symbol(name))
			continue;
		img->linked_with_pg = 1;
		if (!strcmp(name, "__fentry__")) {
			int err = add_fentry_slot(img, rela.r_offset + bias);
			if (err)
				return err;
		}
	}
	return 0;
}

static int read_image(Elf *elf, uint64_t bias, struct elf_image *img, struct string_arena *arena)
{
	size_t shstrndx, cap = 0;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr symtab_sh, dynsym_sh;
	int err;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			symtab_sh = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsym_sh = sh;
		} else if (sh.sh_type == SHT_RELA && (sh.sh_flags & SHF_ALLOC)) {
			if ((err = read_relocs(elf, scn, &sh, bias, img)))
				return err;
		} else if (!strcmp(name, "__patchable_function_entries") && (sh.sh_flags & SHF_ALLOC)) {
			struct elf_section_span *p = realloc(img->patchable_entries,
							     (img->patchable_cnt + 1) * sizeof(*p));
			if (!p)
				return -ENOMEM;
			img->patchable_entries = p;
			p[img->patchable_cnt++] = (struct elf_section_span){ sh.sh_addr + bias, sh.sh_size };
		} else if (!strcmp(name, "__mcount_loc") && (sh.sh_flags & SHF_ALLOC)) {
			img->mcount_loc = (struct elf_section_span){ sh.sh_addr + bias, sh.sh_size };
		}
	}
	/* .symtab is a superset of .dynsym when present. */
	if (symtab)
		err = read_funcs(elf, symtab, &symtab_sh, bias, img, arena, &cap);
	else if (dynsym)
		err = read_funcs(elf, dynsym, &dynsym_sh, bias, img, arena, &cap);
	else
		err = 0;
	if (err)
		return err;
	for (size_t i = 0; symtab && i < img->func_cnt; i++)
		if (!strcmp(arena->buf + (uintptr_t)img->funcs[i].name, "__gmon_start__"))
			img->linked_with_pg = 1;
	return 0;
}

int elf_image_load(struct elf_image *img, const char *path, uint64_t bias)
{
	struct string_arena arena = { 0 };
	int fd, err;
	Elf *elf;

	memset(img, 0, sizeof(*img));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	err = read_image(elf, bias, img, &arena);
	elf_end(elf);
	close(fd);
	if (err) {
		free(arena.buf);
		elf_image_free(img);
		return err;
	}
	/* The arena no longer moves: turn offsets into pointers, then sort
	 * and keep one symbol per address (aliases share a body). */
	img->strings = arena.buf;
	for (size_t i = 0; i < img->func_cnt; i++)
		img->funcs[i].name = img->strings + (uintptr_t)img->funcs[i].name;
	qsort(img->funcs, img->func_cnt, sizeof(*img->funcs), func_cmp);
	size_t out = 0;
	for (size_t i = 0; i < img->func_cnt; i++)
		if (!out || img->funcs[out - 1].addr != img->funcs[i].addr)
			img->funcs[out++] = img->funcs[i];
	img->func_cnt = out;
	return 0;
}

void elf_image_free(struct elf_image *img)
{
	free(img->funcs);
	free(img->patchable_entries);
	free(img->fentry_slots);
	free(img->strings);
	memset(img, 0, sizeof(*img));
}

const struct elf_func *elf_image_func_at(const struct elf_image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->func_cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (img->funcs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct elf_func *f = &img->funcs[lo - 1];
	if (addr == f->addr || addr < f->addr + f->size)
		return f;
	return NULL;
}
