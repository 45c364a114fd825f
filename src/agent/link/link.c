/* link.c - mass attach and detach (needle_attach, needle_link_detach).
 *
 * One attach resolves all its patterns and addresses to sites, publishes
 * the new consumer lists, then enables every site that had no consumer in
 * one patch batch: 3 core syncs whatever the count.  Detach is the mirror
 * image, followed by one grace period (or none, for detach_nosync, which
 * leaves it to a later needle_sync covering many links). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/base/control_lock.h"
#include "agent/dispatch/consumer.h"
#include "agent/arch/arch.h"
#include "agent/base/log.h"
#include "agent/link/refresh.h"
#include "agent/sites/code_map.h"
#include "agent/sites/module.h"
#include "agent/sites/site_names.h"
#include "agent/patch/patch_batch.h"
#include "agent/rcu/rcu.h"
#include "agent/sites/site_table.h"
#include "agent/dispatch/dispatch.h"
#include "agent/dispatch/dispatch_direct.h"

struct needle_link {
	struct consumer *consumer;
	struct site **sites;
	size_t site_cnt;
	int attached;
	/* Grace periods completed when the link was detached: once the count
	 * has passed it, no thread can still run the link's handlers. */
	uint64_t detached_gp;
};

/* Consumers detached without a grace period, waiting for needle_sync. */
static struct consumer **pending;
static size_t pending_cnt, pending_cap;

struct site_set {
	struct site **v;
	size_t cnt;
	uint8_t *member; /* by site id */
};

static int set_add(struct site_set *set, struct site *s)
{
	if (set->member[s->func.site_id])
		return 0;
	set->member[s->func.site_id] = 1;
	set->v[set->cnt++] = s;
	return 0;
}

static int has_glob(const char *p)
{
	return strpbrk(p, "*?[") != NULL;
}

static int resolve_pattern(struct site_set *set, const char *pattern)
{
	size_t matched = 0;

	if (!has_glob(pattern)) {
		struct site *const *range = site_table_name_range(pattern, &matched);
		for (size_t i = 0; i < matched; i++)
			set_add(set, range[i]);
	}
	/* A glob, or a name no symbol has: a C++ function's demangled
	 * name ("ns::Cls::get", "ns::Cls::get(int) const") may be it.  Both
	 * name a set (overloads, template instances, constructor variants)
	 * and take what can be traced of it; an exact symbol that cannot be
	 * is an error (above, and below). */
	if (!matched) {
		for (uint32_t id = 0, total = site_table_count(); id < total; id++) {
			struct site *s = site_table_get(id);
			if (!s->gone && !s->unusable && site_name_match(s, pattern)) {
				set_add(set, s);
				matched++;
			}
		}
	}
	if (!matched) {
		pr_warn("'%s' matches no traceable function\n", pattern);
		return -ENOENT;
	}
	return 0;
}

static int resolve(const struct needle_attach_opts *opts, struct site_set *set)
{
	uint32_t total = site_table_count();
	int err = 0;

	set->cnt = 0;
	set->v = malloc((total ? total : 1) * sizeof(*set->v));
	set->member = calloc(total ? total : 1, 1);
	if (!set->v || !set->member)
		return -ENOMEM;
	for (size_t i = 0; i < opts->pattern_cnt && !err; i++) {
		if (!opts->patterns[i]) {
			err = -EINVAL;
			break;
		}
		err = resolve_pattern(set, opts->patterns[i]);
	}
	for (size_t i = 0; i < opts->addr_cnt && !err; i++) {
		struct site *s = site_table_find_func(opts->addrs[i]);
		if (!s && (s = site_table_find_addr(opts->addrs[i])) && site_is_exit(s))
			s = NULL;
		if (!s) {
			pr_warn("address 0x%llx is not a traceable function\n", (unsigned long long)opts->addrs[i]);
			err = -ENOENT;
		} else {
			set_add(set, s);
		}
	}
	return err;
}

/* Should s's entry jump to its probe stub (site_table.h) rather than to
 * its calling stub?  While its list is one live entry-only consumer's
 * (consumer_list.probe, which consumer.c keeps), and the probe path's
 * assembly is in use.  Read under the control mutex, which every change
 * of either holds. */
static int site_wants_probe_stub(const struct site *s)
{
#ifdef NEEDLE_RCU_ABLATION_RWLOCK
	/* The benchmarks' rwlock ablation measures the C paths only. */
	(void)s;
	return 0;
#else
	const struct consumer_list *l = atomic_load_explicit(&s->consumers, memory_order_relaxed);

	return s->probe_stub && dispatch_probe_asm_enabled && l &&
	       atomic_load_explicit(&l->probe, memory_order_relaxed);
#endif
}

/* Does s's entry jump to its probe stub now?  Read from the code itself,
 * not kept beside it: a batch that failed part way may have written
 * some sites and not others.  Under the control mutex, with no batch in
 * flight, and only for a site that is on and whose object is loaded. */
static int site_on_probe_stub(const struct site *s)
{
	uint8_t probe[ARCH_SITE_LEN];

	arch_site_jump(probe, s->func.site_addr, s->probe_stub);
	return !memcmp(probe, (const void *)(uintptr_t)s->func.site_addr, ARCH_SITE_LEN);
}

static void op_for(struct patch_op *op, struct site *s, int enable)
{
	memset(op, 0, sizeof(*op));
	op->site = s;
	op->len = ARCH_SITE_LEN;
	op->want_call = (uint8_t)enable;
	if (enable && s->form == NEEDLE_FORM_RELOCATED)
		arch_site_jump(op->bytes, s->func.site_addr, s->detour);
	else if (enable && s->jmp_entry)
		arch_site_jump(op->bytes, s->func.site_addr, site_wants_probe_stub(s) ? s->probe_stub : s->stub);
	else if (enable)
		arch_site_call(op->bytes, s->func.site_addr, s->stub);
	else
		memcpy(op->bytes, s->off_bytes, ARCH_SITE_LEN);
}

/* Is s on, with consumers, and jumping to the other stub than they now
 * want (site_wants_probe_stub)?  Then one JMP's target is rewritten. */
static int site_needs_retarget(struct site *s)
{
	return s->probe_stub && s->enabled && !s->gone && atomic_load(&s->consumers) &&
	       site_wants_probe_stub(s) != site_on_probe_stub(s);
}

/* An op into ops for each site of sites[0..n) that needs a retarget, in
 * the same batch as the sites switched on or off.  Sites switched in that
 * batch are not on yet (enabled is set after it) or have no consumer
 * left, so no site gets two ops.  Returns the ops added. */
static size_t retarget_ops(struct site *const *sites, size_t n, struct patch_op *ops)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (site_needs_retarget(sites[i]))
			op_for(&ops[k++], sites[i], 1);
	return k;
}

/* The ops a batch of list changes needs: toggles fill ops from the
 * front, retargets from the back of its cap entries, one op per site at
 * most; fill_done moves the retargets to follow the toggles. */
struct op_fill {
	struct patch_op *ops;
	size_t cap, toggles, retargets;
};

/* The op, if any, for site s whose list went from old to new: switched
 * on (its first consumer), off (its last one gone), or retargeted (it
 * stays on, and its consumers now want the other stub). */
static void fill_site(struct op_fill *f, struct site *s, const struct consumer_list *old,
		      const struct consumer_list *new)
{
	if (s->gone)
		return; /* its object was unloaded: its bytes are not ours */
	if (!old && new)
		op_for(&f->ops[f->toggles++], s, 1);
	else if (!new && s->enabled)
		op_for(&f->ops[f->toggles++], s, 0);
	else if (site_needs_retarget(s))
		op_for(&f->ops[f->cap - ++f->retargets], s, 1);
}

static size_t fill_done(struct op_fill *f)
{
	memmove(f->ops + f->toggles, f->ops + f->cap - f->retargets, f->retargets * sizeof(*f->ops));
	return f->toggles + f->retargets;
}

/* Apply ops on entry sites, and on the exit sites of their functions in
 * the same batch (still 3 core syncs).  exits_live, which tells dispatch
 * not to hijack the return, is cleared before a batch that turns exits
 * off and set after one that turned them on: a call entered in between
 * hijacks its return, which is always right.  A call entered while they
 * were live and still running when they go off loses its exit (its
 * frame is closed as unwound later); exits go off only with the entry,
 * when no consumer is left on the site, so no handler misses its call.
 * ops[0..toggles) switch sites on or off, with their exit sites;
 * ops[toggles..n) retarget sites that stay on (retarget_ops).  After a
 * failure the stub a site names may be either: both serve it right, and
 * the next change reads which from the code.  The patcher sorts ops in
 * place: after the call, their order says nothing. */
static int apply_batch(struct patch_op *ops, size_t toggles, size_t n)
{
	size_t total = n;

	for (size_t i = 0; i < toggles; i++)
		total += ops[i].site->exit_cnt;
	if (total == n)
		return patch_batch_apply(ops, n);
	struct patch_op *all = malloc(total * sizeof(*all));
	if (!all)
		return -ENOMEM;
	memcpy(all, ops, n * sizeof(*all));
	for (size_t i = 0, k = n; i < toggles; i++) {
		struct site *s = ops[i].site;
		for (uint32_t j = 0; j < s->exit_cnt; j++)
			op_for(&all[k++], s->exits[j], ops[i].want_call);
		if (s->exit_cnt && !ops[i].want_call)
			atomic_store(&s->exits_live, 0);
	}
	int err = patch_batch_apply(all, total);
	for (size_t i = 0; !err && i < toggles; i++)
		if (ops[i].site->exit_cnt && ops[i].want_call)
			atomic_store(&ops[i].site->exits_live, 1);
	free(all);
	return err;
}


/* Can every site end its calls without hijacking a return (CET)?  An
 * entry-only site never hijacks one. */
static int all_have_exits(struct site *const *sites, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!sites[i]->exit_cnt && !sites[i]->entry_only)
			return 0;
	return 1;
}

/* A field of a caller's opts, or 0 if its struct ends before it. */
#define OPTS_GET(opts, field) \
	((opts)->sz >= offsetof(struct needle_attach_opts, field) + sizeof((opts)->field) ? (opts)->field : 0)

static void extras_of(const struct needle_attach_opts *opts, struct consumer_extras *x)
{
	x->thread_data_size = (uint32_t)OPTS_GET(opts, thread_data_size);
	x->call_data_size = (uint32_t)OPTS_GET(opts, call_data_size);
	x->thread_exit = OPTS_GET(opts, thread_exit);
	x->thread_fork = OPTS_GET(opts, thread_fork);
	x->context_switch = OPTS_GET(opts, context_switch);
	x->direct_entry = OPTS_GET(opts, direct_entry);
	x->direct_exit = OPTS_GET(opts, direct_exit);
}

/* The part of opts that names functions (needle_attach, needle_link_update). */
static int check_functions(const struct needle_attach_opts *opts)
{
	if (!opts || opts->sz < offsetof(struct needle_attach_opts, flags) + sizeof(opts->flags))
		return -EINVAL;
	if (!opts->pattern_cnt && !opts->addr_cnt)
		return -EINVAL;
	if ((opts->pattern_cnt && !opts->patterns) || (opts->addr_cnt && !opts->addrs))
		return -EINVAL;
	return 0;
}

static int check_opts(const struct needle_attach_opts *opts, struct needle_link **link)
{
	if (!link || check_functions(opts))
		return -EINVAL;
	if (OPTS_GET(opts, thread_data_size) > 1024 || OPTS_GET(opts, call_data_size) > 256)
		return -EINVAL;
	if (opts->sz > sizeof(*opts)) {
		/* A newer caller: fields we do not know must be zero. */
		for (size_t i = sizeof(*opts); i < opts->sz; i++)
			if (((const char *)opts)[i])
				return -EOPNOTSUPP;
	}
	if (opts->flags & ~(NEEDLE_ATTACH_EXCLUSIVE | NEEDLE_ATTACH_ENTRY_ONLY))
		return -EINVAL;
	/* Entry only: the direct entry alone, which the full path calls too
	 * (dispatch.c's run_entry). */
	if (opts->flags & NEEDLE_ATTACH_ENTRY_ONLY)
		return OPTS_GET(opts, direct_entry) && !opts->entry && !opts->exit && !OPTS_GET(opts, direct_exit) &&
				       !OPTS_GET(opts, thread_data_size) && !OPTS_GET(opts, call_data_size) &&
				       !OPTS_GET(opts, thread_exit) && !OPTS_GET(opts, thread_fork) &&
				       !OPTS_GET(opts, context_switch)
			       ? 0
			       : -EINVAL;
	if (!opts->entry && !opts->exit)
		return -EINVAL;
	/* Direct handlers: each beside the ordinary one that runs when it
	 * declines; a direct exit only with a direct entry (an entry-only
	 * link, a counter, may have a direct entry alone). */
	if ((OPTS_GET(opts, direct_entry) && !opts->entry) ||
	    (OPTS_GET(opts, direct_exit) && (!opts->exit || !OPTS_GET(opts, direct_entry))))
		return -EINVAL;
	return 0;
}

static int no_sites_error(void)
{
	pr_warn("the process has no patchable function entries: build the program with "
		"-fpatchable-function-entry=5 (gcc or clang), or with -pg -mfentry -mnop-mcount "
		"(gcc, non-PIE), or -pg -mfentry\n");
	return -ENOEXEC;
}

/* Give s a new consumer list (release: pairs with dispatch's acquire
 * load) and let the entry trampoline try the direct path there again: a
 * decline that held for the old list may not hold for the new one
 * (dispatch_direct.c).  Returns the old list. */
static struct consumer_list *site_swap_consumers(struct site *s, struct consumer_list *list)
{
	struct consumer_list *old = atomic_exchange_explicit(&s->consumers, list, memory_order_acq_rel);
	/* An entry-only site's never goes: the direct paths hook returns. */
	atomic_store_explicit(&s->direct_skip, s->entry_only, memory_order_relaxed);
	atomic_store_explicit(&s->direct_graph, 0, memory_order_relaxed);
	return old;
}

/* Swap each site's consumer list; olds[i] keeps the previous list so that
 * a failed batch can be undone.  Fills ops (n entries) with sites changing
 * state: *toggles switched on or off, then the sites retargeted, *op_cnt
 * in all. */
static int publish(struct site **sites, size_t n, struct consumer *c, int adding,
		   struct consumer_list **olds, struct patch_op *ops, size_t *toggles, size_t *op_cnt)
{
	struct op_fill fill = { .ops = ops, .cap = n };

	for (size_t i = 0; i < n; i++) {
		struct site *s = sites[i];
		struct consumer_list *old = atomic_load(&s->consumers), *new;
		int err = 0;
		new = adding ? consumer_list_add(old, c) : consumer_list_remove(old, c, &err);
		if ((adding && !new) || err) {
			for (size_t j = 0; j < i; j++) {
				consumer_list_retire(site_swap_consumers(sites[j], olds[j]));
			}
			return -ENOMEM;
		}
		olds[i] = old;
		site_swap_consumers(s, new);
		fill_site(&fill, s, old, new);
	}
	*toggles = fill.toggles;
	*op_cnt = fill_done(&fill);
	return 0;
}

static int synchronize_and_reclaim(void)
{
	int err = rcu_synchronize();

	if (err)
		return err;
	consumer_list_reclaim();
	/* Code maps replaced before the grace period: no entry reads them. */
	code_map_reclaim();
	for (size_t i = 0; i < pending_cnt; i++)
		consumer_destroy(pending[i]);
	pending_cnt = 0;
	return 0;
}

/* The consumer's slot is reused only after a grace period. */
static int defer_destroy(struct consumer *c)
{
	if (pending_cnt == pending_cap) {
		size_t cap = pending_cap ? pending_cap * 2 : 64;
		struct consumer **p = realloc(pending, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		pending = p;
		pending_cap = cap;
	}
	pending[pending_cnt++] = c;
	return 0;
}

/* Attach to sites[0..cnt) (a malloc'ed array the link takes over, also on
 * failure).  Caller holds the control mutex.  Returns cnt or -errno. */
static int link_attach_sites_locked(struct site **sites, size_t cnt, needle_entry_fn entry, needle_exit_fn exit,
			     void *user_data, uint32_t flags, const struct consumer_extras *extras,
			     struct needle_link **out)
{
	struct consumer_list **olds = NULL;
	struct patch_op *ops = NULL;
	struct needle_link *link = NULL;
	struct consumer *c = NULL;
	size_t op_cnt, toggles;
	int err = 0;

	for (size_t i = 0; i < cnt && (flags & NEEDLE_ATTACH_EXCLUSIVE); i++)
		if (atomic_load(&sites[i]->consumers)) {
			pr_warn("%s is already traced by another link\n", sites[i]->func.name);
			err = -EBUSY;
			goto out;
		}
	if (exit && !dispatch_returns_hookable() && !all_have_exits(sites, cnt)) {
		pr_warn("CET shadow stacks are enabled in this process: exit handlers would need to "
			"hijack returns, which the shadow stack forbids; attach entry handlers only, build "
			"with exit sites (gcc -pg -mfentry -mnop-mcount -minstrument-return=nop5 "
			"-mrecord-return, or clang -fxray-instrument), or run the program with "
			"GLIBC_TUNABLES=glibc.cpu.x86_shstk=off\n");
		err = -EOPNOTSUPP;
		goto out;
	}
	for (size_t i = 0; i < cnt; i++) {
		if (sites[i]->unusable) {
			pr_warn("%s cannot be traced: its entry could not be prepared (see above)\n",
				sites[i]->func.name);
			err = -EDEADLK;
			goto out;
		}
		if (!sites[i]->stub) {
			pr_warn("%s cannot be traced: its object has no stub memory\n", sites[i]->func.name);
			err = -ENOMEM;
			goto out;
		}
	}
	link = calloc(1, sizeof(*link));
	olds = malloc((cnt ? cnt : 1) * sizeof(*olds));
	ops = malloc((cnt ? cnt : 1) * sizeof(*ops));
	if (!link || !olds || !ops) {
		err = -ENOMEM;
		goto out;
	}
	if (!(c = consumer_create(entry, exit, user_data, extras, &err))) {
		if (err == -ENOSPC)
			pr_warn("too many links (at most %d), handler pairs, or per-thread storage in use "
				"(at most %d bytes)\n", CONSUMER_MAX, THREAD_DATA_BYTES - THREAD_DATA_HEADER);
		goto out;
	}
	if ((err = publish(sites, cnt, c, 1, olds, ops, &toggles, &op_cnt)))
		goto out;
	if ((err = apply_batch(ops, toggles, op_cnt))) {
		/* Undo: the lists go back, sites this batch turned on (those
		 * on with no list now) go off, and the others name the stub
		 * their old lists want.  Found from the sites, not from ops,
		 * which the patcher reordered. */
		for (size_t i = 0; i < cnt; i++)
			consumer_list_retire(site_swap_consumers(sites[i], olds[i]));
		size_t n = 0;
		for (size_t i = 0; i < cnt; i++)
			if (!olds[i] && sites[i]->enabled && !sites[i]->gone)
				op_for(&ops[n++], sites[i], 0);
		apply_batch(ops, n, n + retarget_ops(sites, cnt, ops + n));
		goto out;
	}
	for (size_t i = 0; i < cnt; i++)
		consumer_list_retire(olds[i]);
	/* Retired lists are freed by the next grace period; bound the backlog. */
	if (consumer_list_retired_count() > 65536)
		synchronize_and_reclaim();
	link->consumer = c;
	link->sites = sites;
	link->site_cnt = cnt;
	link->attached = 1;
	sites = NULL;
	*out = link;
	c = NULL;
	link = NULL;
	err = (int)(*out)->site_cnt;
out:
	if (c) {
		/* A failed batch published c's lists for a while: a thread may
		 * have read them.  Its slot (and solo list) go back only after a
		 * grace period: now, or, when none can complete here (an attach
		 * from inside a handler: -EDEADLK), at the next that does. */
		consumer_retire(c);
		if (defer_destroy(c))
			pr_warn("out of memory: a failed attach's consumer slot is not reused\n");
		else if (synchronize_and_reclaim())
			pr_debug("a failed attach's consumer waits for the next grace period\n");
	}
	free(link);
	free(olds);
	free(ops);
	free(sites);
	return err;
}

/* Make the link trace exactly sites[0..cnt) (array taken over): sites it
 * gains and loses change in one patch batch, followed by a grace period.
 * Its consumer stays, so calls in flight on any site keep their exits. */
static int link_update_sites_locked(struct needle_link *link, struct site **sites, size_t cnt)
{
	uint32_t total = site_table_count();
	uint8_t *was = calloc(total ? total : 1, 1), *now = calloc(total ? total : 1, 1);
	size_t cap = link->site_cnt + cnt + 1, op_cnt = 0, old_cnt = 0;
	struct patch_op *ops = malloc(cap * sizeof(*ops));
	struct consumer_list **olds = malloc(cap * sizeof(*olds));
	struct site **touched = malloc(cap * sizeof(*touched));
	struct op_fill fill = { .ops = ops, .cap = cap };
	int err = 0;

	if (!was || !now || !ops || !olds || !touched || !link->attached) {
		err = link->attached ? -ENOMEM : -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < link->site_cnt; i++)
		was[link->sites[i]->func.site_id] = 1;
	for (size_t i = 0; i < cnt; i++)
		now[sites[i]->func.site_id] = 1;
	/* Sites gained, then sites lost: new lists published, and the sites
	 * whose first consumer arrives or last one leaves go in one batch. */
	size_t traced = 0;
	for (size_t i = 0; i < cnt; i++)
		traced += !(sites[i]->unusable || sites[i]->gone || !sites[i]->stub);
	for (int adding = 1; adding >= 0 && !err; adding--) {
		size_t n = adding ? cnt : link->site_cnt;
		for (size_t i = 0; i < n; i++) {
			struct site *s = adding ? sites[i] : link->sites[i];
			if (adding ? was[s->func.site_id] : now[s->func.site_id])
				continue;
			if (s->unusable || s->gone || !s->stub)
				continue;
			struct consumer_list *old = atomic_load(&s->consumers), *new;
			int lerr = 0;
			new = adding ? consumer_list_add(old, link->consumer) : consumer_list_remove(old, link->consumer, &lerr);
			if ((adding && !new) || lerr) {
				err = -ENOMEM;
				break;
			}
			site_swap_consumers(s, new);
			olds[old_cnt] = old;
			touched[old_cnt++] = s;
			fill_site(&fill, s, old, new);
		}
	}
	op_cnt = fill_done(&fill);
	if (!err)
		err = apply_batch(ops, fill.toggles, op_cnt);
	if (err) {
		/* Undo: every touched site gets its old list back (the new ones
		 * are retired), so the link stays exactly on the sites it had;
		 * a site this batch already turned off keeps being served by
		 * the trampoline, harmless. */
		for (size_t i = 0; i < old_cnt; i++)
			consumer_list_retire(site_swap_consumers(touched[i], olds[i]));
	} else {
		for (size_t i = 0; i < old_cnt; i++)
			consumer_list_retire(olds[i]);
		free(link->sites);
		link->sites = sites;
		link->site_cnt = cnt;
		sites = NULL;
		err = (int)traced;
	}
	synchronize_and_reclaim();
out:
	free(was);
	free(now);
	free(ops);
	free(olds);
	free(touched);
	free(sites);
	return err;
}

static int link_set_handlers_locked(struct needle_link *link, needle_entry_fn entry, needle_exit_fn exit)
{
	if (exit && !dispatch_returns_hookable() && !all_have_exits(link->sites, link->site_cnt))
		return -EOPNOTSUPP;
	int err = consumer_set_ops(link->consumer, entry, exit);

	/* New handlers may take the direct path where the old declined. */
	for (size_t i = 0; !err && i < link->site_cnt; i++) {
		atomic_store_explicit(&link->sites[i]->direct_skip, link->sites[i]->entry_only, memory_order_relaxed);
		atomic_store_explicit(&link->sites[i]->direct_graph, 0, memory_order_relaxed);
	}
	if (!err)
		err = synchronize_and_reclaim();
	/* Entry only now, or no longer: the sites it is alone on jump to
	 * the stub that serves them fastest.  Either stub serves them right,
	 * so a batch that cannot be made leaves them slower, not wrong; and
	 * none is tried where the grace period could not be (a handler's
	 * own call). */
	struct patch_op *ops = err ? NULL : malloc((link->site_cnt ? link->site_cnt : 1) * sizeof(*ops));
	if (ops) {
		size_t n = retarget_ops(link->sites, link->site_cnt, ops);
		if (n)
			apply_batch(ops, 0, n);
		free(ops);
	}
	return err;
}

static int attach_locked(const struct needle_attach_opts *opts, struct needle_link **out)
{
	struct site_set set = { 0 };
	int err = refresh_locked();

	if (err < 0)
		return err;
	if (!site_table_count())
		return no_sites_error();
	err = resolve(opts, &set);
	free(set.member);
	if (err) {
		free(set.v);
		return err;
	}
	struct consumer_extras extras;
	extras_of(opts, &extras);
	return link_attach_sites_locked(set.v, set.cnt, opts->entry, opts->exit, opts->user_data,
					opts->flags, &extras, out);
}

NEEDLE_API int needle_attach(const struct needle_attach_opts *opts, struct needle_link **link)
{
	int err = check_opts(opts, link);

	if (err)
		return err;
	if ((err = control_lock()))
		return err;
	err = attach_locked(opts, link);
	control_unlock();
	return err;
}

static int detach_locked(struct needle_link *link, int sync)
{
	struct consumer_list **olds = malloc((link->site_cnt ? link->site_cnt : 1) * sizeof(*olds));
	struct patch_op *ops = malloc((link->site_cnt ? link->site_cnt : 1) * sizeof(*ops));
	size_t op_cnt, toggles;
	int err;

	if (!olds || !ops) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = publish(link->sites, link->site_cnt, link->consumer, 0, olds, ops, &toggles, &op_cnt)))
		goto out;
	for (size_t i = 0; i < link->site_cnt; i++)
		consumer_list_retire(olds[i]);
	link->attached = 0;
	link->detached_gp = rcu_grace_periods();
	/* Frames hijacked for this link from now on skip its exit handler. */
	consumer_retire(link->consumer);
	/* A failed batch leaves sites calling the trampoline with no consumer:
	 * slower, still correct.  Report it. */
	err = apply_batch(ops, toggles, op_cnt);
	if (defer_destroy(link->consumer)) {
		int serr = rcu_synchronize();
		if (!serr)
			consumer_destroy(link->consumer);
		err = err ? err : serr;
	} else if (sync) {
		int serr = synchronize_and_reclaim();
		err = err ? err : serr;
	}
	link->consumer = NULL;
out:
	free(olds);
	free(ops);
	return err;
}

static int detach(struct needle_link *link, int sync)
{
	int err;

	if (!link)
		return -EINVAL;
	if ((err = control_lock()))
		return err;
	err = link->attached ? detach_locked(link, sync) : -ENOENT;
	control_unlock();
	return err;
}

NEEDLE_API int needle_link_detach(struct needle_link *link)
{
	return detach(link, 1);
}

NEEDLE_API int needle_link_detach_nosync(struct needle_link *link)
{
	return detach(link, 0);
}

NEEDLE_API int needle_sync(void)
{
	int err = control_lock();

	if (err)
		return err;
	err = synchronize_and_reclaim();
	control_unlock();
	return err;
}

NEEDLE_API int needle_link_destroy(struct needle_link *link)
{
	int err;

	if (!link)
		return 0;
	if (link->attached) {
		err = needle_link_detach(link);
		/* Still attached (the new consumer lists could not be
		 * allocated): its handlers keep running, so the link and
		 * whatever they use must stay. */
		if (link->attached)
			return err;
	}
	/* Detached without a grace period (detach_nosync, or a detach called
	 * from a handler): wait for one now, or keep the link. */
	if (rcu_grace_periods() <= link->detached_gp) {
		if ((err = needle_sync()))
			return err;
	}
	free(link->sites);
	free(link);
	return 0;
}

NEEDLE_API int needle_link_update(struct needle_link *link, const struct needle_attach_opts *opts)
{
	struct site_set set = { 0 };
	int err;

	if (!link || check_functions(opts))
		return -EINVAL;
	if ((err = control_lock()))
		return err;
	if (!link->attached) {
		err = -ENOENT;
		goto out;
	}
	if ((err = refresh_locked()) < 0)
		goto out;
	err = resolve(opts, &set);
	free(set.member);
	if (err) {
		free(set.v);
		goto out;
	}
	err = link_update_sites_locked(link, set.v, set.cnt);
out:
	control_unlock();
	return err;
}

NEEDLE_API int needle_link_set_handlers(struct needle_link *link, needle_entry_fn entry, needle_exit_fn exit)
{
	int err;

	if (!link)
		return -EINVAL;
	if ((err = control_lock()))
		return err;
	/* (NULL, NULL): only an entry-only link's own pair, which gives it
	 * its direct entry back (consumer_set_ops). */
	if (!link->attached)
		err = -ENOENT; /* detached: no consumer to give handlers */
	else if (!entry && !exit && !consumer_entry_only(link->consumer))
		err = -EINVAL;
	else
		err = link_set_handlers_locked(link, entry, exit);
	control_unlock();
	return err;
}

NEEDLE_API int needle_link_site_count(const struct needle_link *link)
{
	return link ? (int)link->site_cnt : -EINVAL;
}
