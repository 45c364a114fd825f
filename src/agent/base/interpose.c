/* interpose.c - see interpose.h.
 *
 * Late binding (interpose_bind_loaded) rewrites GOT slots of loaded
 * objects: a slot is one aligned 8-byte word that the object's code loads
 * on every call, so a thread calling through it at the same moment gets
 * either the C library's function or the interposer, both correct.  A slot
 * is rewritten only when it holds the C library's function (or, for a
 * lazily bound PLT slot, still points into its own object), never one that
 * another interposer put there; slots under RELRO are made writable for
 * the one store and read-only again. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/base/interpose.h"
#include "agent/base/phdr_walk.h"

void *interposed_real[IP_COUNT];

/* NEEDLE_INTERPOSED, by tag. */
#define INTERPOSE_ENTRY(tag, name, traceable, real) [tag] = { #name, traceable, real },
static const struct {
	const char *name;
	uint8_t traceable, real;
} interposed_info[IP_COUNT] = { NEEDLE_INTERPOSED(INTERPOSE_ENTRY) };
#undef INTERPOSE_ENTRY

/* libneedle loaded after the C library (preloaded by another preloaded
 * library that depends on it, or dlopen'ed): nothing comes after it in
 * the lookup order, so RTLD_NEXT finds nothing.  The first definition in
 * the global scope is then the real one, unless it is libneedle's own
 * (the program's calls bypass the interposer either way). */
static void *first_not_ours(const char *name)
{
	void *fn = dlsym(RTLD_DEFAULT, name);
	Dl_info mine, theirs;

	if (!fn || !dladdr((void *)interpose_resolve, &mine) || !dladdr(fn, &theirs) ||
	    mine.dli_fbase == theirs.dli_fbase)
		return NULL;
	return fn;
}

int interpose_is_interposed(const char *name)
{
	for (int i = 0; i < IP_COUNT; i++)
		if (!interposed_info[i].traceable && !strcmp(name, interposed_info[i].name))
			return 1;
	return 0;
}

void *interpose_resolve(enum interposed which)
{
	void *fn = dlsym(RTLD_NEXT, interposed_info[which].name);
	if (!fn)
		fn = first_not_ours(interposed_info[which].name);
	__atomic_store_n(&interposed_real[which], fn, __ATOMIC_RELEASE);
	return fn;
}

void interpose_init(void)
{
	for (int i = 0; i < IP_COUNT; i++)
		if (interposed_info[i].real && !__atomic_load_n(&interposed_real[i], __ATOMIC_ACQUIRE))
			interpose_resolve((enum interposed)i);
}

struct bind_state {
	void *ours[IP_COUNT];   /* libneedle's definitions */
	void *self_base;        /* libneedle's load address */
	int rewritten;
	int err;
};

/* The entry with a real function named name: the references to bind. */
static int name_index(const char *name)
{
	for (int i = 0; i < IP_COUNT; i++)
		if (interposed_info[i].real && !strcmp(interposed_info[i].name, name))
			return i;
	return -1;
}

/* A d_ptr of the dynamic section: the loader relocated most of them in
 * place; one that still reads as an offset is made an address. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, uintptr_t v)
{
	return v < info->dlpi_addr ? v + info->dlpi_addr : v;
}

static void bind_slot(struct bind_state *st, const struct dl_phdr_info *info, uintptr_t relro_lo,
		      uintptr_t relro_hi, void **slot, int which, uintptr_t obj_lo, uintptr_t obj_hi)
{
	void *cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
	void *real = interpose_next((enum interposed)which);
	int lazy = (uintptr_t)cur >= obj_lo && (uintptr_t)cur < obj_hi;

	(void)info;
	if (cur == st->ours[which] || !real || (cur != real && !lazy))
		return;
	uintptr_t page = (uintptr_t)slot & ~(uintptr_t)(getpagesize() - 1);
	int in_relro = (uintptr_t)slot >= relro_lo && (uintptr_t)slot < relro_hi;
	if (in_relro && mprotect((void *)page, (size_t)getpagesize(), PROT_READ | PROT_WRITE)) {
		st->err = -1;
		return;
	}
	__atomic_store_n(slot, st->ours[which], __ATOMIC_RELAXED);
	if (in_relro)
		mprotect((void *)page, (size_t)getpagesize(), PROT_READ);
	st->rewritten++;
}

static void bind_relocs(struct bind_state *st, const struct dl_phdr_info *info, const ElfW(Rela) *rel,
			size_t bytes, const ElfW(Sym) *symtab, const char *strtab, uintptr_t relro_lo,
			uintptr_t relro_hi, uintptr_t obj_lo, uintptr_t obj_hi)
{
	for (size_t i = 0; rel && i < bytes / sizeof(*rel); i++) {
		unsigned type = ELF64_R_TYPE(rel[i].r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		const ElfW(Sym) *sym = &symtab[ELF64_R_SYM(rel[i].r_info)];
		if (sym->st_shndx != SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) == STT_OBJECT)
			continue;
		int which = name_index(strtab + sym->st_name);
		if (which >= 0)
			bind_slot(st, info, relro_lo, relro_hi, (void **)(info->dlpi_addr + rel[i].r_offset), which,
				  obj_lo, obj_hi);
	}
}

static int bind_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bind_state *st = arg;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t relro_lo = 0, relro_hi = 0, obj_lo = UINTPTR_MAX, obj_hi = 0;

	(void)size;
	/* Not libneedle (its references are its own business), not the
	 * loader, not the vDSO (no name). */
	if ((void *)info->dlpi_addr == st->self_base || !info->dlpi_name ||
	    strstr(info->dlpi_name, "ld-linux") || strstr(info->dlpi_name, "linux-vdso"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)lo;
		else if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = lo;
			relro_hi = lo + ph->p_memsz;
		} else if (ph->p_type == PT_LOAD) {
			if (lo < obj_lo)
				obj_lo = lo;
			if (lo + ph->p_memsz > obj_hi)
				obj_hi = lo + ph->p_memsz;
		}
	}
	if (!dyn)
		return 0;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmprel_sz = 0, rela_sz = 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: jmprel_sz = dyn->d_un.d_val; break;
		case DT_RELA: rela = (const ElfW(Rela) *)dyn_addr(info, dyn->d_un.d_ptr); break;
		case DT_RELASZ: rela_sz = dyn->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	bind_relocs(st, info, jmprel, jmprel_sz, symtab, strtab, relro_lo, relro_hi, obj_lo, obj_hi);
	bind_relocs(st, info, rela, rela_sz, symtab, strtab, relro_lo, relro_hi, obj_lo, obj_hi);
	return 0;
}

int interpose_bind_loaded(void)
{
	struct bind_state st = { 0 };
	Dl_info self;

	if (!dladdr((void *)interpose_bind_loaded, &self) || !self.dli_fname)
		return -ENOENT;
	void *handle = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!handle)
		return -ENOENT;
	st.self_base = self.dli_fbase;
	for (int i = 0; i < IP_COUNT; i++) {
		void *fn = interposed_info[i].real ? dlsym(handle, interposed_info[i].name) : NULL;
		Dl_info where;
		/* Only definitions of libneedle's own. */
		st.ours[i] = fn && dladdr(fn, &where) && where.dli_fbase == self.dli_fbase ? fn : NULL;
	}
	/* The C library's dlclose: libneedle's own would take the control
	 * mutex for what is only a reference count. */
	int (*real_dlclose)(void *) = interpose_next(IP_DLCLOSE);
	if (real_dlclose)
		real_dlclose(handle);
	agent_dl_iterate_phdr(bind_object, &st);
	return st.err ? -EACCES : st.rewritten;
}
