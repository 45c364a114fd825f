/* prepare.c - the sites of a newly discovered object become switchable.
 *
 * call __fentry__ -> NOP5 replaces one instruction by one: the int3
 * protocol suffices.  Five 1-byte NOPs -> NOP5 does not: a thread may be
 * between two of them, so the rewrite runs with every other thread
 * stopped and moved out of the sites (patch_rewrite_stopped).
 *
 * Invariant: when this returns, every site of the discovery is either in
 * the form its `off_bytes` say (NOP5, ready to switch) or marked unusable,
 * never patched again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/arch/x86_64/insn.h"
#include "agent/patch/patch_batch.h"
#include "agent/patch/prepare.h"
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

int patch_prepare(struct discovery *d)
{
	struct patch_op *fentry = nop5_ops(d->fentry, d->fentry_cnt), *nops = nop5_ops(d->nops, d->nops_cnt);
	int err = 0;

	if (!fentry || !nops)
		err = -ENOMEM;
	if (!err && d->fentry_cnt)
		err = patch_batch_apply(fentry, d->fentry_cnt);
	if (!err && d->nops_cnt)
		err = patch_rewrite_stopped(nops, d->nops_cnt);
	if (err)
		for (size_t j = 0; j < d->site_cnt; j++)
			d->sites[j]->unusable = d->sites[j]->form != NEEDLE_FORM_NOP5;
	free(fentry);
	free(nops);
	return err;
}
