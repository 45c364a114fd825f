/* introspect.c - the read-only side of the API: sites and statistics. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "needle.h"
#include "agent/base/control_lock.h"
#include "agent/dispatch/shadow_frame.h"
#include "agent/patch/core_sync.h"
#include "agent/link/refresh.h"
#include "agent/sites/module.h"
#include "agent/patch/patch_batch.h"
#include "agent/patch/thread_stop.h"
#include "agent/rcu/rcu.h"
#include "agent/sites/site_names.h"
#include "agent/sites/site_table.h"
#include "agent/thread/thread_state.h"

NEEDLE_API int needle_refresh(void)
{
	int err = control_lock();

	if (err)
		return err;
	err = refresh_locked();
	control_unlock();
	return err < 0 ? err : (int)site_table_count();
}

NEEDLE_API int needle_site_count(void)
{
	int err = control_lock();

	if (err)
		return err;
	control_unlock();
	return (int)site_table_count();
}

NEEDLE_API int needle_site_info(uint32_t id, struct needle_site_info *info)
{
	struct needle_site_info out;
	struct site *s;
	int err;

	if (!info || info->sz < offsetof(struct needle_site_info, off_bytes))
		return -EINVAL;
	if ((err = control_lock()))
		return err;
	s = site_table_get(id);
	if (s) {
		memset(&out, 0, sizeof(out));
		out.sz = info->sz;
		out.id = s->func.site_id;
		out.form = s->form;
		out.addr = s->func.site_addr;
		out.func_ip = s->func.ip;
		out.name = s->func.name;
		out.module = s->module->path;
		out.enabled = s->enabled;
		out.traceable = !s->unusable && !s->gone && s->stub;
		out.func_size = s->func_size;
		out.compiler_marked = s->compiler_marked;
		out.module_bias = s->module->bias;
		memcpy(out.module_build_id, s->module->build_id, sizeof(out.module_build_id));
		out.module_build_id_len = s->module->build_id_len;
		memcpy(out.off_bytes, s->off_bytes, sizeof(out.off_bytes));
		memcpy(info, &out, info->sz < sizeof(out) ? info->sz : sizeof(out));
	}
	control_unlock();
	return s ? 0 : -ENOENT;
}

NEEDLE_API int needle_site_match(uint32_t id, const char *pattern)
{
	struct site *s;
	int err;

	if (!pattern)
		return -EINVAL;
	if ((err = control_lock()))
		return err;
	s = site_table_get(id);
	int r = s ? site_name_match(s, pattern) : -ENOENT;
	control_unlock();
	return r;
}

NEEDLE_API int needle_is_return_hook(uint64_t addr)
{
	return is_return_trampoline(addr);
}

NEEDLE_API int needle_site_find(const char *name)
{
	size_t n = 0;
	int err;

	if (!name)
		return -EINVAL;
	if ((err = control_lock()))
		return err;
	struct site *const *range = site_table_name_range(name, &n);
	err = n ? (int)range[0]->func.site_id : -ENOENT;
	control_unlock();
	return err;
}

struct counter_sum {
	uint64_t recursion_skips, shadow_overflows, direct_c_entries, full_entries;
};

static void add_counters(struct thread_state *ts, void *arg)
{
	struct counter_sum *sum = arg;
	sum->recursion_skips += ts->recursion_skips;
	sum->shadow_overflows += ts->shadow_overflows;
	sum->direct_c_entries += ts->direct_c_entries;
	sum->full_entries += ts->full_entries;
}

NEEDLE_API int needle_get_stats(struct needle_stats *stats)
{
	struct needle_stats out;
	struct patch_stats ps;
	struct counter_sum sum = { 0, 0, 0, 0 };
	int err;

	if (!stats || stats->sz < sizeof(size_t))
		return -EINVAL;
	if ((err = control_lock()))
		return err;
	memset(&out, 0, sizeof(out));
	out.sz = stats->sz;
	patch_get_stats(&ps);
	out.patch_batches = ps.batches;
	out.last_batch_syncs = ps.last_syncs;
	out.last_batch_sites = ps.last_sites;
	out.core_syncs = core_sync_count();
	for (uint32_t id = 0, n = site_table_count(); id < n; id++)
		out.sites_enabled += site_table_get(id)->enabled;
	out.grace_periods = rcu_grace_periods();
	thread_state_for_each(add_counters, &sum);
	out.recursion_skips = sum.recursion_skips;
	out.shadow_overflows = sum.shadow_overflows;
	out.direct_c_entries = sum.direct_c_entries;
	out.full_path_entries = sum.full_entries;
	out.threads_refused = thread_state_refused();
	out.threads_shared_tls = thread_state_shared_tls();
	control_unlock();
	memcpy(stats, &out, stats->sz < sizeof(out) ? stats->sz : sizeof(out));
	return 0;
}

NEEDLE_API int needle_stop_signal(void)
{
	return thread_stop_signal();
}

/* The modules in discovery order (the list is newest first). */
static struct module *module_nth(uint32_t index, uint32_t *count)
{
	uint32_t n = 0;
	for (struct module *m = module_list(); m; m = m->next)
		n++;
	*count = n;
	if (index >= n)
		return NULL;
	struct module *m = module_list();
	for (uint32_t k = n - 1; k > index; k--)
		m = m->next;
	return m;
}

NEEDLE_API int needle_object_count(void)
{
	uint32_t n;
	int err = control_lock();

	if (err)
		return err;
	module_nth(0, &n);
	control_unlock();
	return (int)n;
}

NEEDLE_API int needle_object_info(uint32_t index, struct needle_object_info *info)
{
	struct needle_object_info out;
	uint32_t n;
	int err;

	if (!info || info->sz < offsetof(struct needle_object_info, refused))
		return -EINVAL;
	if ((err = control_lock()))
		return err;
	struct module *m = module_nth(index, &n);
	if (!m) {
		control_unlock();
		return -ENOENT;
	}
	memset(&out, 0, sizeof(out));
	out.sz = info->sz < sizeof(out) ? info->sz : sizeof(out);
	out.path = m->path;
	for (uint32_t i = 0; i < m->site_cnt; i++)
		out.sites_compiled += site_table_get(m->first_site + i)->form != NEEDLE_FORM_RELOCATED;
	out.funcs_tried = m->reloc_found;
	out.sites_relocated = m->reloc_sites;
	for (int r = 1; r < RELOC_REASONS && r < NEEDLE_REFUSAL_MAX; r++)
		out.refused[r] = m->reloc_refused[r];
	control_unlock();
	memcpy(info, &out, out.sz);
	info->sz = out.sz;
	return 0;
}

NEEDLE_API const char *needle_refusal_name(int reason)
{
	return reason > 0 && reason < RELOC_REASONS ? reloc_reason_name((enum reloc_reason)reason) : NULL;
}
