/* soak - patch while hit, for a long time: 4 workers call traced
 * functions (256 in the program, 64 in a dlopen'ed object) in a loop,
 * while a controller does a random mix of
 *   - needle_attach of counting entry+exit handlers on random globs, into
 *     one of 4 link slots, and needle_link_detach (or _nosync + sync),
 *   - dlopen/dlclose of the traced object (the object stays loaded unless
 *     --dlclose, which unloads it whenever no link covers it),
 *   - fork: the child calls every traced function, checks the counts,
 *     detaches a link and attaches another, checks again, and exits,
 *   - thread churn: short-lived threads that call traced functions,
 * and at the end checks that every count is exact.
 *
 * Exact counting.  Every call passes a record (struct call) as its
 * argument; a handler adds 1 to the record's entry or exit count of its
 * link's slot, and to its link's own counters.  Each slot has a state word
 * (sequence number, glob, phase) that the controller changes before
 * needle_attach and after it returns, before needle_link_detach and after
 * it returns.  A caller reads the words before and after each call:
 *   - unchanged and attached: the call began after the attach returned and
 *     ended before the detach began, so the slot's handlers ran exactly
 *     once each if the glob covers the function, never otherwise;
 *   - unchanged and detached: they did not run at all (needle_link_detach
 *     guarantees no handler of the link runs after it returns);
 *   - changed: at most one entry, at most as many exits as entries, and
 *     as many if no detach began during the call.
 * In the end, each link's own counters (summed over the links that were
 * in a slot) must equal what callers saw in their records.
 *
 *   soak [SECONDS] [--dlclose]      SOAK_SECONDS, SOAK_SEED, SOAK_DLCLOSE=1
 */
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "needle.h"

#define MAIN_FUNCS 256
#define DL_FUNCS 64
#define FUNCS (MAIN_FUNCS + DL_FUNCS)
#define WORKERS 4
#define SLOTS 4
#define LIVE 0x50a4c0de12345678ull
#define DEAD 0xdeaddeaddeaddeadull

extern long (*const soak_table[MAIN_FUNCS])(long);

enum { DETACHED, ATTACHING, ATTACHED, DETACHING };

/* Globs: sets of 1-2 patterns.  Sets that name functions of the object
 * are used only while it is loaded. */
static const char *const sets[][2] = {
	{ "soak_*" }, { "soak_1*" }, { "soak_2?" }, { "soak_[0-4]" }, { "soak_*7" },
	{ "soak_10?", "soak_3" }, { "soak_25[0-5]" }, { "soak_?" },
	{ "soakdl_*" }, { "soakdl_1*", "soak_5*" }, { "soakdl_[2-3]?" }, { "soak*" },
};
#define SETS (int)(sizeof(sets) / sizeof(sets[0]))
#define FIRST_DL_SET 8
static uint8_t covers[SETS][FUNCS];
static int set_sites_main[SETS], set_sites_dl[SETS];
static char names[FUNCS][24];

struct call {
	uint64_t ip, ret;
	uint8_t entry[SLOTS], exit[SLOTS];
	uint8_t wrong_func, wrong_ret, wrong_kind;
};

struct counter {
	uint64_t magic;
	int slot;
	_Atomic long entries, exits;
};

/* A slot's state: seq << 10 | set << 2 | phase. */
static _Atomic uint64_t slot_state[SLOTS];
static struct needle_link *slot_link[SLOTS];
static struct counter *slot_counter[SLOTS];
static long link_entries[SLOTS], link_exits[SLOTS]; /* summed at each detach */

/* What callers saw. */
struct tally {
	long calls, certain_on, certain_off, uncertain, bad, wrong;
	long entries[SLOTS], exits[SLOTS];
};
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tally others; /* churn threads, merged as they end */
static _Atomic long late_handlers, bad_reports;

static long (*const *_Atomic dl_table)(long);
static pthread_rwlock_t dl_lock = PTHREAD_RWLOCK_INITIALIZER;
static _Atomic int stop;

static inline uint64_t st_phase(uint64_t s) { return s & 3; }
static inline int st_set(uint64_t s) { return (int)((s >> 2) & 0xff); }
static inline uint64_t st_seq(uint64_t s) { return s >> 10; }

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	struct counter *c = data;
	struct call *call = (struct call *)needle_arg(ctx, 0);

	if (c->magic != LIVE)
		atomic_fetch_add(&late_handlers, 1);
	if (ctx->func->ip != call->ip)
		call->wrong_func = 1;
	call->entry[c->slot]++;
	atomic_fetch_add_explicit(&c->entries, 1, memory_order_relaxed);
	*cookie = (uint64_t)(uintptr_t)call;
	return 0;
}

static void on_exit_(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	struct counter *c = data;
	struct call *call = (struct call *)(uintptr_t)cookie;

	if (c->magic != LIVE)
		atomic_fetch_add(&late_handlers, 1);
	if (ctx->is_exit != NEEDLE_EXIT_RETURN)
		call->wrong_kind = 1;
	if (needle_retval(ctx) != call->ret)
		call->wrong_ret = 1;
	call->exit[c->slot]++;
	atomic_fetch_add_explicit(&c->exits, 1, memory_order_relaxed);
}

static void report(const char *who, int f, int slot, uint64_t b, uint64_t a, const struct call *c)
{
	if (atomic_fetch_add(&bad_reports, 1) < 10)
		fprintf(stderr, "soak: %s: %s slot %d: state %llu/%d/%llu -> %llu/%d/%llu, entry %d exit %d\n", who,
			names[f], slot, (unsigned long long)st_seq(b), st_set(b), (unsigned long long)st_phase(b),
			(unsigned long long)st_seq(a), st_set(a), (unsigned long long)st_phase(a), c->entry[slot],
			c->exit[slot]);
}

/* One checked call of function f (index into the program's table, then
 * the object's). */
static void call_checked(struct tally *t, const char *who, int f, long (*fn)(long))
{
	uint64_t before[SLOTS], after[SLOTS];
	struct call c;
	int i = f < MAIN_FUNCS ? f : f - MAIN_FUNCS;

	memset(&c, 0, sizeof(c));
	c.ip = (uint64_t)(uintptr_t)fn;
	c.ret = (uint64_t)(uintptr_t)&c + (uint64_t)i;
	for (int s = 0; s < SLOTS; s++)
		before[s] = atomic_load(&slot_state[s]);
	long r = fn((long)(uintptr_t)&c);
	for (int s = 0; s < SLOTS; s++)
		after[s] = atomic_load(&slot_state[s]);
	t->calls++;
	if ((uint64_t)r != c.ret || c.wrong_func || c.wrong_ret || c.wrong_kind)
		t->wrong++;
	for (int s = 0; s < SLOTS; s++) {
		uint64_t b = before[s], a = after[s];
		int e = c.entry[s], x = c.exit[s], ok;
		t->entries[s] += e;
		t->exits[s] += x;
		if (b == a && st_phase(b) == ATTACHED) {
			int want = covers[st_set(b)][f];
			ok = e == want && x == want;
			t->certain_on += want;
		} else if (b == a && st_phase(b) == DETACHED) {
			ok = !e && !x;
			t->certain_off++;
		} else {
			ok = e <= 1 && x <= e;
			/* Attached during the call, no detach begun: exits match. */
			if (st_phase(a) == ATTACHED && (st_phase(b) == ATTACHING || st_phase(b) == ATTACHED) &&
			    st_seq(a) - st_seq(b) <= 1)
				ok = ok && x == e && e <= covers[st_set(a)][f];
			t->uncertain++;
		}
		if (!ok) {
			t->bad++;
			report(who, f, s, b, a, &c);
		}
	}
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A random call: a function of the object only while it is loaded. */
static void call_random(struct tally *t, const char *who, uint64_t *rng)
{
	int f = (int)(rng_next(rng) % FUNCS);

	if (f < MAIN_FUNCS) {
		call_checked(t, who, f, soak_table[f]);
		return;
	}
	pthread_rwlock_rdlock(&dl_lock);
	long (*const *tab)(long) = atomic_load(&dl_table);
	if (tab)
		call_checked(t, who, f, tab[f - MAIN_FUNCS]);
	pthread_rwlock_unlock(&dl_lock);
}

struct worker {
	pthread_t thread;
	uint64_t rng;
	struct tally t;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		call_random(&w->t, "worker", &w->rng);
	return NULL;
}

static void *churn_main(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg;
	struct tally t;
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < 200; i++)
		call_random(&t, "churn thread", &rng);
	pthread_mutex_lock(&tally_lock);
	others.calls += t.calls;
	others.certain_on += t.certain_on;
	others.certain_off += t.certain_off;
	others.uncertain += t.uncertain;
	others.bad += t.bad;
	others.wrong += t.wrong;
	for (int s = 0; s < SLOTS; s++) {
		others.entries[s] += t.entries[s];
		others.exits[s] += t.exits[s];
	}
	pthread_mutex_unlock(&tally_lock);
	return NULL;
}

/* ---- the controller ---- */

static struct {
	long attaches, detaches, nosync_detaches, attach_fail, detach_fail, count_fail;
	long forks, fork_fail, churn_threads, dlopens, dlcloses, unloads, refreshes;
} ops;
static void *dl_handle;    /* the reference that keeps the object loaded */
static const char *dl_path;
static int dlclose_mode;

static void set_state(int slot, int set, int phase)
{
	uint64_t s = atomic_load(&slot_state[slot]);
	atomic_store(&slot_state[slot], (st_seq(s) + 1) << 10 | (uint64_t)set << 2 | (uint64_t)phase);
}

static int dl_loaded(void)
{
	return atomic_load(&dl_table) != NULL;
}

static int attach_slot(int slot, int set)
{
	const char *pat[2];
	int n = 0;
	for (int i = 0; i < 2 && sets[set][i]; i++)
		pat[n++] = sets[set][i];
	struct counter *c = calloc(1, sizeof(*c));
	c->magic = LIVE;
	c->slot = slot;
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pat, .pattern_cnt = (size_t)n,
					.entry = on_entry, .exit = on_exit_, .user_data = c };
	set_state(slot, set, ATTACHING);
	int r = needle_attach(&o, &slot_link[slot]);
	int want = set_sites_main[set] + (dl_loaded() ? set_sites_dl[set] : 0);
	if (r < 0) {
		if (ops.attach_fail++ < 5)
			fprintf(stderr, "soak: attach of %s%s%s failed: %s\n", pat[0], n > 1 ? ", " : "",
				n > 1 ? pat[1] : "", strerror(-r));
		set_state(slot, set, DETACHED);
		free(c);
		slot_link[slot] = NULL;
		return r;
	}
	if (r != want && ops.count_fail++ < 5)
		fprintf(stderr, "soak: attach of %s traces %d functions, expected %d\n", pat[0], r, want);
	slot_counter[slot] = c;
	set_state(slot, set, ATTACHED);
	ops.attaches++;
	return r;
}

static void detach_slot(int slot, int nosync)
{
	uint64_t s = atomic_load(&slot_state[slot]);
	int r;
	set_state(slot, st_set(s), DETACHING);
	if (nosync) {
		r = needle_link_detach_nosync(slot_link[slot]);
		if (!r)
			r = needle_sync();
		ops.nosync_detaches++;
	} else {
		r = needle_link_detach(slot_link[slot]);
	}
	if (r && ops.detach_fail++ < 5)
		fprintf(stderr, "soak: detach failed: %s\n", strerror(-r));
	set_state(slot, st_set(s), DETACHED);
	struct counter *c = slot_counter[slot];
	link_entries[slot] += atomic_load(&c->entries);
	link_exits[slot] += atomic_load(&c->exits);
	needle_link_destroy(slot_link[slot]);
	/* No handler of this link may run from here on. */
	c->magic = DEAD;
	free(c);
	slot_link[slot] = NULL;
	slot_counter[slot] = NULL;
	ops.detaches++;
}

static int slot_covers_dl(int slot)
{
	uint64_t s = atomic_load(&slot_state[slot]);
	return st_phase(s) == ATTACHED && set_sites_dl[st_set(s)];
}

static int dl_load(void)
{
	void *h = dlopen(dl_path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "soak: dlopen: %s\n", dlerror());
		return -1;
	}
	long (*const *tab)(long) = dlsym(h, "soakdl_table");
	needle_refresh();
	pthread_rwlock_wrlock(&dl_lock);
	dl_handle = h;
	atomic_store(&dl_table, tab);
	pthread_rwlock_unlock(&dl_lock);
	ops.dlopens++;
	return 0;
}

static void dl_op(uint64_t *rng)
{
	if (!dlclose_mode) {
		/* Another reference: the object stays loaded. */
		void *h = dlopen(dl_path, RTLD_NOW);
		needle_refresh();
		if (h) {
			ops.dlopens++;
			dlclose(h);
			ops.dlcloses++;
		}
		return;
	}
	if (!dl_loaded()) {
		dl_load();
		return;
	}
	for (int s = 0; s < SLOTS; s++)
		if (slot_covers_dl(s))
			return; /* unloaded only when no link traces it */
	(void)rng;
	pthread_rwlock_wrlock(&dl_lock);
	atomic_store(&dl_table, NULL);
	dlclose(dl_handle);
	dl_handle = NULL;
	pthread_rwlock_unlock(&dl_lock);
	ops.dlcloses++;
	ops.unloads++;
}

/* In a forked child: every slot is attached or detached (the controller
 * forked), so every call is exact. */
static int child_pass(struct tally *t, int funcs)
{
	long (*const *tab)(long) = atomic_load(&dl_table);
	for (int f = 0; f < funcs; f++) {
		if (f < MAIN_FUNCS)
			call_checked(t, "fork child", f, soak_table[f]);
		else if (tab)
			call_checked(t, "fork child", f, tab[f - MAIN_FUNCS]);
	}
	return t->bad || t->wrong || t->uncertain;
}

static int child_main(uint64_t rng)
{
	struct tally t;
	memset(&t, 0, sizeof(t));
	alarm(60);
	if (child_pass(&t, FUNCS))
		return 1;
	/* Detach one attached link and attach a free slot: grace periods in
	 * a child whose other threads are gone. */
	for (int s = 0; s < SLOTS; s++)
		if (st_phase(atomic_load(&slot_state[s])) == ATTACHED) {
			int r = needle_link_detach(slot_link[s]);
			if (r) {
				fprintf(stderr, "soak: fork child: detach failed: %s\n", strerror(-r));
				return 2;
			}
			set_state(s, st_set(atomic_load(&slot_state[s])), DETACHED);
			break;
		}
	for (int s = 0; s < SLOTS; s++)
		if (st_phase(atomic_load(&slot_state[s])) == DETACHED) {
			int set = (int)(rng_next(&rng) % FIRST_DL_SET);
			if (attach_slot(s, set) < 0)
				return 2;
			break;
		}
	memset(&t, 0, sizeof(t));
	if (child_pass(&t, FUNCS))
		return 3;
	return t.certain_on > 0 ? 0 : 4;
}

static void fork_op(uint64_t *rng)
{
	fflush(stdout);
	fflush(stderr);
	uint64_t child_rng = rng_next(rng) | 1;
	pid_t pid = fork();
	if (pid == 0)
		_exit(child_main(child_rng));
	ops.forks++;
	if (pid < 0) {
		ops.fork_fail++;
		return;
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		if (ops.fork_fail++ < 5)
			fprintf(stderr, "soak: fork child %s %d\n", WIFSIGNALED(st) ? "killed by signal" : "exited",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
}

static void churn_op(uint64_t *rng)
{
	pthread_t t[8];
	int n = 1 + (int)(rng_next(rng) % 8);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, churn_main, (void *)(uintptr_t)(rng_next(rng) | 1)))
			n = i;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	ops.churn_threads += n;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = 20;
	const char *env;
	uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;

	if ((env = getenv("SOAK_SECONDS")) && *env)
		seconds = atof(env);
	if ((env = getenv("SOAK_SEED")) && *env)
		seed = strtoull(env, NULL, 0);
	dlclose_mode = !((env = getenv("SOAK_DLCLOSE")) && *env == '0');
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dlclose"))
			dlclose_mode = 1;
		else
			seconds = atof(argv[i]);
	}
	seed = seed ? seed : 1;
	dl_path = getenv("SOAK_LIB") ? getenv("SOAK_LIB") : SOAK_LIB;
	printf("soak: %.0f s, seed %llu (SOAK_SEED=%llu reproduces the controller's choices), dlclose %s\n",
	       seconds, (unsigned long long)seed, (unsigned long long)seed, dlclose_mode ? "on" : "off");
	fflush(stdout);

	for (int f = 0; f < FUNCS; f++)
		snprintf(names[f], sizeof(names[f]), f < MAIN_FUNCS ? "soak_%d" : "soakdl_%d",
			 f < MAIN_FUNCS ? f : f - MAIN_FUNCS);
	for (int s = 0; s < SETS; s++)
		for (int f = 0; f < FUNCS; f++) {
			for (int i = 0; i < 2 && sets[s][i]; i++)
				covers[s][f] |= !fnmatch(sets[s][i], names[f], 0);
			if (covers[s][f])
				(*(f < MAIN_FUNCS ? &set_sites_main[s] : &set_sites_dl[s]))++;
		}
	for (int s = 0; s < SETS; s++)
		for (int i = 0; i < 2 && sets[s][i]; i++) {
			int hit = 0;
			for (int f = 0; f < FUNCS; f++)
				hit |= !fnmatch(sets[s][i], names[f], 0) && (f < MAIN_FUNCS || s >= FIRST_DL_SET);
			if (!hit || (s < FIRST_DL_SET && set_sites_dl[s])) {
				printf("FAIL: glob set %d is wrong for the program\n", s);
				return 1;
			}
		}
	if (dl_load())
		return 1;
	void *keep = dlclose_mode ? NULL : dl_handle; /* the reference that is never dropped */

	static struct worker workers[WORKERS];
	for (int i = 0; i < WORKERS; i++) {
		workers[i].rng = seed * (2 * (uint64_t)i + 3) | 1;
		pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
	}

	uint64_t rng = seed;
	double start = now_s(), end = start + seconds;
	long rounds = 0;
	while (now_s() < end) {
		unsigned op = (unsigned)(rng_next(&rng) % 100);
		int slot = (int)(rng_next(&rng) % SLOTS);
		uint64_t st = atomic_load(&slot_state[slot]);
		rounds++;
		if (op < 35) {
			if (st_phase(st) == DETACHED) {
				int set = (int)(rng_next(&rng) % (dl_loaded() ? SETS : FIRST_DL_SET));
				attach_slot(slot, set);
			} else {
				detach_slot(slot, op < 12);
			}
		} else if (op < 45) {
			fork_op(&rng);
		} else if (op < 60) {
			churn_op(&rng);
		} else if (op < 72) {
			dl_op(&rng);
		} else if (op < 76) {
			needle_refresh();
			ops.refreshes++;
		} else {
			/* Let the workers run against the current links. */
			struct timespec ts = { 0, (long)(rng_next(&rng) % 2000000) };
			nanosleep(&ts, NULL);
		}
	}
	for (int s = 0; s < SLOTS; s++)
		if (st_phase(atomic_load(&slot_state[s])) == ATTACHED)
			detach_slot(s, 0);
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(workers[i].thread, NULL);
	double took = now_s() - start;

	struct tally all = others;
	for (int i = 0; i < WORKERS; i++) {
		struct tally *t = &workers[i].t;
		all.calls += t->calls;
		all.certain_on += t->certain_on;
		all.certain_off += t->certain_off;
		all.uncertain += t->uncertain;
		all.bad += t->bad;
		all.wrong += t->wrong;
		for (int s = 0; s < SLOTS; s++) {
			all.entries[s] += t->entries[s];
			all.exits[s] += t->exits[s];
		}
	}
	long mismatch = 0, handler_calls = 0;
	for (int s = 0; s < SLOTS; s++) {
		mismatch += all.entries[s] != link_entries[s] || all.exits[s] != link_exits[s];
		handler_calls += link_entries[s] + link_exits[s];
		if (all.entries[s] != link_entries[s] || all.exits[s] != link_exits[s])
			printf("      slot %d: links counted %ld entries %ld exits, callers saw %ld %ld\n", s,
			       link_entries[s], link_exits[s], all.entries[s], all.exits[s]);
	}

	CHECK(1, "soak ran %.1f s (seed %llu): %ld controller rounds, %ld attaches, %ld detaches (%ld nosync+sync), "
		 "%ld forks, %ld churn threads, %ld dlopen / %ld dlclose (%ld unloads), %ld refreshes",
	      took, (unsigned long long)seed, rounds, ops.attaches, ops.detaches, ops.nosync_detaches, ops.forks,
	      ops.churn_threads, ops.dlopens, ops.dlcloses, ops.unloads, ops.refreshes);
	CHECK(all.certain_on > 0 && all.certain_off > 0 && all.calls > 0,
	      "%ld traced calls checked: %ld (call, slot) pairs exact while attached, %ld while detached, "
	      "%ld across a change", all.calls, all.certain_on, all.certain_off, all.uncertain);
	CHECK_EQ(all.bad, 0, "every call's handler counts are within its slot's bounds (exact when the slot did not change)");
	CHECK_EQ(all.wrong, 0, "every call returned its untraced result to the right caller, handlers saw the right function");
	CHECK_EQ(mismatch, 0, "per-link counters equal what the callers saw: %ld handler calls in all", handler_calls);
	CHECK_EQ(atomic_load(&late_handlers), 0, "no handler ran after its link's detach returned");
	CHECK_EQ(ops.attach_fail + ops.count_fail, 0, "every attach succeeded with the expected function count");
	CHECK_EQ(ops.detach_fail, 0, "every detach succeeded");
	CHECK_EQ(ops.fork_fail, 0, "%ld fork children checked their counts, detached and attached, and exited 0", ops.forks);
	struct needle_stats st = { .sz = sizeof(st) };
	needle_get_stats(&st);
	CHECK_EQ(st.sites_enabled, 0, "no site left enabled");
	if (keep)
		dlclose(keep);
	return harness_exit();
}
