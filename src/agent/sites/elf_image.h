/* elf_image.h - what the site finder needs from an object file on disk:
 * function symbols (from the object, or its separate debug file), the
 * function ranges of its call-frame information, the sections that list
 * patchable entries, where the object imports __fentry__ from, and the
 * bytes of its code as the file has them. */
#ifndef NEEDLE_ELF_IMAGE_H
#define NEEDLE_ELF_IMAGE_H

#include <stddef.h>
#include <stdint.h>

struct elf_func {
	uint64_t addr;    /* runtime address (load bias applied) */
	uint64_t size;
	const char *name; /* owned by the elf_image */
	int ifunc;        /* an IFUNC symbol: addr is its resolver */
	int global;       /* STB_GLOBAL or STB_WEAK: the name callers use */
	/* From --with-syms, not the object: ELF_EXTRA_VERIFIED, for the
	 * object's own build (their build ids agree), a name as good as
	 * its own; ELF_EXTRA_LABEL, matched by file name alone, a label:
	 * never by itself a function's start to relocate, nor a reason to
	 * take one (site_discover.c), since another build's addresses are
	 * other code. */
	int extra;
};
enum { ELF_EXTRA_VERIFIED = 1, ELF_EXTRA_LABEL = 2 };

/* A function's extent from an FDE of .eh_frame (runtime addresses). */
struct elf_range {
	uint64_t lo, hi;
};

struct elf_section_span {
	uint64_t addr;    /* runtime address */
	uint64_t size;
};

struct elf_image {
	struct elf_func *funcs;       /* sorted by addr, one per address */
	size_t func_cnt;
	struct elf_section_span *patchable_entries; /* __patchable_function_entries */
	size_t patchable_cnt;
	struct elf_section_span mcount_loc;          /* __mcount_loc, size 0 if absent */
	struct elf_section_span return_loc;          /* __return_loc (gcc -mrecord-return), size 0 if absent */
	struct elf_section_span xray_map;            /* xray_instr_map (LLVM XRay's sleds), size 0 if absent */
	uint64_t *fentry_slots;       /* runtime addresses of GOT slots bound to __fentry__ */
	size_t fentry_slot_cnt;
	uint64_t *mcount_slots;       /* ... and to mcount (gcc -pg without -mfentry) */
	size_t mcount_slot_cnt;
	int linked_with_pg;           /* defines __gmon_start__ or imports mcount/__fentry__ */
	char *strings;                /* arena holding the names */
	struct elf_range *fdes;       /* sorted by lo; read by elf_image_load_fdes */
	struct elf_range plt[4];      /* .plt, .plt.sec, .plt.got, .iplt: entered by jumps */
	int plt_cnt;
	size_t fde_cnt;
	const char *debug_file;       /* separate debug file whose symbols were read, or NULL */
	uint64_t bias;
	uint64_t entry;               /* the entry point (e_entry, runtime), or 0 */
	uint8_t build_id[32];         /* .note.gnu.build-id's bytes (the first 32), build_id_len of them */
	uint8_t build_id_len;
	/* V8's embedded builtins (v8_Default_embedded_blob_code_ and the
	 * address of the uint32 holding its size), 0 when absent: code that
	 * V8 copies at run time and walks with its own stack walker. */
	uint64_t v8_blob, v8_blob_size_at;
	int fd;                       /* the object, open until elf_image_free */
	void *elf;                    /* its Elf handle */
	void *cfi;                    /* its .eh_frame for libdw, read on first use */
};

/* --with-syms: names for the functions of objects stripped of .symtab
 * with no debug file, as lines "OBJECT<tab>BUILDID<tab>ADDR<tab>SIZE<tab>NAME"
 * (OBJECT the file's name without its directory, BUILDID its build id
 * in hex or "-" when not known, ADDR its address in the file and SIZE in
 * hex); lines must outlive every later load.  Set before the first
 * discovery.  An object takes the lines of its own build id, else those
 * of its file name without one; lines of its name for another build are
 * never its (a warning says so). */
void elf_image_extra_symbols(const char *lines);

/* Read the object at path, loaded with bias.  0 or negative errno. */
int elf_image_load(struct elf_image *img, const char *path, uint64_t bias);
void elf_image_free(struct elf_image *img);

/* The function whose [addr, addr+size) holds addr (or starts at addr), or NULL. */
const struct elf_func *elf_image_func_at(const struct elf_image *img, uint64_t addr);

/* Read the function ranges of .eh_frame (libdw) within [lo, hi).  0 or
 * negative errno; an object without call-frame information has none. */
int elf_image_load_fdes(struct elf_image *img, uint64_t lo, uint64_t hi);

/* Copy len bytes of the file's contents at runtime address addr into buf.
 * 0, or -ENOENT if no section of the file holds them. */
int elf_image_file_bytes(const struct elf_image *img, uint64_t addr, void *buf, size_t len);

/* Is the stack at addr as it was at the entry of its function (the
 * call-frame information says CFA = rsp + 8)?  1, 0, or -1 when the
 * object's call-frame information does not cover addr. */
int elf_image_stack_as_at_entry(struct elf_image *img, uint64_t addr);

#endif
