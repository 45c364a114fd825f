/* site_discover.c - finds the patchable entries of one object.
 *
 * Candidates come from three places: the __patchable_function_entries
 * section (-fpatchable-function-entry, gcc and clang), the __mcount_loc
 * section (-mrecord-mcount), and, in objects built with -pg, the start of
 * every function symbol (past an endbr64).  Each candidate is kept only if
 * its bytes are a form needle knows: a 5-byte NOP, gcc's five 1-byte NOPs
 * (only when the section lists it), or a call to __fentry__ (direct, via
 * the PLT, or through the GOT).  Section contents are read from memory,
 * where the loader has already relocated them. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sites/elf_image.h"
#include "agent/arch/x86_64/insn.h"
#include "agent/base/log.h"
#include "agent/sites/module.h"
#include "needle.h"
#include "agent/sites/site_discover.h"
#include "agent/sites/site_table.h"
#include "agent/arch/x86_64/stub_area.h"

struct candidate {
	uint64_t addr;
	int listed; /* named by a section (1) or guessed from a symbol (0) */
};

struct candidates {
	struct candidate *v;
	size_t cnt, cap;
};

static int cand_add(struct candidates *c, uint64_t addr, int listed)
{
	if (c->cnt == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct candidate *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->cnt++] = (struct candidate){ addr, listed };
	return 0;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return y->listed - x->listed; /* listed first, so it wins the dedup */
}

static int in_exec(const struct module *m, uint64_t addr, size_t len)
{
	for (int i = 0; i < m->exec_cnt; i++)
		if (addr >= m->exec[i].lo && addr + len <= m->exec[i].hi)
			return 1;
	return 0;
}

static int add_section_entries(struct candidates *c, const struct module *m, uint64_t addr, uint64_t size)
{
	for (uint64_t off = 0; off + 8 <= size; off += 8) {
		uint64_t entry;
		memcpy(&entry, (const void *)(addr + off), sizeof(entry));
		/* Entries of functions the linker discarded stay 0 or point
		 * outside the code. */
		if (entry && in_exec(m, entry, 8)) {
			int err = cand_add(c, entry, 1);
			if (err)
				return err;
		}
	}
	return 0;
}

static int is_fentry_slot(const struct elf_image *img, uint64_t slot)
{
	for (size_t i = 0; i < img->fentry_slot_cnt; i++)
		if (img->fentry_slots[i] == slot)
			return 1;
	return 0;
}

/* Is a call to target a call to __fentry__?  Directly, or through a PLT
 * entry (optionally endbr64 / bnd prefixed) whose GOT slot is __fentry__'s. */
static int is_fentry_target(const struct module *m, const struct elf_image *img, uint64_t target)
{
	static void *fentry;
	static int looked_up;

	if (!looked_up) {
		fentry = dlsym(RTLD_DEFAULT, "__fentry__");
		looked_up = 1;
	}
	if (fentry && target == (uint64_t)fentry)
		return 1;
	if (!in_exec(m, target, 16))
		return 0;
	const uint8_t *p = (const uint8_t *)target;
	if (insn_is_endbr64(p))
		p += 4;
	if (*p == 0xf2)
		p++;
	if (p[0] != 0xff || p[1] != 0x25)
		return 0;
	return is_fentry_slot(img, (uint64_t)(p + 6) + insn_read_rel32(p + 2));
}

/* Classify the bytes at *addr; may step past an endbr64.  Returns the form,
 * or 0 if the bytes are not a site; *load_len is the byte count that
 * normalization rewrites. */
static int classify(const struct module *m, const struct elf_image *img, uint64_t *addr,
		    int listed, uint8_t *load_len)
{
	const uint8_t *p = (const uint8_t *)*addr;

	if (!listed && insn_is_endbr64(p)) {
		*addr += 4;
		p += 4;
	}
	if (!in_exec(m, *addr, 6))
		return 0;
	*load_len = 5;
	if (insn_is_nop5(p))
		return NEEDLE_FORM_NOP5;
	if (listed && insn_is_gcc_nops(p))
		return NEEDLE_FORM_GCC_NOPS;
	if (p[0] == INSN_CALL_REL32 &&
	    is_fentry_target(m, img, *addr + 5 + insn_read_rel32(p + 1)))
		return NEEDLE_FORM_FENTRY_CALL;
	/* addr32 call __fentry__ (a relaxed GOTPCRELX call) */
	if (p[0] == 0x67 && p[1] == INSN_CALL_REL32 &&
	    is_fentry_target(m, img, *addr + 6 + insn_read_rel32(p + 2))) {
		*load_len = 6;
		return NEEDLE_FORM_FENTRY_CALL;
	}
	/* call *__fentry__@GOTPCREL(%rip) */
	if (p[0] == 0xff && p[1] == 0x15 && is_fentry_slot(img, *addr + 6 + insn_read_rel32(p + 2))) {
		*load_len = 6;
		return NEEDLE_FORM_FENTRY_CALL;
	}
	return 0;
}

static int gather(const struct module *m, const struct elf_image *img, struct candidates *c)
{
	int err = 0;

	for (size_t i = 0; i < img->patchable_cnt && !err; i++)
		err = add_section_entries(c, m, img->patchable_entries[i].addr, img->patchable_entries[i].size);
	if (!err && img->mcount_loc.size)
		err = add_section_entries(c, m, img->mcount_loc.addr, img->mcount_loc.size);
	if (!err && (img->linked_with_pg || img->fentry_slot_cnt))
		for (size_t i = 0; i < img->func_cnt && !err; i++)
			if (in_exec(m, img->funcs[i].addr, 9))
				err = cand_add(c, img->funcs[i].addr, 0);
	if (err)
		return err;
	if (c->cnt > 1) /* an object without candidates has no array: qsort(NULL) is undefined */
		qsort(c->v, c->cnt, sizeof(*c->v), cand_cmp);
	return 0;
}

static int list_add(struct site ***list, size_t *cnt, struct site *s)
{
	struct site **v = realloc(*list, (*cnt + 1) * sizeof(*v));
	if (!v)
		return 0;
	*list = v;
	v[(*cnt)++] = s;
	return 1;
}

/* A function no symbol names (a stripped object): func_0xOFFSET@object,
 * the offset from the object's load address, so that functions can be
 * told apart and found again with a disassembler.  Lives as long as the
 * site. */
static const char *unnamed(const struct module *m, uint64_t ip)
{
	const char *base = strrchr(m->path, '/');
	char *name = NULL;

	if (asprintf(&name, "func_0x%llx@%s", (unsigned long long)(ip - m->bias), base ? base + 1 : m->path) < 0)
		return "?";
	return name;
}

static int make_site(struct module *m, const struct elf_image *img, uint64_t addr, int form,
		     uint8_t load_len, struct discovery *d)
{
	struct site proto, *s;
	const struct elf_func *f = elf_image_func_at(img, addr);

	memset(&proto, 0, sizeof(proto));
	proto.func.site_addr = addr;
	proto.func.ip = f ? f->addr : addr;
	proto.func.name = f ? f->name : unnamed(m, addr);
	proto.module = m;
	proto.form = (uint8_t)form;
	proto.load_len = load_len;
	if (form == NEEDLE_FORM_NOP5)
		memcpy(proto.off_bytes, (const void *)addr, 5);
	else
		memcpy(proto.off_bytes, insn_nop5, 5);
	if (!(s = site_table_add(&proto)))
		return -ENOSPC;
	struct site **v = realloc(d->sites, (d->site_cnt + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	d->sites = v;
	v[d->site_cnt++] = s;
	if (form == NEEDLE_FORM_FENTRY_CALL && !list_add(&d->fentry, &d->fentry_cnt, s))
		return -ENOMEM;
	if (form == NEEDLE_FORM_GCC_NOPS && !list_add(&d->nops, &d->nops_cnt, s))
		return -ENOMEM;
	return 0;
}

struct found {
	uint64_t addr;
	int form;
	uint8_t load_len;
};

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int site_discover(struct module *m, struct discovery *d)
{
	struct elf_image img;
	struct candidates c = { 0 };
	struct found *found = NULL;
	size_t found_cnt = 0;
	int err;

	memset(d, 0, sizeof(*d));
	if ((err = elf_image_load(&img, m->path, m->bias))) {
		/* Out of memory is worth another try at the next refresh; a
		 * file that cannot be read (deleted, not ELF) is not. */
		if (err == -ENOMEM)
			return err;
		pr_debug("cannot read %s (%d); its functions cannot be traced\n", m->path, err);
		return 0;
	}
	err = gather(m, &img, &c);
	if (!err && c.cnt && !(found = malloc(c.cnt * sizeof(*found))))
		err = -ENOMEM;
	for (size_t i = 0; i < c.cnt && !err; i++) {
		uint64_t addr = c.v[i].addr;
		uint8_t load_len;
		int form = classify(m, &img, &addr, c.v[i].listed, &load_len);
		if (form)
			found[found_cnt++] = (struct found){ addr, form, load_len };
		else if (c.v[i].listed)
			pr_debug("%s: entry at 0x%llx holds no known site form\n", m->path,
				 (unsigned long long)addr);
	}
	free(c.v);
	/* A function can be both listed and found by its symbol (past endbr64). */
	if (found_cnt)
		qsort(found, found_cnt, sizeof(*found), found_cmp);
	m->first_site = site_table_count();
	for (size_t i = 0; i < found_cnt && !err; i++)
		if (!i || found[i].addr != found[i - 1].addr)
			err = make_site(m, &img, found[i].addr, found[i].form, found[i].load_len, d);
	free(found);
	m->site_cnt = (uint32_t)d->site_cnt;
	if (!err && d->site_cnt) {
		m->strings = img.strings; /* the sites' names live on */
		img.strings = NULL;
		uint64_t *io = malloc(d->site_cnt * 2 * sizeof(*io));
		if (!io) {
			err = -ENOMEM;
		} else {
			for (size_t i = 0; i < d->site_cnt; i++)
				io[i] = (uint64_t)(uintptr_t)d->sites[i];
			err = stub_area_create(io, d->site_cnt, m->exec[0].lo, m->exec[m->exec_cnt - 1].hi,
					       io + d->site_cnt, &m->stubs);
			for (size_t i = 0; !err && i < d->site_cnt; i++)
				d->sites[i]->stub = io[d->site_cnt + i];
			free(io);
		}
		if (err)
			pr_warn("%s: no memory for trampoline stubs within 2 GiB of its code (%d)\n",
				m->path, err);
	}
	elf_image_free(&img);
	return err;
}

void discovery_free(struct discovery *d)
{
	free(d->sites);
	free(d->fentry);
	free(d->nops);
	memset(d, 0, sizeof(*d));
}
