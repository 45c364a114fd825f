/* prepare.c - the sites of a newly discovered object become switchable.
 *
 * call __fentry__ -> NOP5 replaces one instruction by one: the int3
 * protocol suffices.  Five 1-byte NOPs -> NOP5 does not: a thread may be
 * between two of them, so the rewrite runs with every other thread
 * stopped and moved out of the sites (patch_rewrite_stopped).  An XRay
 * entry sled keeps its "jmp .+11"; the 9 bytes it jumps over, which no
 * thread runs, become a 3-byte and a 6-byte NOP with plain stores (the
 * enabling batch's core syncs publish them before any thread can return
 * onto the 6-byte NOP).  XRay's tail-call sleds get the same; its exit
 * sleds become "NOP5; ret" with threads stopped.
 *
 * Invariant: when this returns, every site of the discovery is either in
 * the form its `off_bytes` say (NOP5, ready to switch) or marked unusable,
 * never patched again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/arch/arch.h"
#include "agent/patch/patch_batch.h"
#include "agent/patch/prepare.h"
#include "agent/patch/text_window.h"
#include "agent/sites/site_discover.h"
#include "agent/sites/site_table.h"

static struct patch_op *nop5_ops(struct site **sites, size_t n)
{
	struct patch_op *ops = calloc(n ? n : 1, sizeof(*ops));

	for (size_t i = 0; ops && i < n; i++) {
		ops[i].site = sites[i];
		ops[i].len = sites[i]->load_len;
		memcpy(ops[i].bytes, insn_nop5, 5);
		ops[i].bytes[5] = INSN_NOP1;
	}
	return ops;
}

static int addr_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Entry and tail-call sleds alike. */
static int xray_normalize(struct site **sites, size_t n)
{
	struct text_window w;
	uint64_t *addrs = malloc((n ? n : 1) * sizeof(*addrs));
	int err;

	if (!addrs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		addrs[i] = sites[i]->func.site_addr;
	qsort(addrs, n, sizeof(*addrs), addr_cmp);
	if (!(err = text_window_open(&w, addrs, n, INSN_XRAY_SLED_LEN))) {
		for (size_t i = 0; i < n; i++) {
			/* Byte stores: memcpy may itself be a site. */
			volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)sites[i]->func.site_addr;
			for (int k = 2; k < INSN_SITE_LEN; k++)
				p[k] = insn_xray_off[k];
			for (int k = 0; k < 6; k++)
				p[INSN_SITE_LEN + k] = insn_nop6[k];
		}
		err = text_window_close(&w);
	}
	free(addrs);
	return err;
}

/* XRay exit sleds: "ret; 10-byte NOP" becomes "NOP5; ret", so that they
 * switch like gcc's exit NOP5s.  Threads are stopped: one may be on the
 * ret, which moves; the ret's old address now holds the NOP5 that leads
 * to it, so a thread stopped there needs no moving. */
static struct patch_op *xray_ret_ops(struct site **sites, size_t n)
{
	struct patch_op *ops = calloc(n ? n : 1, sizeof(*ops));

	for (size_t i = 0; ops && i < n; i++) {
		ops[i].site = sites[i];
		ops[i].len = 6;
		memcpy(ops[i].bytes, insn_nop5, 5);
		ops[i].bytes[5] = INSN_RET;
	}
	return ops;
}

int patch_prepare(struct discovery *d)
{
	struct patch_op *fentry = nop5_ops(d->fentry, d->fentry_cnt), *nops = nop5_ops(d->nops, d->nops_cnt);
	struct patch_op *rets = xray_ret_ops(d->xray_ret, d->xray_ret_cnt);
	int err = 0;

	if (!fentry || !nops || !rets)
		err = -ENOMEM;
	if (!err && d->fentry_cnt)
		err = patch_batch_apply(fentry, d->fentry_cnt);
	if (!err && d->nops_cnt)
		err = patch_rewrite_stopped(nops, d->nops_cnt);
	if (!err && d->xray_cnt)
		err = xray_normalize(d->xray, d->xray_cnt);
	if (!err && d->xray_ret_cnt)
		err = patch_rewrite_stopped(rets, d->xray_ret_cnt);
	if (err) {
		for (size_t j = 0; j < d->site_cnt; j++) {
			d->sites[j]->unusable = d->sites[j]->form != NEEDLE_FORM_NOP5 &&
						d->sites[j]->form != NEEDLE_FORM_RELOCATED;
			d->sites[j]->exit_cnt = 0; /* back to the return hook */
		}
	}
	free(fentry);
	free(nops);
	free(rets);
	return err;
}
