/* exit_sites.c - finds the exits the compiler prepared in one object, and
 * gives each to the entry site of its function.
 *
 * Two sources: gcc's __return_loc (-pg -mfentry -minstrument-return=nop5
 * -mrecord-return: a NOP5 before every ret and before every sibling-call
 * jmp), and LLVM XRay's exit and tail-call sleds in xray_instr_map.  With
 * those, an entry need not hijack its return: the function's every way
 * out calls needle first (dispatch.c, needle_dispatch_exit_site).
 *
 * Invariants:
 *  - An entry site gets exits only if every exit listed for its function
 *    could be attributed to it and holds a form needle knows; one listed
 *    exit that is not understood makes the function keep the return hook
 *    (a missed exit would leave its frame open).  Exits in a function's
 *    .cold part (entered by a jump, not a call) belong to the function.
 *  - An object with any exit that belongs to no entry site, in code no
 *    symbol attributes, gets no exits at all: that exit could be some
 *    function's only way out.
 *  - Exit sites are never freed (stubs embed them) and never in the site
 *    table: the trap handler finds them through the batch that patches
 *    them (patch_batch.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/arch/arch.h"
#include "agent/base/log.h"
#include "agent/sites/elf_image.h"
#include "agent/sites/exit_sites.h"
#include "agent/sites/module.h"
#include "agent/sites/site_discover.h"
#include "agent/sites/site_table.h"

struct exit_found {
	uint64_t addr;
	uint64_t func;  /* XRay: the function's entry; gcc: 0 (found by address) */
	int form;
};

struct exit_list {
	struct exit_found *v;
	size_t cnt, cap;
};

static int exit_add(struct exit_list *l, uint64_t addr, uint64_t func, int form)
{
	if (l->cnt == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct exit_found *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->cnt++] = (struct exit_found){ addr, func, form };
	return 0;
}

/* XRay's exit sled: "ret" and a 10-byte NOP, as clang emits it, or as
 * needle left it ("NOP5; ret"). */
static int is_xray_ret_sled(const uint8_t *p)
{
	static const uint8_t clang[6] = { 0xc3, 0x2e, 0x66, 0x0f, 0x1f, 0x84 };
	return !memcmp(p, clang, sizeof(clang)) || (insn_is_nop5(p) && p[5] == 0xc3);
}

/* The form of a listed exit, or 0 (then its function keeps the return
 * hook).  A gcc exit is any 5-byte NOP (clang writes a displacement). */
static int classify_exit(const struct module *m, uint64_t addr, int xray_kind)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)addr;

	if (!module_in_exec(m, addr, INSN_XRAY_SLED_LEN))
		return 0;
	if (xray_kind == 1)
		return is_xray_ret_sled(p) ? SITE_EXIT_XRAY_RET : 0;
	if (xray_kind == 2)
		return insn_is_xray_sled(p) ? SITE_EXIT_XRAY_TAIL : 0;
	if (!insn_is_nop5(p))
		return 0;
	return p[5] == INSN_RET || (p[5] == 0xf3 && p[6] == INSN_RET) ? SITE_EXIT_NOP5_RET : SITE_EXIT_NOP5_JMP;
}

static int gather(const struct module *m, const struct elf_image *img, struct exit_list *l)
{
	int err = 0;

	for (uint64_t off = 0; !err && off + 8 <= img->return_loc.size; off += 8) {
		uint64_t at;
		memcpy(&at, (const void *)(uintptr_t)(img->return_loc.addr + off), sizeof(at));
		if (at && module_in_exec(m, at, 5)) /* 0 or outside: a function the linker dropped */
			err = exit_add(l, at, 0, classify_exit(m, at, 0));
	}
	/* xray_instr_map: see site_discover.c.  Kind 1 exit, 2 tail call. */
	for (uint64_t off = 0; !err && off + 32 <= img->xray_map.size; off += 32) {
		uint64_t rec = img->xray_map.addr + off;
		const uint8_t *r = (const uint8_t *)(uintptr_t)rec;
		int64_t sled, func;
		if (r[16] != 1 && r[16] != 2)
			continue;
		memcpy(&sled, r, 8);
		memcpy(&func, r + 8, 8);
		uint64_t at = r[18] >= 2 ? rec + (uint64_t)sled : (uint64_t)sled;
		uint64_t fn = r[18] >= 2 ? rec + 8 + (uint64_t)func : (uint64_t)func;
		err = exit_add(l, at, fn, classify_exit(m, at, r[16]));
	}
	return err;
}

/* The last of sites[0..n) (ascending) whose function starts at or below
 * addr, or NULL. */
static struct site *site_at_or_below(struct site **sites, size_t n, uint64_t addr)
{
	size_t a = 0, b = n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (sites[mid]->func.ip <= addr)
			a = mid + 1;
		else
			b = mid;
	}
	return a ? sites[a - 1] : NULL;
}

static struct site *site_named(struct site **sites, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(sites[i]->func.name, name, len) && !sites[i]->func.name[len])
			return sites[i];
	return NULL;
}

/* The compiled entry site whose function holds the exit at addr, or NULL. */
static struct site *owner_of(const struct elf_image *img, struct site **sites, size_t n, const struct exit_found *e)
{
	if (e->func) {
		struct site *s = site_at_or_below(sites, n, e->func);
		return s && s->func.ip == e->func ? s : NULL;
	}
	const struct elf_func *f = elf_image_func_at(img, e->addr);
	if (!f)
		return NULL;
	const char *cold = strstr(f->name, ".cold");
	if (cold)
		return site_named(sites, n, f->name, (size_t)(cold - f->name));
	struct site *s = site_at_or_below(sites, n, e->addr);
	return s && s->func.ip == f->addr ? s : NULL;
}

int exit_sites_discover(struct module *m, const struct elf_image *img, struct discovery *d)
{
	struct exit_list l = { 0 };
	struct site **owners = NULL, **sites = NULL;
	size_t n = 0;
	/* NEEDLE_EXIT_SITES=0: every function hooks its return, as without
	 * exit sites (the benchmarks' ablation). */
	const char *use = getenv("NEEDLE_EXIT_SITES");
	if (use && !strcmp(use, "0"))
		return 0;
	int err = gather(m, img, &l);

	if (err || !l.cnt)
		goto out;
	/* The compiled entry sites, by function start. */
	if (!(sites = malloc(d->site_cnt * sizeof(*sites))) || !(owners = calloc(l.cnt, sizeof(*owners)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < d->site_cnt; i++)
		if (d->sites[i]->form != NEEDLE_FORM_RELOCATED)
			sites[n++] = d->sites[i];
	/* First pass: owners, and which functions must keep the return hook
	 * (marked with exit_cnt = UINT32_MAX for the moment). */
	for (size_t i = 0; i < l.cnt; i++) {
		owners[i] = owner_of(img, sites, n, &l.v[i]);
		if (!owners[i]) {
			pr_debug("%s: exit at 0x%llx belongs to no traceable function: its exits are not used\n",
				 m->path, (unsigned long long)l.v[i].addr);
			goto out; /* not an error: the return hook serves every function */
		}
		if (!l.v[i].form)
			owners[i]->exit_cnt = UINT32_MAX;
		else if (owners[i]->exit_cnt != UINT32_MAX)
			owners[i]->exit_cnt++;
	}
	size_t made = 0;
	for (size_t i = 0; i < l.cnt; i++)
		made += owners[i]->exit_cnt != UINT32_MAX;
	if (!(m->exit_sites = calloc(made ? made : 1, sizeof(*m->exit_sites)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < l.cnt; i++) {
		struct site *o = owners[i];
		if (o->exit_cnt == UINT32_MAX)
			continue;
		if (!o->exits) {
			/* Counted above; filled from 0 from here on. */
			if (!(o->exits = calloc(o->exit_cnt, sizeof(*o->exits)))) {
				err = -ENOMEM;
				goto out;
			}
			o->exit_cnt = 0;
		}
		struct site *x = &m->exit_sites[m->exit_cnt++];
		x->func = o->func; /* handlers see the function, never the exit */
		x->func.site_addr = l.v[i].addr;
		x->module = m;
		x->owner = o;
		x->form = (uint8_t)l.v[i].form;
		x->load_len = 5;
		memcpy(x->off_bytes, x->form == SITE_EXIT_XRAY_TAIL ? insn_xray_off : insn_nop5, 5);
		o->exits[o->exit_cnt++] = x;
		if (x->form == SITE_EXIT_XRAY_TAIL)
			err = discovery_list_add(&d->xray, &d->xray_cnt, x);
		else if (x->form == SITE_EXIT_XRAY_RET)
			err = discovery_list_add(&d->xray_ret, &d->xray_ret_cnt, x);
		if (err)
			goto out;
	}
	for (size_t i = 0; i < l.cnt; i++)
		if (owners[i]->exit_cnt == UINT32_MAX)
			owners[i]->exit_cnt = 0;
	pr_debug("%s: %u exit sites\n", m->path, m->exit_cnt);
out:
	if (err || (owners && m->exit_cnt == 0)) {
		/* Nothing half made: every owner back to the return hook. */
		for (size_t i = 0; owners && i < l.cnt; i++)
			if (owners[i]) {
				free(owners[i]->exits);
				owners[i]->exits = NULL;
				owners[i]->exit_cnt = 0;
			}
		free(m->exit_sites);
		m->exit_sites = NULL;
		m->exit_cnt = 0;
	}
	free(owners);
	free(sites);
	free(l.v);
	return err;
}
