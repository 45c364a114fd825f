/* site_discover.c - finds the patchable entries of one object.
 *
 * Compiled sites.  Candidates come from four places: the __patchable_function_entries
 * section (-fpatchable-function-entry, gcc and clang), the __mcount_loc
 * section (-mrecord-mcount), LLVM XRay's xray_instr_map (its entry sleds,
 * clang -fxray-instrument), and, in objects built with -pg, the start of
 * every function symbol (past an endbr64).  Each candidate is kept only if
 * its bytes are a form needle knows: a 5-byte NOP, gcc's five 1-byte NOPs
 * (only when the section lists it), or a call to __fentry__ (direct, via
 * the PLT, or through the GOT).  Section contents are read from memory,
 * where the loader has already relocated them.
 *
 * Relocated sites (when asked for: site_discover_kinds).  Every other
 * function of the object (symbols, those of its separate debug file, and
 * the FDEs of .eh_frame for what no symbol names) becomes a site if its
 * first instructions can be moved to a detour (relocate.c, through arch.h):
 * the object's code is decoded once for the targets of its direct
 * branches, and each function's entry is checked against them.  Each
 * refusal is counted by reason in the module.  Never relocated: the
 * loader and the unwinder's library (libgcc_s: it walks its own frames),
 * functions entered without a call (the entry point, signal trampolines:
 * their stack holds no return address), and IFUNC resolvers' callers'
 * view: an IFUNC symbol names the implementation it selects. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/base/interpose.h"
#include "agent/sites/elf_image.h"
#include "agent/sites/exit_sites.h"
#include "agent/arch/arch.h"
#include "agent/base/log.h"
#include "agent/sites/module.h"
#include "needle.h"
#include "agent/sites/site_discover.h"
#include "agent/sites/site_names.h"
#include "agent/sites/site_table.h"

static int kinds = SITE_KINDS_COMPILED;

void site_discover_kinds(int k)
{
	kinds = k;
}

int site_discover_get_kinds(void)
{
	return kinds;
}

/* Compiled entries are JMPs to the calling trampoline (site_table.h's
 * jmp_entry), unless NEEDLE_CALLING=0 (the benchmarks' ablation: every
 * entry a CALL, every exit wanted a hijacked return).  Read once, under
 * the control lock, before the first object's stubs are made: a site's
 * form of entry never changes. */
static int calling_entries(void)
{
	static int calling = -1;

	if (calling < 0) {
		const char *env = getenv("NEEDLE_CALLING");
		calling = !(env && !strcmp(env, "0"));
	}
	return calling;
}

struct found {
	uint64_t addr;
	int form;
	uint8_t load_len;
	uint64_t func;          /* relocated: the function's start */
	uint64_t func_size;     /* relocated: its extent */
	const char *name;       /* relocated: its name, or NULL (from the symbols) */
	struct reloc_plan plan; /* relocated */
	int mcount;             /* relocated: it calls gcc -pg's mcount at its start */
};

struct candidate {
	uint64_t addr;
	int listed; /* named by a section (1), an XRay entry sled (2), or guessed from a symbol (0) */
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

static int add_section_entries(struct candidates *c, const struct module *m, uint64_t addr, uint64_t size)
{
	for (uint64_t off = 0; off + 8 <= size; off += 8) {
		uint64_t entry;
		memcpy(&entry, (const void *)(addr + off), sizeof(entry));
		/* Entries of functions the linker discarded stay 0 or point
		 * outside the code. */
		if (entry && module_in_exec(m, entry, 8)) {
			int err = cand_add(c, entry, 1);
			if (err)
				return err;
		}
	}
	return 0;
}

/* xray_instr_map: 32-byte records {address, function, kind, always,
 * version, padding}; from version 2 on, the two addresses are relative to
 * the record's own fields (no relocation), before it, absolute (relocated
 * by the loader, so read from memory).  Kinds 0 (entry) and 3 (entry that
 * logs arguments) are entry sleds; exits and tail calls are left to the
 * return hook. */
static int add_xray_entries(struct candidates *c, const struct module *m, uint64_t addr, uint64_t size)
{
	for (uint64_t off = 0; off + 32 <= size; off += 32) {
		const uint8_t *r = (const uint8_t *)(uintptr_t)(addr + off);
		int64_t where;
		memcpy(&where, r, 8);
		uint64_t sled = r[18] >= 2 ? addr + off + (uint64_t)where : (uint64_t)where;
		if ((r[16] == 0 || r[16] == 3) && module_in_exec(m, sled, INSN_XRAY_SLED_LEN)) {
			int err = cand_add(c, sled, 2);
			if (err)
				return err;
		}
	}
	return 0;
}

static int is_slot_of(const uint64_t *slots, size_t cnt, uint64_t slot)
{
	for (size_t i = 0; i < cnt; i++)
		if (slots[i] == slot)
			return 1;
	return 0;
}

static int is_fentry_slot(const struct elf_image *img, uint64_t slot)
{
	return is_slot_of(img->fentry_slots, img->fentry_slot_cnt, slot);
}

/* The GOT slot a PLT entry at target jumps through ("[endbr64] [bnd] jmp
 * *slot(%rip)"), or 0. */
static uint64_t plt_slot(const struct module *m, uint64_t target)
{
	if (!module_in_exec(m, target, 16))
		return 0;
	const uint8_t *p = (const uint8_t *)target;
	if (insn_is_endbr64(p))
		p += 4;
	if (*p == 0xf2)
		p++;
	if (p[0] != 0xff || p[1] != 0x25)
		return 0;
	return (uint64_t)(p + 6) + insn_read_rel32(p + 2);
}

/* gcc -pg without -mfentry calls mcount at the end of the prologue
 * ("[endbr64] push %rbp; mov %rsp,%rbp", the callee-saved registers'
 * pushes, the frame's allocation, a large frame's stack-clash probes),
 * through the GOT ("call *mcount@GOTPCREL(%rip)", in a PIE and a shared
 * object), through the PLT, or relaxed by the linker ("addr32 call").
 * Does the function at [lo, hi) make that call in its first 128 bytes?
 * Every byte offset is looked at, not only instruction starts: a match
 * needs a call's opcode whose 32-bit displacement lands exactly on
 * mcount's GOT slot or PLT entry, which no other bytes do by chance. */
static int calls_mcount_at_entry(const struct module *m, const struct elf_image *img, uint64_t lo, uint64_t hi)
{
	size_t n = hi - lo < 128 ? (size_t)(hi - lo) : 128;
	if (n < 10 || !module_in_exec(m, lo, n))
		return 0;
	const uint8_t *p = (const uint8_t *)lo;
	for (size_t i = 0; i + 6 <= n; i++) {
		uint64_t at = lo + i;
		if (p[i] == 0xff && p[i + 1] == 0x15 &&
		    is_slot_of(img->mcount_slots, img->mcount_slot_cnt, at + 6 + insn_read_rel32(p + i + 2)))
			return 1;
		if (p[i] == 0x67 && p[i + 1] == 0xe8 &&
		    is_slot_of(img->mcount_slots, img->mcount_slot_cnt, plt_slot(m, at + 6 + insn_read_rel32(p + i + 2))))
			return 1;
		if (p[i] == 0xe8 &&
		    is_slot_of(img->mcount_slots, img->mcount_slot_cnt, plt_slot(m, at + 5 + insn_read_rel32(p + i + 1))))
			return 1;
	}
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
	uint64_t slot = plt_slot(m, target);
	return slot && is_fentry_slot(img, slot);
}

/* -fpatchable-function-entry=M,N with N > 0 lists the first of N NOPs
 * placed before the function's symbol: the function is entered at the
 * symbol, so a site (a call across the symbol) must start there.  The
 * start of the next function symbol, when only 1-byte NOPs lie before it
 * (at most 15), else addr. */
static uint64_t past_prefix_nops(const struct module *m, const struct elf_image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->func_cnt;

	while (lo < hi) { /* the first function starting after addr */
		size_t mid = lo + (hi - lo) / 2;
		if (img->funcs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == img->func_cnt || img->funcs[lo].addr - addr > 15 || !module_in_exec(m, addr, 16))
		return addr;
	for (const uint8_t *p = (const uint8_t *)addr; p < (const uint8_t *)img->funcs[lo].addr; p++)
		if (*p != INSN_NOP1)
			return addr;
	return img->funcs[lo].addr;
}

/* Classify the bytes at *addr; may step past an endbr64, or past the
 * NOPs -fpatchable-function-entry puts before a symbol.  Returns the form,
 * or 0 if the bytes are not a site; *load_len is the byte count that
 * normalization rewrites. */
static int classify(const struct module *m, const struct elf_image *img, uint64_t *addr,
		    int listed, uint8_t *load_len)
{
	const uint8_t *p = (const uint8_t *)*addr;

	if (listed == 2)
		return module_in_exec(m, *addr, INSN_XRAY_SLED_LEN) && insn_is_xray_sled(p) ? (*load_len = 5, NEEDLE_FORM_XRAY) : 0;
	if (listed) {
		uint64_t at = past_prefix_nops(m, img, *addr);
		/* Moved to the symbol: its endbr64 (CET) comes before the rest. */
		if (at != *addr && module_in_exec(m, at, 4) && insn_is_endbr64((const uint8_t *)at))
			at += 4;
		*addr = at;
		p = (const uint8_t *)*addr;
	}
	if (!listed && insn_is_endbr64(p)) {
		*addr += 4;
		p += 4;
	}
	if (!module_in_exec(m, *addr, 6))
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
	if (!err && img->xray_map.size)
		err = add_xray_entries(c, m, img->xray_map.addr, img->xray_map.size);
	if (!err && (img->linked_with_pg || img->fentry_slot_cnt))
		for (size_t i = 0; i < img->func_cnt && !err; i++)
			if (img->funcs[i].extra != ELF_EXTRA_LABEL && module_in_exec(m, img->funcs[i].addr, 9))
				err = cand_add(c, img->funcs[i].addr, 0);
	if (err)
		return err;
	if (c->cnt > 1) /* an object without candidates has no array: qsort(NULL) is undefined */
		qsort(c->v, c->cnt, sizeof(*c->v), cand_cmp);
	return 0;
}

int discovery_list_add(struct site ***list, size_t *cnt, struct site *s)
{
	struct site **v = realloc(*list, (*cnt + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	*list = v;
	v[(*cnt)++] = s;
	return 0;
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

/* Functions that return twice: the return address they save (setjmp's
 * jmp_buf, getcontext's ucontext) is used again after their first
 * return, so a hooked return would be taken a second time without its
 * shadow frame.  Names as the C library exports them, and its internal
 * aliases.  They are entry-only sites (site->entry_only). */
static const char *const twice_names[] = { "setjmp",	    "_setjmp",	    "__setjmp", "sigsetjmp", "__sigsetjmp",
					   "getcontext", "__getcontext", "savectx",  NULL };

/* vfork returns twice too, and its child shares the parent's stack and
 * thread: libneedle interposes it to run the child untraced, and the C
 * library's is never a site, not even entry-only.  libneedle's
 * interposer is one, entry-only (agent.c). */
static const char *const vfork_names[] = { "vfork", "__vfork", "__libc_vfork", NULL };

/* Functions that find their caller by their return address: the loader's
 * dlopen and dlsym look up the calling object (its RUNPATH and $ORIGIN,
 * RTLD_NEXT, its namespace), which a hooked return would make
 * libneedle's trampoline.  They are sites whose return is never hooked
 * (site->entry_only): the program's call is a line, without its exit. */
static const char *const caller_names[] = { "dlopen", "dlmopen", "dlsym", "dlvsym", "__libc_dlopen_mode",
					    "__libc_dlsym", "__libc_dlvsym", NULL };

/* libneedle's interposers of functions that switch the stack and never
 * return where they were called (longjmp and its kin, setcontext) or
 * return in another context first (swapcontext): an entry site that
 * hooked the return would push a frame the switch then has to account
 * for; an entry-only one pushes none (base/interpose.h,
 * NEEDLE_INTERPOSER_SITE). */
static const char *const switch_names[] = { "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk",
					    "swapcontext", "setcontext", NULL };

static int named(const char *name, const char *const *names)
{
	if (!name)
		return 0;
	if (!strncmp(name, "__GI_", 5))
		name += 5;
	for (size_t i = 0; names[i]; i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

static int make_site(struct module *m, const struct elf_image *img, const struct found *fd, struct discovery *d)
{
	struct site proto, *s;
	uint64_t addr = fd->addr;
	int form = fd->form;
	uint8_t load_len = fd->load_len;
	int relocated = form == NEEDLE_FORM_RELOCATED;
	const struct elf_func *f = relocated ? NULL : elf_image_func_at(img, addr);

	memset(&proto, 0, sizeof(proto));
	proto.func.site_addr = addr;
	proto.func.ip = relocated ? fd->func : f ? f->addr : addr;
	proto.func.name = relocated ? (fd->name ? fd->name : unnamed(m, fd->func)) : f ? f->name : unnamed(m, addr);
	proto.func_size = relocated ? fd->func_size : f ? f->size : 0;
	/* Never the direct paths, which hook returns (link.c keeps
	 * direct_skip set). */
	proto.entry_only = (uint8_t)(named(proto.func.name, caller_names) || named(proto.func.name, twice_names) ||
				     named(proto.func.name, switch_names) || named(proto.func.name, vfork_names));
	proto.direct_skip = proto.entry_only;
	proto.compiler_marked = (uint8_t)(!relocated || fd->mcount);
	if (form == NEEDLE_FORM_RELOCATED) {
		proto.covered = fd->plan.covered;
		proto.insn_cnt = fd->plan.insn_cnt;
		memcpy(proto.insn_off, fd->plan.insn_off, sizeof(proto.insn_off));
	}
	proto.module = m;
	proto.form = (uint8_t)form;
	proto.load_len = load_len;
	if (form == NEEDLE_FORM_NOP5 || form == NEEDLE_FORM_RELOCATED)
		memcpy(proto.off_bytes, (const void *)addr, 5);
	else if (form == NEEDLE_FORM_XRAY)
		memcpy(proto.off_bytes, insn_xray_off, 5);
	else
		memcpy(proto.off_bytes, insn_nop5, 5);
	if (!(s = site_table_add(&proto)))
		return -ENOSPC;
	d->sites[d->site_cnt++] = s; /* sized by the caller */
	if (form == NEEDLE_FORM_FENTRY_CALL && discovery_list_add(&d->fentry, &d->fentry_cnt, s))
		return -ENOMEM;
	if (form == NEEDLE_FORM_GCC_NOPS && discovery_list_add(&d->nops, &d->nops_cnt, s))
		return -ENOMEM;
	if (form == NEEDLE_FORM_XRAY && discovery_list_add(&d->xray, &d->xray_cnt, s))
		return -ENOMEM;
	return 0;
}


static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Objects whose functions are never relocated (see the top). */
static int never_relocated(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "libgcc_s", 8) || !strncmp(base, "libneedle", 9);
}

/* Code that is entered without a call, so that its stack holds no return
 * address to hook: the entry point, signal and context trampolines, and
 * the cold parts gcc splits off a function (foo.cold), which the hot part
 * reaches with a jump. */
static int entered_without_call(const char *name)
{
	return name && (!strcmp(name, "_start") || !strcmp(name, "__restore_rt") || !strcmp(name, "_dl_start") ||
			!strcmp(name, "_dl_start_user") || !strcmp(name, "__start_context") ||
			strstr(name, ".cold"));
}

/* V8's embedded builtins, when the object has them: m->foreign_lo/hi.
 * The size is a uint32 of the object's read-only data, already mapped. */
static void v8_blob_range(struct module *m, const struct elf_image *img)
{
	if (!img->v8_blob || !img->v8_blob_size_at)
		return;
	uint64_t size = *(const uint32_t *)(uintptr_t)img->v8_blob_size_at;
	if (module_in_exec(m, img->v8_blob, size ? size : 1)) {
		m->foreign_lo = img->v8_blob;
		m->foreign_hi = img->v8_blob + size;
	}
}

/* A function to try: [lo, hi) and the name the symbols give it. */
struct fn {
	uint64_t lo, hi;
	const char *name;
	const char *label; /* a --with-syms name by file name alone (ELF_EXTRA_LABEL): shown, never trusted */
	size_t ijump_lo, ijump_hi; /* its indirect jumps, in find_relocatable's list */
};

static int fn_cmp(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* A builtin by its place in the blob, or, without the blob's symbols, by
 * the name mksnapshot gives every builtin. */
static int in_v8_builtins(const struct module *m, const struct fn *f)
{
	return (f->lo >= m->foreign_lo && f->lo < m->foreign_hi) || (f->name && !strncmp(f->name, "Builtins_", 9));
}

/* Functions with a known extent: sized symbols, and FDEs (named by a
 * symbol at their start, if any). */
static int list_functions(struct module *m, struct elf_image *img, struct fn **out, size_t *cnt)
{
	size_t cap = img->func_cnt + 1, n = 0;
	struct fn *v;
	int err = 0;

	for (int i = 0; i < m->exec_cnt && !err; i++)
		err = elf_image_load_fdes(img, m->exec[i].lo, m->exec[i].hi);
	if (err)
		return err;
	cap += img->fde_cnt;
	if (!(v = malloc(cap * sizeof(*v))))
		return -ENOMEM;
	for (size_t i = 0; i < img->func_cnt; i++) {
		const struct elf_func *f = &img->funcs[i];
		if (f->size && !f->ifunc && f->extra != ELF_EXTRA_LABEL && module_in_exec(m, f->addr, f->size))
			v[n++] = (struct fn){ f->addr, f->addr + f->size, f->name, NULL, 0, 0 };
	}
	for (size_t i = 0; i < img->fde_cnt; i++) {
		const struct elf_range *r = &img->fdes[i];
		const struct elf_func *f = elf_image_func_at(img, r->lo);
		/* A label (elf_image.h) is this start's name to show, where
		 * the call-frame information begins a function; it is
		 * treated as unnamed. */
		int label = f && f->addr == r->lo && f->extra == ELF_EXTRA_LABEL;
		if (!f || f->addr != r->lo || label)
			v[n++] = (struct fn){ r->lo, r->hi, NULL, label ? f->name : NULL, 0, 0 };
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), fn_cmp);
	/* One per start. */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1].lo != v[i].lo)
			v[k++] = v[i];
	*out = v;
	*cnt = k;
	return 0;
}

/* Index of the first of n records (size bytes each, sorted by the
 * uint64_t at offset field) whose field is >= key; n if none. */
static size_t first_at_or_after(const void *v, size_t n, size_t size, size_t field, uint64_t key)
{
	size_t a = 0, b = n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		uint64_t at;
		memcpy(&at, (const char *)v + mid * size + field, sizeof(at));
		if (at < key)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/* An IFUNC symbol names the implementation its resolver selected in this
 * process (memcpy: __memmove_avx_unaligned_erms): that function is the
 * one that runs, so it takes the name users know. */
static void name_ifunc_targets(const struct elf_image *img, struct fn *v, size_t n)
{
	for (size_t i = 0; i < img->func_cnt; i++) {
		if (!img->funcs[i].ifunc)
			continue;
		uint64_t impl = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, img->funcs[i].name);
		size_t a = first_at_or_after(v, n, sizeof(*v), offsetof(struct fn, lo), impl);
		if (a < n && v[a].lo == impl)
			v[a].name = img->funcs[i].name;
	}
}

static int in_plt(const struct elf_image *img, uint64_t a)
{
	for (int i = 0; i < img->plt_cnt; i++)
		if (a >= img->plt[i].lo && a < img->plt[i].hi)
			return 1;
	return 0;
}


/* found[0..n) is sorted by address. */
static int has_compiled_site(const struct found *found, size_t n, uint64_t lo)
{
	size_t a = first_at_or_after(found, n, sizeof(*found), offsetof(struct found, addr), lo);
	return a < n && (found[a].addr == lo || found[a].addr == lo + 4);
}

/* Can an indirect jmp of f land inside the covered bytes of plan?  Jump
 * tables are read (reloc_jump_table); a jump through a pointer with the
 * stack as at entry is a tail call, whose targets are function entries,
 * already among the targets.  Anything else might: RELOC_JUMP_TABLE. */
/* Is [addr, addr + len) inside one of the module's readable segments? */
static int module_readable(const void *ctx, uint64_t addr, size_t len)
{
	const struct module *m = ctx;
	for (int i = 0; i < m->load_cnt; i++)
		if ((m->load[i].prot & PROT_READ) && addr >= m->load[i].lo && addr + len <= m->load[i].hi &&
		    addr + len >= addr)
			return 1;
	return 0;
}

static enum reloc_reason check_indirect_jumps(const struct module *m, struct elf_image *img, const struct fn *f,
					      const struct reloc_addrs *ijumps, const struct reloc_plan *plan)
{
	struct reloc_addrs tab = { 0 };
	enum reloc_reason why = RELOC_OK;

	for (size_t j = f->ijump_lo; j < f->ijump_hi && why == RELOC_OK; j++) {
		tab.cnt = 0;
		int kind = reloc_jump_table(f->lo, ijumps->v[j], module_readable, m, &tab);
		if (kind == RELOC_TABLE_BOUNDED) {
			for (size_t t = 0; t < tab.cnt; t++)
				if (tab.v[t] > plan->site && tab.v[t] < plan->site + plan->covered)
					why = RELOC_BRANCH_INTO;
		} else if (kind != RELOC_TABLE_NONE || elf_image_stack_as_at_entry(img, ijumps->v[j]) != 1) {
			why = kind < 0 ? RELOC_NO_MEMORY : RELOC_JUMP_TABLE;
		}
	}
	reloc_addrs_free(&tab);
	return why;
}

static int find_relocatable(struct module *m, struct elf_image *img, struct found **found, size_t *found_cnt)
{
	struct fn *fns = NULL;
	struct reloc_addrs targets = { 0 }, calls = { 0 }, ijumps = { 0 };
	size_t fn_cnt = 0;
	int err;

	if (never_relocated(m->path))
		return 0;
	v8_blob_range(m, img);
	if ((err = list_functions(m, img, &fns, &fn_cnt)))
		return err;
	name_ifunc_targets(img, fns, fn_cnt);
	for (size_t i = 0; i < fn_cnt && !err; i++) {
		fns[i].ijump_lo = ijumps.cnt;
		err = reloc_scan(fns[i].lo, fns[i].hi, &targets, &calls, &ijumps);
		fns[i].ijump_hi = ijumps.cnt;
	}
	/* Every function start is a target too (of indirect calls, and of
	 * the callers of exported symbols): an entry inside another
	 * function's covered bytes refuses that function. */
	for (size_t i = 0; i < fn_cnt && !err; i++)
		err = reloc_addrs_add(&targets, fns[i].lo);
	for (size_t i = 0; i < img->func_cnt && !err; i++)
		err = reloc_addrs_add(&targets, img->funcs[i].addr);
	reloc_addrs_sort(&targets);
	reloc_addrs_sort(&calls);
	size_t compiled = *found_cnt;
	struct found *v = err ? NULL : realloc(*found, (compiled + fn_cnt + 1) * sizeof(*v));
	if (!err && !v)
		err = -ENOMEM;
	for (size_t i = 0; i < fn_cnt && !err; i++) {
		const struct fn *f = &fns[i];
		if (has_compiled_site(v, compiled, f->lo))
			continue;
		/* PLT code is entered by jumps; a start that no symbol names
		 * and no direct call reaches may be code entered the same way
		 * (a cold part, a trampoline): not a function to hook. */
		/* So is code entered without a call (see entered_without_call):
		 * not counted among the functions found. */
		size_t c = reloc_addrs_lower_bound(&calls, f->lo);
		if (in_plt(img, f->lo) || (!f->name && (c == calls.cnt || calls.v[c] != f->lo)) ||
		    entered_without_call(f->name) || entered_without_call(f->label) || f->lo == img->entry)
			continue;
		/* An object built with gcc -pg (no -mfentry) says which of
		 * its functions it meant to trace: those that call mcount.
		 * The rest (the start files' __gmon_start__, frame_dummy,
		 * libc_nonshared's atexit) are not its code, as uftrace,
		 * which hooks mcount, never sees them either. */
		int mcount = img->mcount_slot_cnt && calls_mcount_at_entry(m, img, f->lo, f->hi);
		if (img->mcount_slot_cnt && !mcount)
			continue;
		m->reloc_found++;
		uint64_t site = f->lo;
		if (f->hi - f->lo >= 4 && insn_is_endbr64((const uint8_t *)f->lo))
			site += 4;
		struct reloc_plan plan;
		/* The functions libneedle interposes are its own machinery's:
		 * their interposers call them while a stack is being switched
		 * (swapcontext), unwound (longjmp, _Unwind_*), walked
		 * (backtrace) or its signal state changed. */
		/* V8's builtins are copied by V8 (short builtin calls put a
		 * copy near its code range, where a rel32 jump to a detour
		 * lands nowhere), call each other with V8's own conventions and
		 * are walked by its stack walker. */
		/* A label refuses as a name would: refusing is safe. */
		const char *shown = f->name ? f->name : f->label;
		enum reloc_reason why = in_v8_builtins(m, f)		  ? RELOC_RUNTIME_CODE
					: named(shown, vfork_names)	  ? RELOC_RETURNS_TWICE
					: shown && interpose_is_interposed(shown)
						? RELOC_INTERPOSED
						: reloc_plan_entry(f->lo, site, f->hi, &targets, &plan);
		/* With one covered instruction nothing can land inside it. */
		if (why == RELOC_OK && plan.insn_cnt > 1)
			why = check_indirect_jumps(m, img, f, &ijumps, &plan);
		if (why == RELOC_OK) {
			uint8_t file[32];
			if (!elf_image_file_bytes(img, f->lo, file, (size_t)(site - f->lo) + plan.covered) &&
			    memcmp(file, (const void *)f->lo, (size_t)(site - f->lo) + plan.covered))
				why = RELOC_CHANGED;
		}
		if (why != RELOC_OK) {
			m->reloc_refused[why]++;
			pr_debug("%s: not relocated: %s at 0x%llx (%s)\n", m->path, f->name ? f->name : "function",
				 (unsigned long long)(f->lo - m->bias), reloc_reason_name(why));
			continue;
		}
		v[(*found_cnt)++] = (struct found){ .addr = site, .form = NEEDLE_FORM_RELOCATED, .load_len = 5,
						    .func = f->lo, .func_size = f->hi - f->lo, .name = shown,
						    .plan = plan, .mcount = mcount };
	}
	if (v)
		*found = v;
	free(fns);
	reloc_addrs_free(&targets);
	reloc_addrs_free(&calls);
	reloc_addrs_free(&ijumps);
	if (!err && *found_cnt > 1)
		qsort(*found, *found_cnt, sizeof(**found), found_cmp);
	return err;
}

/* The detours of the object's relocated sites, in one span of its own
 * within reach of its whole image (the moved instructions' rip-relative
 * operands reach its data, past its code).  A site whose detour cannot be built is made
 * unusable (counted as no memory, or not movable). */
static void build_detours(struct module *m, struct discovery *d)
{
	size_t n = 0;
	for (size_t i = 0; i < d->site_cnt; i++)
		n += d->sites[i]->form == NEEDLE_FORM_RELOCATED;
	if (!n)
		return;
	uint64_t lo = m->exec[0].lo, hi = m->exec[m->exec_cnt - 1].hi;
	for (int i = 0; i < m->load_cnt; i++) {
		lo = m->load[i].lo < lo ? m->load[i].lo : lo;
		hi = m->load[i].hi > hi ? m->load[i].hi : hi;
	}
	int err = stub_area_code(n * RELOC_DETOUR_SIZE, lo, hi, &m->detours);
	size_t k = 0;
	for (size_t i = 0; i < d->site_cnt; i++) {
		struct site *s = d->sites[i];
		if (s->form != NEEDLE_FORM_RELOCATED)
			continue;
		enum reloc_reason why = RELOC_NO_MEMORY;
		if (!err) {
			struct reloc_plan plan = { .site = s->func.site_addr, .covered = s->covered,
						   .insn_cnt = s->insn_cnt };
			memcpy(plan.insn_off, s->insn_off, sizeof(plan.insn_off));
			uint8_t *at = m->detours.at + k * RELOC_DETOUR_SIZE;
			why = reloc_emit(&plan, (uint64_t)(uintptr_t)at, s->stub, s->jmp_entry, at, s->detour_off);
			if (why == RELOC_OK)
				s->detour = (uint64_t)(uintptr_t)at;
		}
		k++;
		if (why != RELOC_OK) {
			s->unusable = 1;
			m->reloc_refused[why]++;
		} else {
			m->reloc_sites++;
		}
	}
	if (!err && stub_area_seal(&m->detours)) {
		for (size_t i = 0; i < d->site_cnt; i++)
			if (d->sites[i]->form == NEEDLE_FORM_RELOCATED && d->sites[i]->detour) {
				d->sites[i]->detour = 0;
				d->sites[i]->unusable = 1;
				m->reloc_sites--;
				m->reloc_refused[RELOC_NO_MEMORY]++;
			}
	}
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
	memcpy(m->build_id, img.build_id, sizeof(m->build_id));
	m->build_id_len = img.build_id_len;
	/* The C++ runtime's demangler, for patterns that name C++
	 * functions as the views show them (site_names.c). */
	for (size_t i = 0; i < img.func_cnt; i++)
		if (img.funcs[i].size && !img.funcs[i].ifunc && !strcmp(img.funcs[i].name, "__cxa_demangle"))
			site_names_saw_demangler(img.funcs[i].addr);
	err = gather(m, &img, &c);
	if (!err && c.cnt && !(found = malloc(c.cnt * sizeof(*found))))
		err = -ENOMEM;
	for (size_t i = 0; i < c.cnt && !err; i++) {
		uint64_t addr = c.v[i].addr;
		uint8_t load_len;
		int form = classify(m, &img, &addr, c.v[i].listed, &load_len);
		if (form)
			found[found_cnt++] = (struct found){ .addr = addr, .form = form, .load_len = load_len };
		else if (c.v[i].listed)
			pr_debug("%s: entry at 0x%llx holds no known site form\n", m->path,
				 (unsigned long long)addr);
	}
	free(c.v);
	/* A function can be both listed and found by its symbol (past endbr64). */
	if (found_cnt)
		qsort(found, found_cnt, sizeof(*found), found_cmp);
	m->first_site = site_table_count();
	/* An object a compiler prepared is traced as it was prepared: a
	 * function it left without an entry was left out on purpose (notrace,
	 * no_instrument_function, patchable_function_entry(0)), as the
	 * kernel's ftrace and uftrace leave it.  Only --sites=relocated
	 * relocates in such an object. */
	if (!err && (kinds & SITE_KINDS_RELOCATED) && !((kinds & SITE_KINDS_COMPILED) && found_cnt))
		err = find_relocatable(m, &img, &found, &found_cnt);
	if (!err && found_cnt && !(d->sites = malloc(found_cnt * sizeof(*d->sites))))
		err = -ENOMEM;
	for (size_t i = 0; i < found_cnt && !err; i++)
		if (!i || found[i].addr != found[i - 1].addr)
			err = make_site(m, &img, &found[i], d);
	free(found);
	m->site_cnt = (uint32_t)d->site_cnt;
	if (!err && d->site_cnt)
		err = exit_sites_discover(m, &img, d);
	if (!err && d->site_cnt) {
		m->strings = img.strings; /* the sites' names live on */
		img.strings = NULL;
		/* One stub per entry site, then one per exit site. */
		size_t n = d->site_cnt + m->exit_cnt;
		uint64_t *io = malloc(n * 2 * sizeof(*io));
		uint8_t *kind = malloc(n);
		if (!io || !kind) {
			err = -ENOMEM;
			free(io);
		} else {
			for (size_t i = 0; i < n; i++) {
				struct site *s = i < d->site_cnt ? d->sites[i] : &m->exit_sites[i - d->site_cnt];
				io[i] = (uint64_t)(uintptr_t)s;
				/* A calling entry calls the function: its return
				 * is the trampoline's. */
				s->jmp_entry = !site_is_exit(s) && !s->entry_only && calling_entries();
				if (site_is_exit(s))
					kind[i] = site_exit_returns(s) ? STUB_EXIT_RET : STUB_EXIT;
				else if (s->form == NEEDLE_FORM_RELOCATED)
					kind[i] = s->jmp_entry ? STUB_ENTRY_CALLING_RELOCATED : STUB_ENTRY_FULL;
				else
					kind[i] = s->jmp_entry ? STUB_ENTRY_CALLING : STUB_ENTRY;
			}
			err = stub_area_create(io, kind, n, m->exec[0].lo, m->exec[m->exec_cnt - 1].hi, io + n,
					       &m->stubs);
			for (size_t i = 0; !err && i < n; i++) {
				struct site *s = (struct site *)(uintptr_t)io[i];
				s->stub = io[n + i];
				s->probe_stub = kind[i] == STUB_ENTRY_CALLING ? s->stub + STUB_PROBE_OFFSET : 0;
			}
			free(io);
			if (!err)
				build_detours(m, d);
		}
		free(kind);
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
	free(d->xray);
	free(d->xray_ret);
	memset(d, 0, sizeof(*d));
}
