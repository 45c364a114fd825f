/* patch_batch.c - the batch protocol of the kernel's text_poke_bp_batch,
 * in user space (see patch_batch.h).  Callers serialize batches with the
 * agent's control mutex. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/patch/core_sync.h"
#include "agent/arch/arch.h"
#include "agent/base/log.h"
#include "agent/patch/patch_batch.h"
#include "agent/patch/sigmask_watch.h"
#include "agent/patch/sleeper_door.h"
#include "agent/sites/site_table.h"
#include "agent/patch/task_list.h"
#include "agent/patch/text_window.h"
#include "agent/patch/thread_stop.h"
#include "agent/patch/trap.h"

static struct patch_stats stats;

static int op_cmp(const void *a, const void *b)
{
	const struct patch_op *x = a, *y = b;
	return x->site->func.site_addr < y->site->func.site_addr ? -1 : x->site->func.site_addr > y->site->func.site_addr;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int open_window(struct patch_op *ops, size_t n, struct text_window *w)
{
	uint64_t *addrs = malloc(n * sizeof(*addrs));
	int err;

	if (!addrs)
		return -ENOMEM;
	qsort(ops, n, sizeof(*ops), op_cmp);
	for (size_t i = 0; i < n; i++)
		addrs[i] = ops[i].site->func.site_addr;
	err = text_window_open(w, addrs, n, 8);
	free(addrs);
	return err;
}

static void mark_enabled(struct patch_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ops[i].site->enabled = ops[i].want_call;
}

static void count_batch(size_t n, uint64_t syncs_before)
{
	stats.batches++;
	stats.last_syncs = core_sync_count() - syncs_before;
	stats.last_sites = n;
}

/* What an int3 batch needs between the gate's close and its open,
 * allocated before the close: a thread that waits at the gate may hold
 * malloc's lock (a handler that interrupted malloc and then blocks
 * signals), so nothing there allocates or frees. */
struct int3_room {
	pid_t *tids;             /* one reading of /proc/self/task */
	size_t cap;
	struct task_list blockers; /* room for cap */
	struct site **sites;     /* the ops' sites, for the stop handlers */
};

static int room_alloc(struct int3_room *r, struct patch_op *ops, size_t n)
{
	long threads = task_count_fast();

	r->cap = (size_t)(threads > 0 ? threads : 64) * 2 + 64;
	r->tids = malloc(r->cap * sizeof(*r->tids));
	r->blockers.tids = malloc(r->cap * sizeof(*r->blockers.tids));
	r->blockers.cnt = 0;
	r->sites = malloc(n * sizeof(*r->sites));
	if (!r->tids || !r->blockers.tids || !r->sites || thread_stop_reserve(r->cap))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		r->sites[i] = ops[i].site;
	return 0;
}

static void room_free(struct int3_room *r)
{
	free(r->tids);
	free(r->blockers.tids);
	free(r->sites);
	memset(r, 0, sizeof(*r));
}

/* 1 if some other thread blocks SIGTRAP: an int3 would kill the process;
 * they are listed in r->blockers, but for those waiting at the gate with
 * every signal blocked, which run nothing until it opens.  -1 if it
 * cannot be told.  *all_block_stop: every such thread also blocks the
 * stop signal (they look like helper threads that block every signal,
 * not program threads with a SIGTRAP-blocking mask). */
static int sigtrap_blocked_now(int *all_block_stop, struct int3_room *r)
{
	size_t cnt = 0;

	*all_block_stop = 0;
	r->blockers.cnt = 0;
	if (task_list_read_into(r->tids, r->cap, &cnt))
		return -1; /* cannot tell: take the safe path */
	*all_block_stop = 1;
	for (size_t i = 0; i < cnt; i++) {
		if (task_blocks_signal(r->tids[i], SIGTRAP) != 1 || sigmask_gate_parked(r->tids[i]))
			continue;
		r->blockers.tids[r->blockers.cnt++] = r->tids[i];
		if (task_blocks_signal(r->tids[i], thread_stop_signal()) != 1)
			*all_block_stop = 0;
	}
	return r->blockers.cnt > 0;
}

/* Threads above which the per-batch /proc scan is skipped when
 * interposition vouches for every mask (NEEDLE_MASK_SCAN_MAX). */
static long mask_scan_max(void)
{
	static long max = -1;
	if (max < 0) {
		const char *env = getenv("NEEDLE_MASK_SCAN_MAX");
		/* Reading one thread's status costs about 12 us here: 64
		 * threads keep a batch under a millisecond. */
		max = env ? atol(env) : 64;
	}
	return max;
}

/* A thread being created runs with every signal blocked for a moment
 * (and runs only the C library's code then, which an int3 batch does not
 * touch: batches with relocated sites stop every thread): look again a
 * few times before concluding that a thread blocks SIGTRAP for good.  Interposition (sigmask_watch.c) sees
 * masks set through the C library in O(1); a raw rt_sigprocmask is seen
 * only in /proc, read before every batch while the process has at most
 * mask_scan_max() threads, so that the batches of a process with 100,000
 * threads stay O(1) in threads. */
static int sigtrap_blocked_somewhere(int *all_block_stop, struct int3_room *r)
{
	int blocked = 0;

	if (!sigmask_may_block_sigtrap()) {
		long threads = task_count_fast();
		if (threads == 1 || threads > mask_scan_max())
			return 0;
	}
	for (int tries = 0; tries < 20; tries++) {
		if ((blocked = sigtrap_blocked_now(all_block_stop, r)) <= 0)
			return blocked;
		struct timespec t = { 0, 500 * 1000 };
		nanosleep(&t, NULL);
	}
	return blocked;
}

/* Stop the threads that block SIGTRAP for the length of an int3 batch
 * that every other thread runs through: only they could die of an int3.
 * 1 when they are stopped (thread_resume_all ends it; the stop handlers
 * read r->sites until then), 0 when the batch may go on without
 * stopping anyone, negative errno when it must not run at all. */
static int stop_blockers(size_t n, struct int3_room *r, int all_block_stop)
{
	pr_info("%zu thread(s) block SIGTRAP: they are stopped while %zu sites are patched\n", r->blockers.cnt, n);
	int err = thread_stop_list(r->sites, n, &r->blockers);
	if (!err)
		return 1;
	if (err != -EDEADLK)
		return err;
	if (sigmask_may_block_sigtrap() || !all_block_stop) {
		pr_warn("cannot patch: a thread blocks SIGTRAP (an int3 would kill the process) "
			"and also blocks needle's stop signal; unblock SIGTRAP in that thread "
			"or attach before it starts\n");
		return err;
	}
	/* Seen only in /proc: a thread that blocks every signal and was
	 * made outside the C library's pthread_create (a runtime's helper
	 * thread: a sanitizer's, a timer's).  Such threads run no program
	 * code; refusing to patch because of them would make needle
	 * unusable in those processes.  The int3 protocol goes on, and the
	 * one risk left is said once. */
	static int warned;
	if (!warned++)
		pr_info("a thread blocks every signal, SIGTRAP included; it is taken for a helper "
			"thread that runs no traced code\n");
	return 0;
}

/* Byte stores, not memcpy: memcpy may be a relocated site of this very
 * batch, and the patcher calls nothing it patches. */
static void code_copy(uint64_t at, const uint8_t *bytes, size_t len)
{
	volatile uint8_t *p = (volatile uint8_t *)at;
	for (size_t i = 0; i < len; i++)
		p[i] = bytes[i];
}

static void write_all(struct patch_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		code_copy(ops[i].site->func.site_addr, ops[i].bytes, ops[i].len);
}

/* Doors for the threads asleep now (sleeper_door.h), made before any
 * thread stops (a door's detour is allocated), and their pages writable
 * in *dw for the batch.  1 if some are ready: thread_stop_all may then
 * leave the threads asleep at them alone. */
static int doors_for_sleepers(struct text_window *dw)
{
	struct task_list list;
	uint64_t *pcs;
	size_t cnt = 0;
	int ok = 0;

	dw->ranges = NULL;
	dw->cnt = 0;
	if (!door_allowed() || trap_install() || task_list_read(&list))
		return 0;
	if ((pcs = malloc((list.cnt + 1) * sizeof(*pcs)))) {
		for (size_t i = 0; i < list.cnt; i++) {
			uint64_t args[6], pc;
			long nr = task_syscall_args(list.tids[i], args, &pc);
			if (nr >= 0 && door_syscall_allowed(nr, args) && !door_prepare(pc))
				pcs[cnt++] = pc;
		}
		qsort(pcs, cnt, sizeof(*pcs), u64_cmp);
		size_t distinct = 0;
		for (size_t i = 0; i < cnt; i++)
			if (!distinct || pcs[distinct - 1] != pcs[i])
				pcs[distinct++] = pcs[i];
		ok = distinct && !text_window_open(dw, pcs, distinct, 1);
		free(pcs);
	}
	task_list_free(&list);
	if (!ok)
		door_open_all(); /* disarms the doors prepared */
	return ok;
}

/* With the other threads stopped, except those asleep behind a door: the
 * doors close first, and a sleeper that woke before its door closed is
 * stopped (thread_stop_woken) before any site changes.  The sites are
 * then rewritten the int3 way, since a handler of the program's may run
 * in a sleeper's place meanwhile: it traps at a site's first byte and is
 * sent past the site (trap.c, want_call 0) or into its stub, rather than
 * run bytes half written. */
static int rewrite_behind_doors(struct patch_op *ops, size_t n, const struct sleepers *asleep)
{
	door_close_all(asleep->pcs, asleep->cnt);
	core_sync(); /* every CPU sees the doors before a sleeper is looked at again */
	int err = thread_stop_woken(asleep);
	if (!err) {
		for (size_t i = 0; i < n; i++)
			*(volatile uint8_t *)ops[i].site->func.site_addr = ARCH_BREAKPOINT;
		core_sync();
		for (size_t i = 0; i < n; i++)
			code_copy(ops[i].site->func.site_addr + 1, ops[i].bytes + 1, ops[i].len - 1u);
		core_sync();
		for (size_t i = 0; i < n; i++)
			*(volatile uint8_t *)ops[i].site->func.site_addr = ops[i].bytes[0];
		core_sync();
	}
	door_open_all();
	return err;
}

/* How many sites one stop rewrites.  A stop keeps every thread from
 * running for as long as it lasts; measured on redis (25,000 relocated
 * sites, four threads asleep behind doors, one held from outside), the
 * rewrite of the int3 way costs about 35 ns a site and the stop itself
 * 0.3-0.5 ms, so a batch is cut into stops of this many sites, each
 * well under a millisecond.  Sites of a batch switch one by one in any
 * case (its last pass writes their first bytes in turn); cut, they do in
 * a few steps. */
#define SITES_PER_STOP 4096

/* One stop: the other threads stopped, those asleep behind a door
 * spared, ops[0..n) rewritten, everyone let go.  The doors' pages stay
 * writable in *dw until the caller closes it after the last stop: a door
 * may share a page with the sites of a later stop, whose protection its
 * closing would give back too early. */
static int rewrite_in_one_stop(struct patch_op *ops, struct site **sites, size_t n, struct text_window *dw)
{
	struct sleepers asleep = { 0 };
	int err;

	int alone = task_count() == 1;
	int doors = !alone && doors_for_sleepers(dw);
	if (alone || !(err = thread_stop_all(sites, n, doors ? &asleep : NULL))) {
		err = 0;
		if (asleep.cnt) {
			err = rewrite_behind_doors(ops, n, &asleep);
		} else {
			write_all(ops, n);
			core_sync();
		}
		if (!alone)
			thread_resume_all();
		if (!err)
			mark_enabled(ops, n);
	}
	if (doors)
		door_open_all(); /* disarms; nothing is closed any more */
	sleepers_free(&asleep);
	return err;
}

/* Stop the other threads, sparing those asleep behind a door, and
 * rewrite: SITES_PER_STOP sites at a time, in address order. */
int patch_rewrite_stopped(struct patch_op *ops, size_t n)
{
	struct text_window w, *dws;
	struct site **sites;
	size_t stops = (n + SITES_PER_STOP - 1) / SITES_PER_STOP;
	uint64_t before = core_sync_count();
	int err = 0;

	if (!n)
		return 0;
	if ((err = open_window(ops, n, &w)))
		return err;
	sites = malloc(n * sizeof(*sites));
	dws = calloc(stops, sizeof(*dws));
	if (!sites || !dws) {
		free(sites);
		free(dws);
		text_window_close(&w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		sites[i] = ops[i].site;
		atomic_store(&ops[i].site->want_call, ops[i].want_call);
	}
	for (size_t k = 0; k < stops && !err; k++) {
		size_t at = k * SITES_PER_STOP;
		err = rewrite_in_one_stop(ops + at, sites + at, n - at < SITES_PER_STOP ? n - at : SITES_PER_STOP,
					  &dws[k]);
	}
	if (!err)
		count_batch(n, before);
	/* The doors' pages first: the sites' window gives every page back
	 * its own protection last. */
	for (size_t k = 0; k < stops; k++)
		text_window_close(&dws[k]);
	free(dws);
	free(sites);
	int cerr = text_window_close(&w);
	return err ? err : cerr;
}

int patch_batch_apply(struct patch_op *ops, size_t n)
{
	struct text_window w;
	uint64_t before = core_sync_count();
	int err;

	if (!n)
		return 0;
	/* A batch with relocated sites runs with every thread stopped or
	 * asleep behind a door.  Switching one on replaces several
	 * instructions: a thread may be between two of them, or a signal
	 * handler may have interrupted it there; the stop handler moves it
	 * into the detour, where the same instructions run (a handler's
	 * interrupted PC is the stop handler's PC, since the stop signal
	 * waits in every handler's mask).  And the functions of the C
	 * library, once sites, run with every signal blocked at times
	 * (create_thread inside pthread_create, between the signal block and
	 * the clone): an int3 there would kill the process, whereas the stop
	 * signal simply waits for the unblock, and a sleeper runs none of
	 * them until its door opens. */
	for (size_t i = 0; i < n; i++)
		if (ops[i].site->form == NEEDLE_FORM_RELOCATED)
			return patch_rewrite_stopped(ops, n);
	int all_block_stop = 0, stopped = 0;
	struct int3_room room = { 0 };
	if ((err = trap_install()) || (err = open_window(ops, n, &w)))
		return err;
	if ((err = room_alloc(&room, ops, n))) {
		room_free(&room);
		text_window_close(&w);
		return err;
	}
	/* Who blocks SIGTRAP is looked at once, below: from then until the
	 * last int3 is gone no thread may start to (sigmask_watch.c). */
	int blocked = sigmask_gate_close() ? -2 : sigtrap_blocked_somewhere(&all_block_stop, &room);
	if (blocked > 0)
		stopped = stop_blockers(n, &room, all_block_stop);
	if (blocked < 0 || stopped < 0) {
		if (blocked != -2)
			sigmask_gate_open();
		room_free(&room);
		text_window_close(&w);
		if (stopped < 0)
			return stopped;
		/* Who blocks SIGTRAP cannot be told (or a thread is slow to
		 * change its mask): every thread stops. */
		pr_info("cannot tell which threads block SIGTRAP: patching %zu sites with threads stopped\n", n);
		return patch_rewrite_stopped(ops, n);
	}
	/* Ordering.  x86-TSO keeps stores in program order for every other
	 * CPU, so want_call is visible before the int3 that makes a thread
	 * read it (trap.c's relaxed load pairs with this store; the compiler
	 * barrier only stops the compiler from reordering the two).  Each
	 * core_sync() is a membarrier that serializes every CPU running one of
	 * our threads: after it, no CPU executes bytes fetched before it.  On
	 * a weakly ordered architecture the store would need release and the
	 * trap handler's load acquire. */
	for (size_t i = 0; i < n; i++) {
		atomic_store_explicit(&ops[i].site->want_call, ops[i].want_call, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst); /* want_call before the int3 */
		*(volatile uint8_t *)ops[i].site->func.site_addr = ARCH_BREAKPOINT;
	}
	core_sync(); /* every CPU sees the int3s before any tail changes */
	for (size_t i = 0; i < n; i++)
		code_copy(ops[i].site->func.site_addr + 1, ops[i].bytes + 1, ops[i].len - 1u);
	core_sync(); /* the tails are in place before any first byte leaves int3 */
	for (size_t i = 0; i < n; i++)
		*(volatile uint8_t *)ops[i].site->func.site_addr = ops[i].bytes[0];
	core_sync(); /* no CPU still runs the int3: the trap handler is done with ops */
	if (stopped)
		thread_resume_all();
	sigmask_gate_open();
	room_free(&room);
	mark_enabled(ops, n);
	count_batch(n, before);
	return text_window_close(&w);
}

void patch_get_stats(struct patch_stats *st)
{
	*st = stats;
}
