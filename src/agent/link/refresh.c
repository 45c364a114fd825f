/* refresh.c - discover, then prepare: the sites layer finds and indexes
 * the sites of new objects (module.c), the patch layer normalizes them
 * (prepare.c).  An object whose sites cannot be prepared stays loaded and
 * indexed, its unprepared sites unusable, and the others go on. */
#include "agent/base/log.h"
#include "agent/link/refresh.h"
#include "agent/patch/prepare.h"
#include "agent/sites/module.h"
#include "agent/sites/site_discover.h"
#include "agent/sites/site_table.h"

int refresh_locked(void)
{
	struct discovery_set set;
	int err = module_discover_new(&set);

	for (size_t i = 0; i < set.cnt; i++) {
		struct discovery *d = &set.v[i];
		int perr = patch_prepare(d);
		if (perr)
			pr_warn("%s: cannot prepare its functions for tracing (%d); they stay untraced\n",
				d->site_cnt ? d->sites[0]->module->path : "object", perr);
	}
	discovery_set_free(&set);
	return err;
}
