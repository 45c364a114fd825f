/* elf_image.c - reads an object file with libelf: function symbols from
 * .symtab (or .dynsym when stripped, merged with the .symtab of a
 * separate debug file found by build-id or .gnu_debuglink under
 * /usr/lib/debug), the spans of the sections that list patchable entries,
 * and the GOT slots relocated against __fentry__; with libdw, the function
 * ranges of .eh_frame.  In-memory contents (already relocated) are read by
 * the site finder from the loaded image; the file's own bytes are there to
 * tell whether someone changed the code in memory. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/base/log.h"
#include "agent/sites/elf_image.h"
#include "common/with_syms.h"

struct string_arena {
	char *buf;
	size_t len, cap;
};

/* n bytes of s, then a NUL: its offset, or -1 out of memory. */
static long arena_add_len(struct string_arena *a, const char *s, size_t len)
{
	size_t n = len + 1;
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
	memcpy(a->buf + a->len, s, len);
	a->buf[a->len + len] = 0;
	a->len += n;
	return (long)(a->len - n);
}

static long arena_add(struct string_arena *a, const char *s)
{
	return arena_add_len(a, s, strlen(s));
}

static int add_func(struct elf_image *img, size_t *cap, struct elf_func f)
{
	if (img->func_cnt == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		struct elf_func *v = realloc(img->funcs, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		img->funcs = v;
		*cap = ncap;
	}
	img->funcs[img->func_cnt++] = f;
	return 0;
}

/* Underscores a name starts with: glibc's internal aliases (__write,
 * _IO_printf) sit at the same address as the names programs call. */
static int underscores(const char *name)
{
	int n = 0;
	while (name[n] == '_')
		n++;
	return n;
}

static int func_cmp(const void *a, const void *b)
{
	const struct elf_func *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* One name per address: the sized one, then the exported one, then
	 * the one with the fewest leading underscores, then the shortest. */
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	int ux = underscores(x->name), uy = underscores(y->name);
	if (ux != uy)
		return ux - uy;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	return lx < ly ? -1 : lx > ly;
}

/* V8 labels its embedded builtins' blob with untyped local symbols
 * (mksnapshot's embedded.S): the blob's start, and its size in a uint32
 * of read-only data. */
static void note_runtime_symbol(struct elf_image *img, const char *name, uint64_t addr)
{
	if (!name || name[0] != 'v' || strncmp(name, "v8_Default_embedded_blob_code_", 30))
		return;
	if (!name[30])
		img->v8_blob = addr;
	else if (!strcmp(name + 30, "size_"))
		img->v8_blob_size_at = addr;
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
		if (GELF_ST_TYPE(sym.st_info) == STT_NOTYPE && sym.st_shndx != SHN_UNDEF && sym.st_value)
			note_runtime_symbol(img, elf_strptr(elf, sh->sh_link, sym.st_name), sym.st_value + bias);
		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		long off = arena_add(arena, name);
		if (off < 0 || add_func(img, cap,
					(struct elf_func){
						.addr = sym.st_value + bias,
						.size = sym.st_size,
						.name = (const char *)(uintptr_t)off,
						.ifunc = GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC,
						.global = GELF_ST_BIND(sym.st_info) != STB_LOCAL,
					}))
			return -ENOMEM;
	}
	return 0;
}

/* --with-syms: lines "OBJECT<tab>ADDR<tab>SIZE<tab>NAME" (hex; OBJECT a
 * file name, ADDR its file's address), set once before the first
 * discovery (agent.c) and never freed. */
static const char *extra_symbols;

void elf_image_extra_symbols(const char *lines)
{
	extra_symbols = lines;
}

/* The functions extra_symbols names in an object with neither .symtab
 * nor a debug file (stripped), whose file is called object (or real, the
 * name of the file a link of that name points to: a library's soname
 * link), by common/with_syms.h's rule.  A name matched by build id is as
 * good as the object's own (ELF_EXTRA_VERIFIED); one matched by file
 * name alone may be another build's, and only labels (ELF_EXTRA_LABEL).
 * Lines of its name for another build would name the wrong code: left,
 * with a warning. */
static int read_extra_symbols(const char *object, const char *real, uint64_t bias, struct elf_image *img,
			      struct string_arena *arena, size_t *cap)
{
	const char *names[] = { object, real };
	char hex_id[2 * sizeof(img->build_id) + 1] = "";
	int other_build = 0;

	for (size_t i = 0; i < img->build_id_len && i < sizeof(img->build_id); i++)
		snprintf(hex_id + 2 * i, 3, "%02x", img->build_id[i]);
	for (enum with_syms_pass pass = WITH_SYMS_BY_ID; pass <= WITH_SYMS_BY_NAME; pass++) {
		size_t before = img->func_cnt;
		struct with_syms_line l;
		for (const char *p = extra_symbols; with_syms_next(&p, &l);) {
			enum with_syms_match m = with_syms_match(&l, pass, names, real ? 2 : 1, hex_id);
			other_build |= m == WITH_SYMS_OTHER_BUILD;
			if (m != WITH_SYMS_YES)
				continue;
			long off = arena_add_len(arena, l.name, l.name_len);
			if (off < 0 || add_func(img, cap,
						(struct elf_func){ .addr = l.addr + bias,
								   .size = l.size,
								   .name = (const char *)(uintptr_t)off,
								   .global = 1,
								   .extra = pass == WITH_SYMS_BY_ID ? ELF_EXTRA_VERIFIED
												    : ELF_EXTRA_LABEL }))
				return -ENOMEM;
		}
		if (img->func_cnt > before)
			return 0;
	}
	if (other_build)
		pr_warn("--with-syms names another build of %s (their build ids differ): its functions stay unnamed\n",
			object);
	return 0;
}

static int add_slot(uint64_t **slots, size_t *cnt, uint64_t slot)
{
	uint64_t *s = realloc(*slots, (*cnt + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	*slots = s;
	s[(*cnt)++] = slot;
	return 0;
}

static int is_profiling_symbol(const char *name)
{
	return !strcmp(name, "__fentry__") || !strcmp(name, "mcount") || !strcmp(name, "_mcount");
}

/* GOT slots whose relocation names __fentry__, or mcount (JUMP_SLOT for
 * calls through the PLT, GLOB_DAT for "call *__fentry__@GOTPCREL(%rip)"). */
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
		int err = !strcmp(name, "__fentry__")
				  ? add_slot(&img->fentry_slots, &img->fentry_slot_cnt, rela.r_offset + bias)
				  : add_slot(&img->mcount_slots, &img->mcount_slot_cnt, rela.r_offset + bias);
		if (err)
			return err;
	}
	return 0;
}

/* /usr/lib/debug/.build-id/xx/rest.debug, else the .gnu_debuglink name
 * beside the object's directory under /usr/lib/debug. */
static int debug_file_path(Elf *elf, const char *obj_dir, char *out, size_t len)
{
	const void *id;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
	if (n > 1) {
		const unsigned char *b = id;
		int off = snprintf(out, len, "/usr/lib/debug/.build-id/%02x/", b[0]);
		for (ssize_t i = 1; i < n && off > 0 && (size_t)off < len; i++)
			off += snprintf(out + off, len - (size_t)off, "%02x", b[i]);
		if (off > 0 && (size_t)off < len)
			snprintf(out + off, len - (size_t)off, ".debug");
		if (!access(out, R_OK))
			return 0;
	}
	GElf_Word crc;
	const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
	if (link && obj_dir) {
		snprintf(out, len, "/usr/lib/debug%s/%s", obj_dir, link);
		if (!access(out, R_OK))
			return 0;
	}
	return -ENOENT;
}

static char debug_dir[4096];
/* The path and file name of the object elf_image_load reads (read_image's). */
static const char *object_path = "", *object_name = "";

static int read_debug_file(Elf *elf, uint64_t bias, struct elf_image *img, struct string_arena *arena, size_t *cap)
{
	static char path[4200];
	if (debug_file_path(elf, debug_dir[0] ? debug_dir : NULL, path, sizeof(path)))
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	errno = 0;
	Elf *dbg = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	int err = !dbg && errno == ENOMEM ? -ENOMEM : 0; /* as in elf_image_load */
	while (dbg && (scn = elf_nextscn(dbg, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
			err = read_funcs(dbg, scn, &sh, bias, img, arena, cap);
			if (!err)
				img->debug_file = path;
			break;
		}
	}
	if (dbg)
		elf_end(dbg);
	close(fd);
	return err;
}

static int read_image(Elf *elf, uint64_t bias, struct elf_image *img, struct string_arena *arena)
{
	size_t shstrndx, cap = 0;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr symtab_sh, dynsym_sh;
	int err;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	GElf_Ehdr eh;
	if (gelf_getehdr(elf, &eh) && eh.e_entry)
		img->entry = eh.e_entry + bias;
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
		} else if ((!strncmp(name, ".plt", 4) || !strcmp(name, ".iplt")) && (sh.sh_flags & SHF_EXECINSTR) &&
			   img->plt_cnt < 4) {
			img->plt[img->plt_cnt++] = (struct elf_range){ sh.sh_addr + bias, sh.sh_addr + bias + sh.sh_size };
		} else if (!strcmp(name, "__mcount_loc") && (sh.sh_flags & SHF_ALLOC)) {
			img->mcount_loc = (struct elf_section_span){ sh.sh_addr + bias, sh.sh_size };
		} else if (!strcmp(name, "__return_loc") && (sh.sh_flags & SHF_ALLOC)) {
			img->return_loc = (struct elf_section_span){ sh.sh_addr + bias, sh.sh_size };
		} else if (!strcmp(name, "xray_instr_map") && (sh.sh_flags & SHF_ALLOC)) {
			img->xray_map = (struct elf_section_span){ sh.sh_addr + bias, sh.sh_size };
		}
	}
	/* .symtab is a superset of .dynsym when present; a stripped object's
	 * local functions may be named by its separate debug file. */
	if (symtab)
		err = read_funcs(elf, symtab, &symtab_sh, bias, img, arena, &cap);
	else if (dynsym)
		err = read_funcs(elf, dynsym, &dynsym_sh, bias, img, arena, &cap);
	else
		err = 0;
	if (!err && !symtab)
		err = read_debug_file(elf, bias, img, arena, &cap);
	if (!err && !symtab && !img->debug_file && extra_symbols) {
		/* Not on a hot path: discovery, once per object. */
		char *resolved = realpath(object_path, NULL);
		const char *real = resolved ? strrchr(resolved, '/') : NULL;
		err = read_extra_symbols(object_name, real && strcmp(real + 1, object_name) ? real + 1 : NULL, bias, img,
					 arena, &cap);
		free(resolved);
	}
	if (err)
		return err;
	for (size_t i = 0; symtab && i < img->func_cnt; i++)
		if (!strcmp(arena->buf + (uintptr_t)img->funcs[i].name, "__gmon_start__"))
			img->linked_with_pg = 1;
	return 0;
}

/* The program's own file may be gone (deleted, or replaced by a package
 * upgrade: /proc/self/exe then reads "PATH (deleted)"); the kernel still
 * has it open behind /proc/self/exe. */
static int open_image(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = strlen(path);
	static const char deleted[] = " (deleted)";

	if (fd >= 0 || errno != ENOENT || n < sizeof(deleted) || strcmp(path + n - (sizeof(deleted) - 1), deleted))
		return fd;
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0 || (size_t)len != n || memcmp(exe, path, n)) {
		errno = ENOENT;
		return -1;
	}
	return open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
}

int elf_image_load(struct elf_image *img, const char *path, uint64_t bias)
{
	struct string_arena arena = { 0 };
	int fd, err;
	Elf *elf;

	memset(img, 0, sizeof(*img));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open_image(path);
	if (fd < 0)
		return -errno;
	/* libelf says "out of memory" only in elf_errmsg's words; the
	 * malloc that failed left ENOMEM in errno, which tells it from a
	 * file that is not ELF (an object then skipped for good). */
	errno = 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		int nomem = !elf && errno == ENOMEM;
		if (elf)
			elf_end(elf);
		close(fd);
		return nomem ? -ENOMEM : -ENOEXEC;
	}
	const char *slash = strrchr(path, '/');
	snprintf(debug_dir, sizeof(debug_dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	object_path = path;
	object_name = slash ? slash + 1 : path;
	img->bias = bias;
	const void *id;
	ssize_t id_len = dwelf_elf_gnu_build_id(elf, &id);
	if (id_len > 0) {
		img->build_id_len = (uint8_t)(id_len < (ssize_t)sizeof(img->build_id) ? id_len : (ssize_t)sizeof(img->build_id));
		memcpy(img->build_id, id, img->build_id_len);
	}
	img->fd = fd;
	img->elf = elf;
	err = read_image(elf, bias, img, &arena);
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
	if (img->func_cnt > 1)
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
	free(img->mcount_slots);
	free(img->strings);
	free(img->fdes);
	if (img->cfi)
		dwarf_cfi_end(img->cfi);
	if (img->elf)
		elf_end(img->elf);
	if (img->elf || img->fd > 0)
		close(img->fd);
	memset(img, 0, sizeof(*img));
}

/* The FDE pointer encoding a CIE's augmentation declares ('R'), or -1. */
static int cie_fde_encoding(const Dwarf_CIE *cie)
{
	const char *aug = cie->augmentation;
	const uint8_t *d = cie->augmentation_data;

	if (!aug || aug[0] != 'z' || !d)
		return aug && !aug[0] ? 0 /* absptr */ : -1;
	for (const char *c = aug + 1; *c; c++) {
		switch (*c) {
		case 'R':
			return *d;
		case 'L':
			d++;
			break;
		case 'P': {
			/* The personality pointer: its own encoding, then it. */
			int enc = *d++;
			int size = (enc & 0x0f) == 0x0b || (enc & 0x0f) == 0x03 ? 4 : 8;
			d += size;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return -1;
		}
	}
	return 0;
}

/* One encoded pointer at p (whose runtime address is at); 0 if the
 * encoding is not one compilers use for FDEs. */
static int read_encoded(const uint8_t *p, int enc, uint64_t at, uint64_t *out, int pcrel_ok)
{
	int64_t v;
	switch (enc & 0x0f) {
	case 0x0b: { int32_t x; memcpy(&x, p, 4); v = x; break; }
	case 0x03: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
	case 0x0c: case 0x04: case 0x00: memcpy(&v, p, 8); break;
	default: return 0;
	}
	switch (enc & 0x70) {
	case 0x00: *out = (uint64_t)v; return 1;
	case 0x10: if (!pcrel_ok) return 0; *out = at + (uint64_t)v; return 1;
	default: return 0;
	}
}

static int enc_size(int enc)
{
	return (enc & 0x0f) == 0x0b || (enc & 0x0f) == 0x03 ? 4 : 8;
}

int elf_image_load_fdes(struct elf_image *img, uint64_t lo, uint64_t hi)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx, cap = img->fde_cnt;
	const char *ident = img->elf ? elf_getident(img->elf, NULL) : NULL;

	/* Each FDE of .eh_frame (libdw's dwarf_next_cfi walks them) covers
	 * one function: [initial_location, + address_range). */
	if (!ident || elf_getshdrstrndx(img->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(img->elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(img->elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".eh_frame"))
			break;
	}
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !data->d_buf)
		return 0;
	struct { Dwarf_Off off; int enc; } cies[64];
	int cie_cnt = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	while (dwarf_next_cfi((const unsigned char *)ident, data, true, off, &next, &e) == 0) {
		if (dwarf_cfi_cie_p(&e)) {
			if (cie_cnt < 64)
				cies[cie_cnt++] = (typeof(cies[0])){ off, cie_fde_encoding(&e.cie) };
		} else {
			int enc = -1;
			for (int i = 0; i < cie_cnt; i++)
				if (cies[i].off == e.fde.CIE_pointer)
					enc = cies[i].enc;
			uint64_t field = sh.sh_addr + (uint64_t)(e.fde.start - (const uint8_t *)data->d_buf) + img->bias;
			uint64_t start, range;
			if (enc >= 0 && e.fde.start + 2 * enc_size(enc) <= e.fde.end &&
			    read_encoded(e.fde.start, enc, field, &start, 1) &&
			    read_encoded(e.fde.start + enc_size(enc), enc & 0x0f, 0, &range, 0) && range &&
			    (enc & 0x70) == 0x10) {
				/* pcrel: start is a runtime address already */
				if (start >= lo && start < hi) {
					if (img->fde_cnt == cap) {
						size_t ncap = cap ? cap * 2 : 1024;
						struct elf_range *v = realloc(img->fdes, ncap * sizeof(*v));
						if (!v)
							return -ENOMEM;
						img->fdes = v;
						cap = ncap;
					}
					img->fdes[img->fde_cnt++] = (struct elf_range){ start, start + range };
				}
			}
		}
		if (next == (Dwarf_Off)-1 || next <= off)
			break;
		off = next;
	}
	return 0;
}

int elf_image_file_bytes(const struct elf_image *img, uint64_t addr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	uint64_t va = addr - img->bias;

	while (img->elf && (scn = elf_nextscn(img->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    va < sh.sh_addr || va + len > sh.sh_addr + sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || va - sh.sh_addr + len > d->d_size)
			return -ENOENT;
		memcpy(buf, (const char *)d->d_buf + (va - sh.sh_addr), len);
		return 0;
	}
	return -ENOENT;
}

int elf_image_stack_as_at_entry(struct elf_image *img, uint64_t addr)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Op *ops;
	size_t nops;
	int ret = -1;

	if (!img->cfi && img->elf)
		img->cfi = dwarf_getcfi_elf(img->elf);
	if (!img->cfi || dwarf_cfi_addrframe(img->cfi, addr - img->bias, &frame))
		return -1;
	/* libdw gives a register-plus-offset CFA as one DW_OP_bregx; DWARF
	 * numbers rsp 7. */
	if (!dwarf_frame_cfa(frame, &ops, &nops))
		ret = nops == 1 && ops[0].atom == DW_OP_bregx && ops[0].number == 7 && ops[0].number2 == 8;
	free(frame);
	return ret;
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
