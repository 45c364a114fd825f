/* elf_image.h - what the site finder needs from an object file on disk:
 * function symbols, the sections that list patchable entries, and where
 * the object imports __fentry__ from. */
#ifndef NEEDLE_ELF_IMAGE_H
#define NEEDLE_ELF_IMAGE_H

#include <stddef.h>
#include <stdint.h>

struct elf_func {
	uint64_t addr;    /* runtime address (load bias applied) */
	uint64_t size;
	const char *name; /* owned by the elf_image */
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
	uint64_t *fentry_slots;       /* runtime addresses of GOT slots bound to __fentry__ */
	size_t fentry_slot_cnt;
	int linked_with_pg;           /* defines __gmon_start__ or imports mcount/__fentry__ */
	char *strings;                /* arena holding the names */
};

/* Read the object at path, loaded with bias.  0 or negative errno. */
int elf_image_load(struct elf_image *img, const char *path, uint64_t bias);
void elf_image_free(struct elf_image *img);

/* The function whose [addr, addr+size) holds addr (or starts at addr), or NULL. */
const struct elf_func *elf_image_func_at(const struct elf_image *img, uint64_t addr);

#endif
