/* trigger.c - what asks `needle record --snapshot` for a snapshot from
 * inside the program: --trigger 'FUNC' (FUNC was entered) and --trigger
 * 'FUNC>DURATION' (a call of FUNC took longer than DURATION).
 *
 * A trigger costs only FUNC's calls.  Where the recorder's
 * function_graph link traces FUNC, the recorder times the call itself
 * (trigger_fold publishes which sites, recorder.c and recorder_direct.c
 * read the entry clock into the thread's stack of timed calls and
 * compare at the exit): one compare on the path the call takes anyway,
 * the direct one included.  Where it does not (a function the filters
 * leave out, the function tracer), the trigger is a link of its own on
 * those functions, reading the clock at entry (the call's cookie) and
 * comparing at exit.  A trigger that fires fills in the buffer header's
 * trigger_* fields, bumps snapshot_requests and wakes needle record with
 * one futex wake: the only system calls of snapshot mode, made by the
 * thread whose call fired.  The snapshot itself is copied by needle
 * record, never by the traced thread.  A trigger that fired less than
 * the minimum interval ago (the clock value of the last one, compared
 * and swapped) stays silent, so a storm of slow calls costs a compare
 * each.
 *
 * Invariant: the triggers are read before the recorder selects its sites
 * (trigger_parse; select_sites asks trigger_matches), folded after its
 * link is attached and each time its sites change (trigger_fold, under
 * the recorder's config_lock), and stopped before the link is destroyed
 * (trigger_stop).  The links use nothing of the agent but the public
 * API. */
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/base/log.h"
#include "agent/record/trigger.h"
#include "common/shm_layout.h"
#include "common/tsc.h"
#include "needle.h"

#define TRIGGER_MAX 16

struct trigger {
	char *glob;
	uint64_t threshold; /* clock units; 0 for an entry trigger */
	/* Its functions the recorder does not time, and their link. */
	uint64_t *own_addrs;
	size_t own_cnt;
	struct needle_link *link;
};

static struct trigger triggers[TRIGGER_MAX];
static int trigger_cnt;
static struct shm_header *tshm;
static uint32_t image_no; /* this program's image (shm_chunk.image) */
static int clock_is_tsc;
static uint64_t min_gap;                  /* clock units between two requests */
static uint64_t after;                    /* --trigger-after, clock units */
static _Atomic uint64_t last_fired;      /* clock value of the last request */
static _Atomic int fired_once;
const struct trigger_table *_Atomic trigger_folded;

static inline uint64_t clock_now(void)
{
	return clock_is_tsc ? tsc_read() : monotonic_ns();
}

uint64_t trigger_clock(void)
{
	return clock_now();
}

/* Clock units per nanosecond, from 2 ms of both clocks. */
static double clock_per_ns(void)
{
	if (!clock_is_tsc)
		return 1.0;
	uint64_t t0 = tsc_read(), n0 = monotonic_ns(), n1;
	while ((n1 = monotonic_ns()) - n0 < 2000000)
		;
	return (double)(tsc_read() - t0) / (double)(n1 - n0);
}

/* Fill in the request and wake needle record. */
static void announce(uint32_t kind, uint32_t site, uint64_t now, uint64_t duration)
{
	tshm->trigger_kind = kind;
	tshm->trigger_site = site;
	tshm->trigger_image = image_no;
	tshm->trigger_tid = (uint32_t)gettid();
	tshm->trigger_raw = now;
	tshm->trigger_duration = duration;
	/* The past stops turning over once --trigger-after has passed, so
	 * that it waits for needle record's copy however late that comes. */
	uint64_t zero = 0;
	atomic_compare_exchange_strong(&tshm->freeze_at, &zero, (now + after) | 1);
	/* Release: the fields above before the count that announces them
	 * (needle record loads it with acquire). */
	atomic_fetch_add_explicit(&tshm->snapshot_requests, 1, memory_order_release);
	atomic_fetch_add(&tshm->wake_word, 1);
	syscall(SYS_futex, &tshm->wake_word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void trigger_fire(uint32_t kind, uint32_t site, uint64_t now, uint64_t duration)
{
	uint64_t last = atomic_load_explicit(&last_fired, memory_order_relaxed);

	if (atomic_load_explicit(&fired_once, memory_order_relaxed) && now - last < min_gap)
		return;
	if (!atomic_compare_exchange_strong(&last_fired, &last, now))
		return; /* another thread fired just now */
	atomic_store_explicit(&fired_once, 1, memory_order_relaxed);
	announce(kind, site, now, duration);
}

/* A function needle can trace (the site exists and was prepared). */
static int site_traceable(uint32_t id)
{
	struct needle_site_info info = { .sz = sizeof(info) };
	return !needle_site_info(id, &info) && info.traceable;
}

void trigger_init(struct shm_header *shm, uint32_t image)
{
	tshm = shm;
	image_no = image;
	clock_is_tsc = shm->clock_source == CLOCK_SOURCE_TSC;
}

int trigger_snapshot_now(void)
{
	if (!tshm || !tshm->snapshot_mode)
		return -EOPNOTSUPP;
	announce(SNAPSHOT_CTL, 0, clock_now(), 0);
	return 0;
}

static int on_entered(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)cookie;
	(void)data;
	trigger_fire(SNAPSHOT_ENTERED, ctx->func->site_id, clock_now(), 0);
	return NEEDLE_SKIP_EXIT;
}

static int duration_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)data;
	*cookie = clock_now();
	return 0;
}

static void duration_exit(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	const struct trigger *t = data;
	uint64_t now = clock_now();

	/* A call ended by an unwind (longjmp, an exception) counts too, up
	 * to where the unwind was seen: a slow request may end that way. */
	if (now - cookie > t->threshold)
		trigger_fire(SNAPSHOT_DURATION, ctx->func->site_id, now, now - cookie);
}

/* The traceable functions nearest to name (edit distance), for the
 * message about a trigger that matches nothing. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return (size_t)-1;
	size_t row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			best = up + 1 < best ? up + 1 : best;
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

static void suggest(const char *pattern, char *out, size_t len)
{
	const char *best[3] = { NULL, NULL, NULL };
	size_t bestd[3] = { (size_t)-1, (size_t)-1, (size_t)-1 };
	int total = needle_site_count();

	for (int id = 0; id < total; id++) {
		struct needle_site_info info = { .sz = sizeof(info) };
		if (needle_site_info((uint32_t)id, &info) || !info.traceable)
			continue;
		size_t d = distance(pattern, info.name);
		for (int k = 0; k < 3; k++) {
			if (best[k] && !strcmp(best[k], info.name))
				break;
			if (d < bestd[k]) {
				for (int m = 2; m > k; m--) {
					best[m] = best[m - 1];
					bestd[m] = bestd[m - 1];
				}
				best[k] = info.name;
				bestd[k] = d;
				break;
			}
		}
	}
	int off = 0;
	*out = 0;
	for (int k = 0; k < 3 && best[k] && bestd[k] <= strlen(pattern) / 2 + 2; k++)
		off += snprintf(out + off, len - (size_t)off, "%s%s", off ? ", " : "; did you mean ", best[k]);
}

int trigger_parse(const char *spec, uint64_t min_gap_ns, uint64_t after_ns, char *why, size_t whylen)
{
	char *copy = strdup(spec), *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	double per_ns = clock_per_ns();
	min_gap = (uint64_t)((double)min_gap_ns * per_ns);
	after = (uint64_t)((double)after_ns * per_ns);
	int total = needle_site_count();
	for (char *line = strtok_r(copy, "\n", &save); line && !err; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		if (!tab || trigger_cnt == TRIGGER_MAX) {
			snprintf(why, whylen, "too many triggers (at most %d)", TRIGGER_MAX);
			err = -EINVAL;
			break;
		}
		*tab = 0;
		uint64_t ns = strtoull(tab + 1, NULL, 10);
		int found = 0;
		for (int id = 0; id < total && !found; id++)
			found = needle_site_match((uint32_t)id, line) == 1 && site_traceable((uint32_t)id);
		if (!found) {
			char near[256];
			suggest(line, near, sizeof(near));
			snprintf(why, whylen, "--trigger: no traceable function matches '%s'%s", line, near);
			err = -ENOENT;
			break;
		}
		struct trigger *t = &triggers[trigger_cnt];
		*t = (struct trigger){ .glob = strdup(line), .threshold = (uint64_t)((double)ns * per_ns) };
		if (!t->glob) {
			err = -ENOMEM;
			break;
		}
		trigger_cnt++;
	}
	free(copy);
	if (err)
		trigger_stop();
	return err;
}

int trigger_matches(uint32_t id)
{
	for (int i = 0; i < trigger_cnt; i++)
		if (needle_site_match(id, triggers[i].glob) == 1)
			return 1;
	return 0;
}

static int id_in(const uint32_t *ids, size_t n, uint32_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ids[lo] == id;
}

/* Replace the published table; the old one is freed once no handler
 * can still be reading it. */
static void publish(struct trigger_table *table)
{
	/* Release: pairs with trigger_folded_site's acquire. */
	const struct trigger_table *old = atomic_exchange_explicit(&trigger_folded, table, memory_order_acq_rel);
	if (old) {
		needle_sync();
		free((void *)old);
	}
}

/* Trigger t on exactly the sites of addrs (malloc'ed; taken): a new link
 * unless it already has these. */
static int relink(struct trigger *t, uint64_t *addrs, size_t cnt, char *why, size_t whylen)
{
	if (t->link && cnt == t->own_cnt && !memcmp(addrs, t->own_addrs, cnt * sizeof(*addrs))) {
		free(addrs);
		return 0;
	}
	if (t->link)
		needle_link_destroy(t->link);
	t->link = NULL;
	free(t->own_addrs);
	t->own_addrs = addrs;
	t->own_cnt = cnt;
	if (!cnt)
		return 0;
	struct needle_attach_opts o = {
		.sz = sizeof(o),
		.addrs = addrs,
		.addr_cnt = cnt,
		.entry = t->threshold ? duration_entry : on_entered,
		.exit = t->threshold ? duration_exit : NULL,
		.user_data = t,
	};
	int err = needle_attach(&o, &t->link);
	if (err < 0) {
		t->link = NULL;
		snprintf(why, whylen, "--trigger '%s': cannot attach (%s)", t->glob, strerror(-err));
		return err;
	}
	return 0;
}

int trigger_fold(const uint32_t *ids, size_t n, char *why, size_t whylen)
{
	if (!trigger_cnt)
		return 0;
	struct trigger_table *table = malloc(sizeof(*table) + n * sizeof(table->site[0]));
	if (!table)
		return -ENOMEM;
	table->cnt = 0;
	size_t folded[TRIGGER_MAX] = { 0 };
	for (size_t k = 0; k < n; k++) {
		struct trigger_site ts = { .id = ids[k] };
		for (int i = 0; i < trigger_cnt; i++) {
			const struct trigger *t = &triggers[i];
			if (needle_site_match(ids[k], t->glob) != 1)
				continue;
			folded[i]++;
			if (!t->threshold)
				ts.on_entry = 1;
			else if (!ts.threshold || t->threshold < ts.threshold)
				ts.threshold = t->threshold;
		}
		if (ts.on_entry || ts.threshold)
			table->site[table->cnt++] = ts;
	}
	publish(table);
	int total = needle_site_count(), err = 0;
	for (int i = 0; i < trigger_cnt && !err; i++) {
		uint64_t *addrs = malloc((total > 0 ? (size_t)total : 1) * sizeof(*addrs));
		size_t cnt = 0;
		if (!addrs)
			return -ENOMEM;
		for (int id = 0; id < total; id++) {
			struct needle_site_info info = { .sz = sizeof(info) };
			if (needle_site_info((uint32_t)id, &info) || !info.traceable || id_in(ids, n, (uint32_t)id) ||
			    needle_site_match((uint32_t)id, triggers[i].glob) != 1)
				continue;
			addrs[cnt++] = info.addr;
		}
		/* NEEDLE_DEBUG=1 shows it: tests read which way a call goes. */
		pr_debug("trigger '%s': %zu functions timed by the recorder, %zu by a link of its own\n",
			 triggers[i].glob, folded[i], cnt);
		err = relink(&triggers[i], addrs, cnt, why, whylen);
	}
	return err;
}

void trigger_stop(void)
{
	publish(NULL);
	for (int i = 0; i < trigger_cnt; i++) {
		if (triggers[i].link)
			needle_link_destroy(triggers[i].link);
		free(triggers[i].own_addrs);
		free(triggers[i].glob);
		triggers[i] = (struct trigger){ 0 };
	}
	trigger_cnt = 0;
}
