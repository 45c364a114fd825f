/* snapshot.c - needle record --snapshot: the flight recorder.
 *
 * In snapshot mode the buffer is a set of overwrite rings: nothing is
 * drained while the program runs, and a thread with no free chunk takes
 * back the oldest chunk published (shm_ring_reclaim), so the buffer
 * always holds the newest events, in bounded memory whatever the number
 * of threads, and the program makes no system call for the recording
 * (its triggers excepted, trigger.c).  A snapshot copies the newest
 * events of every thread into a trace file of its own, readable by every
 * view: OUTPUT.N for the N-th snapshot taken while the program runs, and
 * OUTPUT for the one taken when it ends (or crashes).
 *
 * Consistency.  Producers keep writing while a snapshot copies.  Each
 * chunk is copied under its generation (a seqlock whose write side is the
 * reclaim: odd while a producer rewrites the chunk's header, bumped again
 * when the chunk is its own): the copy is kept only if the generation was
 * even and unchanged across it, and only the events below the fill level
 * loaded (acquire) before the copy, which a producer never rewrites
 * without a reclaim first.  So no event in a snapshot is torn or mixed
 * from two lives of a chunk.  The rule for what is kept: per thread, the
 * chunks whose numbers follow each other up to its newest one (a chunk
 * written over during the copy cuts the thread's window there).  A
 * chunk begins by entering again the calls its thread had open
 * (shm_chunk.before, when the recorder knows the whole stack): the
 * window's first chunk keeps them, flagged CHUNK_ENTERED_BEFORE, so that
 * views nest the window inside those calls and a crash lists its whole
 * stack; the other chunks drop them.  Without them, calls entered before
 * the window have exits without entries.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/record/record.h"
#include "common/tsc.h"

struct chunk_copy {
	struct sec_chunk hdr;
	uint64_t *events;
	uint32_t serial;
	uint32_t image; /* shm_chunk.image: whose site ids */
	uint32_t pid, ppid;
	uint32_t before; /* shm_chunk.before: its first events enter the calls open */
};

static int copy_cmp(const void *a, const void *b)
{
	const struct chunk_copy *x = a, *y = b;
	if (x->serial != y->serial)
		return x->serial < y->serial ? -1 : 1;
	if (x->hdr.tid != y->hdr.tid)
		return x->hdr.tid < y->hdr.tid ? -1 : 1;
	return x->hdr.seq < y->hdr.seq ? -1 : x->hdr.seq > y->hdr.seq;
}

/* Copy chunk idx into *cc (events into room, at least a chunk's
 * capacity).  1 if the copy is whole and from one life of the chunk. */
static int copy_chunk(struct shm_header *h, uint32_t idx, struct chunk_copy *cc, uint64_t *room)
{
	struct shm_chunk *c = shm_chunk_at(h, idx);
	uint32_t cap = shm_chunk_capacity(h);
	/* Acquire pairs with the release fence after a reclaim's bump and
	 * with the release of the bump that ends the rewrite (recorder.c). */
	uint32_t g1 = atomic_load_explicit(&c->gen, memory_order_acquire);

	if ((g1 & 1) || atomic_load_explicit(&c->state, memory_order_acquire) == CHUNK_FREE)
		return 0;
	uint32_t used = atomic_load_explicit(&c->used, memory_order_acquire);
	if (used > cap)
		used = cap;
	cc->hdr = (struct sec_chunk){
		.tid = c->tid,
		.lost_before = c->lost_before,
		.seq = c->seq,
		.base = c->base,
		.event_count = used / 8,
		.open_depth = c->open_depth,
		.serial = c->serial,
	};
	memcpy(cc->hdr.comm, c->comm, sizeof(cc->hdr.comm));
	cc->serial = c->serial;
	cc->image = c->image;
	cc->pid = c->pid;
	cc->ppid = c->ppid;
	/* Written before the fill level that covers them (event_writer.c,
	 * before_enter): only those under the level loaded count. */
	cc->before = c->before < used / 8 ? c->before : used / 8;
	memcpy(room, shm_chunk_events(c), used);
	cc->events = room;
	/* Every load of the copy before the second look at gen: a reclaim
	 * that began during the copy is seen here. */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&c->gen, memory_order_relaxed) == g1;
}

struct snapshot_image {
	struct chunk_copy *v;
	size_t cnt;
	uint64_t *events; /* one chunk's capacity per copy */
	uint64_t dropped;
};

/* Copy every chunk in use, the thread of prio_tid's first (the thread
 * whose call fired a trigger goes on writing while the others are copied,
 * and its newest chunks hold the call), then keep per thread the run of
 * consecutive chunks that ends at its newest. */
static int snapshot_copy(struct shm_header *h, struct snapshot_image *im, uint32_t prio_tid)
{
	uint32_t n = h->chunk_count, cap = shm_chunk_capacity(h);
	size_t words = cap / 8;

	im->cnt = 0;
	im->dropped = 0;
	if (!im->v && (!(im->v = malloc(n * sizeof(*im->v))) || !(im->events = malloc((size_t)n * cap))))
		return -ENOMEM;
	for (int pass = prio_tid ? 0 : 1; pass < 2; pass++) {
		for (uint32_t i = 0; i < n && im->cnt < n; i++) {
			struct shm_chunk *c = shm_chunk_at(h, i);
			struct chunk_copy *cc = &im->v[im->cnt];
			if (atomic_load_explicit(&c->state, memory_order_relaxed) == CHUNK_FREE)
				continue;
			/* The tid read here only orders the passes (the copy's is
			 * checked).  A chunk taken over between the passes may be
			 * copied in both lives, told apart by their numbers; one
			 * taken over by the prio thread is newer than the copy and
			 * is left out. */
			if (prio_tid && (pass == 0) != (c->tid == prio_tid))
				continue;
			if (copy_chunk(h, i, cc, im->events + im->cnt * words))
				im->cnt++;
			else
				im->dropped++;
		}
	}
	if (im->cnt > 1)
		qsort(im->v, im->cnt, sizeof(*im->v), copy_cmp);
	/* Walk each thread's chunks from its newest down; drop those before
	 * a gap. */
	for (size_t end = im->cnt; end > 0;) {
		size_t begin = end - 1;
		while (begin > 0 && im->v[begin - 1].serial == im->v[end - 1].serial &&
		       im->v[begin - 1].hdr.tid == im->v[end - 1].hdr.tid)
			begin--;
		size_t first = end - 1;
		while (first > begin && im->v[first - 1].hdr.seq + 1 == im->v[first].hdr.seq)
			first--;
		for (size_t k = begin; k < first; k++)
			im->v[k].hdr.event_count = UINT32_MAX; /* dropped below */
		/* The window's first chunk keeps the entries of the calls open
		 * where it begins, and says so; the others drop theirs, which
		 * the chunks before them hold as events. */
		for (size_t k = first; k < end; k++) {
			struct chunk_copy *cc = &im->v[k];
			if (k == first && cc->before) {
				cc->hdr.salvaged |= CHUNK_ENTERED_BEFORE;
				cc->hdr.open_depth = cc->before;
			} else {
				cc->events += cc->before;
				cc->hdr.event_count -= cc->before;
			}
		}
		end = begin;
	}
	size_t k = 0;
	for (size_t i = 0; i < im->cnt; i++)
		if (im->v[i].hdr.event_count != UINT32_MAX)
			im->v[k++] = im->v[i];
	im->cnt = k;
	return 0;
}

static struct snapshot_image image;

void record_snapshot_free(void)
{
	free(image.v);
	free(image.events);
	memset(&image, 0, sizeof(image));
}

int record_snapshot(struct recording *r, const struct sec_snapshot *info, int final)
{
	char *path = NULL;
	uint64_t t0 = monotonic_ns();
	/* No chunk turns over while it is copied (a trigger may have frozen
	 * the rings already); the rings turn again once it is done. */
	uint64_t zero = 0;
	atomic_compare_exchange_strong(&r->shm->freeze_at, &zero, 1);
	int err = snapshot_copy(r->shm, &image, info->trigger_tid);
	atomic_store_explicit(&r->shm->freeze_at, 0, memory_order_release);
	uint64_t copy_ns = monotonic_ns() - t0;

	if (err) {
		cli_error("snapshot: out of memory; none written");
		return -1;
	}
	struct recording s = *r;
	if (final) {
		path = strdup(r->o->output);
	} else if (asprintf(&path, "%s.%u", r->o->output, info->number) < 0) {
		path = NULL;
	}
	if (!path) {
		cli_error("snapshot: out of memory; none written");
		return -1;
	}
	/* FILE was checked before the program started (record_snapshot_check);
	 * --force applies to it, not to the numbered ones. */
	if (record_out_open(&s.out, path, final && r->o->force)) {
		free(path);
		return -1; /* said why */
	}
	/* A snapshot taken while the program runs has no end to tell. */
	if (!final)
		s.attached = 0;
	memset(&s.w, 0, sizeof(s.w));
	s.threads = NULL;
	s.thread_cnt = s.thread_cap = 0;
	s.tasks = NULL;
	s.task_slots = NULL;
	s.task_cnt = s.task_cap = s.task_slot_cap = 0;
	s.meta_off = 0; /* every module and site, from the start of the meta file */
	s.images = NULL; /* numbered again as it is read again: the same numbers */
	s.image_cnt = 0;
	s.meta_image = s.next_site = s.next_module = 0;
	s.notes = NULL;
	s.notes_len = 0;
	s.objects = NULL;
	s.objects_len = 0;
	s.drained = 0;
	s.snapshot_lost = 0;
	struct sec_snapshot sec = *info;
	sec.chunks_dropped = image.dropped;
	s.snapshot = &sec;
	record_begin_file(&s);
	/* A trigger in an exec'ed program names its site in that program's
	 * numbering: the trace's, now that the meta file is read. */
	if (sec.trigger_site)
		sec.trigger_site = record_translate_site(&s, r->shm->trigger_image, sec.trigger_site);
	for (size_t i = 0; i < image.cnt; i++) {
		struct chunk_copy *cc = &image.v[i];
		record_note_thread(&s, cc->hdr.tid, cc->hdr.comm);
		record_note_task(&s, cc->hdr.tid, cc->serial, cc->pid, cc->ppid);
		record_translate_events(&s, cc->image, cc->events, cc->hdr.event_count);
		s.drained += shm_count_events(cc->events, cc->hdr.event_count);
		s.snapshot_lost += cc->hdr.lost_before;
		if (s.out.err || !(cc->hdr.event_count || cc->hdr.lost_before))
			continue;
		err = trace_writer_chunk(&s.w, &cc->hdr, cc->events, cc->hdr.event_count);
		if (err && !s.w.err)
			s.w.err = -err;
		record_out_commit(&s);
	}
	/* --kernel: each thread's kernel events from its oldest function
	 * event in the snapshot on (the same window). */
	if (r->kernel.ring_cnt && !s.out.err) {
		record_kernel_keep(r, 1);
		uint32_t *tids = malloc((image.cnt ? image.cnt : 1) * sizeof(*tids));
		uint64_t *from = malloc((image.cnt ? image.cnt : 1) * sizeof(*from));
		size_t nt = 0;
		for (size_t i = 0; tids && from && i < image.cnt; i++) {
			const struct chunk_copy *cc = &image.v[i];
			size_t j = 0;
			while (j < nt && tids[j] != cc->hdr.tid)
				j++;
			if (j == nt) {
				tids[nt] = cc->hdr.tid;
				from[nt++] = cc->hdr.base;
			} else if (cc->hdr.base < from[j]) {
				from[j] = cc->hdr.base;
			}
		}
		long kb = tids && from ? kernel_write_kept(&r->kernel, &s.w, tids, from, nt) : -ENOMEM;
		if (kb < 0 && !s.w.err)
			s.w.err = (int)-kb;
		record_out_commit(&s);
		free(tids);
		free(from);
	}
	s.raw1 = tsc_read();
	s.ns1 = monotonic_ns();
	struct out_mark kept = { 0 };
	int fin = record_out_finish(&s, record_write_tail, &kept);
	int werr = s.out.err;
	trace_writer_finish(&s.w);
	if (fin < 0 || werr) {
		cli_error("snapshot: cannot write %s in full: %s", path, strerror(werr ? werr : EIO));
	} else {
		fprintf(stderr, "needle: snapshot of %llu events from %zu threads (copied in %.1f ms) into %s\n",
			(unsigned long long)kept.events, s.thread_cnt, (double)copy_ns / 1e6, path);
	}
	record_out_close(&s.out);
	free(s.threads);
	free(s.tasks);
	free(s.task_slots);
	record_images_free(&s);
	free(s.objects);
	if (s.exe != r->exe) /* read from the meta file here, not before */
		free(s.exe);
	free(path);
	return werr || fin < 0 ? -1 : 0;
}

int record_snapshot_check(struct recording *r)
{
	char path[PATH_MAX];
	char magic[8];
	int bad = 0;

	/* FILE.1 is the first file a snapshot writes: one that is not a
	 * needle trace is refused now, as FILE is, not when a snapshot is due. */
	snprintf(path, sizeof(path), "%s.1", r->o->output);
	FILE *f = fopen(path, "re");
	if (f) {
		bad = fread(magic, 1, sizeof(magic), f) == sizeof(magic) ? memcmp(magic, TRACE_MAGIC, sizeof(magic)) != 0
									  : ftell(f) > 0;
		fclose(f);
	}
	if (bad)
		cli_error("%s exists and is not a needle trace: not overwriting it (choose another file with -o)", path);
	/* FILE is written only when the last snapshot is: until then it is
	 * left as it was (a FILE created for the check goes again), so that a
	 * needle record killed meanwhile leaves no empty FILE behind. */
	record_out_abandon(&r->out);
	r->out.created = 0;
	return bad ? -1 : 0;
}

/* ---- when snapshots are taken (needle record and needle record -p) ---- */

static volatile sig_atomic_t snapshot_signals;

static void on_sigusr2(int sig)
{
	(void)sig;
	snapshot_signals++;
}

void snapshot_catch_sigusr2(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr2; /* no SA_RESTART: it ends the wait for requests */
	sigaction(SIGUSR2, &sa, NULL);
}

/* A clock value of the agent's as nanoseconds since the recording began. */
static uint64_t rel_ns(const struct recording *r, uint64_t raw)
{
	if (r->shm->clock_source == CLOCK_SOURCE_MONOTONIC)
		return raw > r->ns0 ? raw - r->ns0 : 0;
	uint64_t t = tsc_read(), n = monotonic_ns();
	if (t <= r->raw0 || n <= r->ns0 || raw <= r->raw0)
		return 0;
	return (uint64_t)((double)(raw - r->raw0) * (double)(n - r->ns0) / (double)(t - r->raw0));
}

/* A request that has arrived: from a trigger or needle ctl (the buffer
 * header says which), or SIGUSR2. */
static void snapshot_reason(struct recording *r, int from_agent, struct sec_snapshot *info)
{
	struct shm_header *h = r->shm;

	memset(info, 0, sizeof(*info));
	info->asked_ns = monotonic_ns() - r->ns0;
	if (!from_agent) {
		info->reason = TRACE_SNAPSHOT_SIGNAL;
		return;
	}
	info->reason = h->trigger_kind == SNAPSHOT_CTL ? TRACE_SNAPSHOT_CTL
		     : h->trigger_kind == SNAPSHOT_ENTERED ? TRACE_SNAPSHOT_ENTERED : TRACE_SNAPSHOT_DURATION;
	if (info->reason == TRACE_SNAPSHOT_CTL)
		return;
	info->trigger_tid = h->trigger_tid;
	info->trigger_site = h->trigger_site;
	info->asked_ns = rel_ns(r, h->trigger_raw);
	if (info->reason == TRACE_SNAPSHOT_DURATION)
		info->duration_ns = h->clock_source == CLOCK_SOURCE_MONOTONIC ? h->trigger_duration
									: rel_ns(r, r->raw0 + h->trigger_duration);
	if (r->o->trigger_text)
		snprintf(info->trigger, sizeof(info->trigger), "%s", r->o->trigger_text);
}

void snapshot_service_start(struct snapshot_service *ss, struct recording *r)
{
	char agent_err[512];

	ss->started = 1;
	record_read_result(r, &r->sites_traced, agent_err, sizeof(agent_err));
	fprintf(stderr, "needle: flight recorder on PID %d: a snapshot with kill -USR2 %d or needle ctl %d snapshot%s\n",
		(int)r->pid, (int)getpid(), (int)r->pid, r->o->agent.triggers ? ", or a trigger" : "");
}

static void take(struct snapshot_service *ss, struct recording *r)
{
	ss->next.number = ++ss->taken;
	ss->next.copied_ns = monotonic_ns() - r->ns0;
	record_snapshot(r, &ss->next, 0);
	ss->pending = 0;
}

uint64_t snapshot_service_poll(struct snapshot_service *ss, struct recording *r)
{
	struct shm_header *h = r->shm;
	const struct record_opts *o = r->o;
	uint64_t now = monotonic_ns();

	if (!ss->pending) {
		/* Acquire pairs with the agent's release increment: the
		 * trigger fields are read after it. */
		uint64_t req = atomic_load_explicit(&h->snapshot_requests, memory_order_acquire);
		int from_agent = req != ss->handled, by_signal = snapshot_signals != ss->signals_seen;
		if (from_agent || by_signal) {
			ss->handled = req;
			ss->signals_seen = snapshot_signals;
			/* The interval runs from one accepted request to the next
			 * (the agent times its own the same way; a tenth of slack
			 * for the wake-up's latency). */
			uint64_t gap = (uint64_t)o->agent.trigger_gap_ns;
			if (ss->taken < o->max_snapshots && (!ss->taken || now - ss->last_ns >= gap - gap / 10)) {
				ss->last_ns = now;
				snapshot_reason(r, from_agent, &ss->next);
				int trig = ss->next.reason == TRACE_SNAPSHOT_DURATION || ss->next.reason == TRACE_SNAPSHOT_ENTERED;
				ss->pending = 1;
				ss->due_ns = now + (trig ? (uint64_t)o->agent.trigger_after_ns : 0);
			} else if (!ss->said_skip++) {
				cli_error("snapshot request ignored: %s (further ones are ignored silently)",
					  ss->taken >= o->max_snapshots ? "--max-snapshots reached"
									: "within --snapshot-interval");
			}
		}
	}
	if (ss->pending && now >= ss->due_ns)
		take(ss, r);
	uint64_t wait_ns = 100000000ull;
	now = monotonic_ns();
	if (ss->pending && ss->due_ns > now && ss->due_ns - now < wait_ns)
		wait_ns = ss->due_ns - now;
	return wait_ns;
}

void snapshot_service_wait(struct snapshot_service *ss, struct recording *r, uint32_t word, uint64_t ns)
{
	/* A trigger's futex wake, SIGUSR2 or SIGCHLD end it. */
	if (snapshot_signals != ss->signals_seen)
		return;
	struct timespec t = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	syscall(SYS_futex, &r->shm->wake_word, FUTEX_WAIT, word, &t, NULL, 0);
}

int snapshot_service_end(struct snapshot_service *ss, struct recording *r, uint32_t reason)
{
	int werr = 0;

	if (ss->pending)
		take(ss, r);
	/* needle record -p cannot tell a crash from an exit (no wait status
	 * for a process it did not start): a process that ended gets its
	 * last snapshot, triggers or not. */
	if (reason == TRACE_SNAPSHOT_CRASH || !r->o->agent.triggers || (r->attached && reason == TRACE_SNAPSHOT_END)) {
		struct sec_snapshot last = { .reason = reason };
		last.asked_ns = last.copied_ns = monotonic_ns() - r->ns0;
		werr = record_snapshot(r, &last, 1) != 0;
	} else {
		record_out_abandon(&r->out);
		if (!ss->taken)
			cli_error("no trigger fired: no snapshot was written");
	}
	record_snapshot_free();
	return werr;
}
