/* drain.c - the shared trace buffer, from needle record's side:
 * creating it, draining published chunks into the trace file while the
 * program runs, and salvaging the chunks threads still owned when it
 * ended (see shm_layout.h for the protocol).
 *
 * Invariants:
 *  - Every chunk taken from the ring or salvaged goes back to the free
 *    list, written or not: a trace file that cannot be written (a full
 *    disk) never stalls the program, which only ever sees a free list.
 *  - r->drained counts every event taken out of the buffer; the chunks
 *    written are counted by the trace writer, and the difference is what
 *    a write error cost.
 *  - A chunk still being filled (reserved on the ring, not yet published)
 *    is left for a later pass while any producer may be alive, and
 *    salvaged by its fill level once none is.
 *  - A wait never sleeps past a SIGCHLD that arrived after the caller
 *    sampled record_sigchld, nor past a stop request.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli/record/record.h"

struct shm_header *record_buffer_create(const struct record_opts *o, int *fd_out)
{
	uint32_t count = (uint32_t)(o->buffer_bytes / o->chunk_bytes);
	uint64_t total = shm_chunks_offset(count) + (uint64_t)count * o->chunk_bytes;
	/* Close-on-exec: the child passes its own copy, at a high number. */
	int fd = memfd_create("needle-buffer", MFD_CLOEXEC);
	struct shm_header *h;

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)total)) {
		close(fd);
		return NULL;
	}
	/* Populated now, so that the traced program never waits for the
	 * kernel to zero a page of the buffer. */
	h = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (h == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	h->magic = SHM_MAGIC;
	h->version = SHM_VERSION;
	h->chunk_size = o->chunk_bytes;
	h->total_size = total;
	h->chunk_count = count;
	/* Snapshot mode: nothing to wake, since nothing is drained. */
	h->wake_mode = o->snapshot ? WAKE_POLL : (uint32_t)o->wake_mode;
	h->snapshot_mode = o->snapshot != 0;
	h->wake_percent = o->wake_mode == WAKE_PERCENT ? (uint32_t)o->wake_arg : 0;
	/* Half the buffer per wake: two wakes per buffer's worth of events,
	 * and room for the other half while the reader drains (it also
	 * drains every WAKE_WAIT_POLL_MS on its own).  Measured on a loop of
	 * 50 traced calls (make bench, iter_*): an eighth of the buffer kept
	 * its p99.9 at 2.4 times --poll=1's, half at 1.1 times. */
	h->wake_chunks = count / 2 ? count / 2 : 1;
	for (uint32_t i = 0; i < count; i++)
		shm_free_push(h, i);
	*fd_out = fd;
	return h;
}

void record_note_thread(struct recording *r, uint32_t tid, const char comm[16])
{
	for (size_t i = 0; i < r->thread_cnt; i++)
		if (r->threads[i].tid == tid)
			return;
	if (r->thread_cnt == r->thread_cap) {
		size_t cap = r->thread_cap ? r->thread_cap * 2 : 16;
		struct seen_thread *t = realloc(r->threads, cap * sizeof(*t));
		if (!t)
			return;
		r->threads = t;
		r->thread_cap = cap;
	}
	struct seen_thread *t = &r->threads[r->thread_cnt++];
	t->tid = tid;
	memcpy(t->name, comm, 16);
	t->name[16] = 0;
	/* The live name is fresher than the one taken at the first chunk. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)r->pid, tid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(t->name, sizeof(t->name), f))
			t->name[strcspn(t->name, "\n")] = 0;
		fclose(f);
	}
}

static size_t task_slot(uint32_t tid, uint32_t serial, size_t cap)
{
	uint64_t key = (uint64_t)tid << 32 | serial;
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int task_slots_grow(struct recording *r)
{
	size_t cap = r->task_slot_cap ? r->task_slot_cap * 2 : 64;
	uint32_t *v = calloc(cap, sizeof(*v));

	if (!v)
		return -1;
	for (size_t i = 0; i < r->task_cnt; i++) {
		size_t j = task_slot(r->tasks[i].tid, r->tasks[i].serial, cap);
		while (v[j])
			j = (j + 1) & (cap - 1);
		v[j] = (uint32_t)i + 1;
	}
	free(r->task_slots);
	r->task_slots = v;
	r->task_slot_cap = cap;
	return 0;
}

void record_note_task(struct recording *r, uint32_t tid, uint32_t serial, uint32_t pid, uint32_t ppid)
{
	if (!pid)
		return;
	/* Out of memory: the thread goes without its process (the views
	 * then take it as one of the recorded process's). */
	if ((r->task_cnt + 1) * 2 > r->task_slot_cap && task_slots_grow(r))
		return;
	size_t j = task_slot(tid, serial, r->task_slot_cap);
	for (uint32_t id; (id = r->task_slots[j]); j = (j + 1) & (r->task_slot_cap - 1))
		if (r->tasks[id - 1].tid == tid && r->tasks[id - 1].serial == serial)
			return;
	if (r->task_cnt == r->task_cap) {
		size_t cap = r->task_cap ? r->task_cap * 2 : 16;
		struct task_record *v = realloc(r->tasks, cap * sizeof(*v));
		if (!v)
			return;
		r->tasks = v;
		r->task_cap = cap;
	}
	r->tasks[r->task_cnt++] = (struct task_record){ .tid = tid, .serial = serial, .pid = pid, .ppid = ppid };
	r->task_slots[j] = (uint32_t)r->task_cnt;
}

static void write_chunk(struct recording *r, uint32_t idx, int salvaged)
{
	struct shm_chunk *c = shm_chunk_at(r->shm, idx);
	uint32_t used = atomic_load_explicit(&c->used, memory_order_acquire);
	uint32_t cap = shm_chunk_capacity(r->shm);
	struct sec_chunk hdr = {
		.tid = c->tid,
		.lost_before = c->lost_before,
		.seq = c->seq,
		.base = c->base,
		.event_count = (used > cap ? cap : used) / 8,
		.salvaged = (uint32_t)salvaged,
		.open_depth = c->open_depth,
		.serial = c->serial,
	};
	memcpy(hdr.comm, c->comm, sizeof(hdr.comm));

	record_note_thread(r, c->tid, c->comm);
	record_note_task(r, c->tid, c->serial, c->pid, c->ppid);
	/* An exec'ed program's site ids are its own: the trace's from here
	 * (the chunk is needle record's until it is freed below). */
	record_translate_events(r, c->image, shm_chunk_events(c), hdr.event_count);
	r->drained += shm_count_events(shm_chunk_events(c), hdr.event_count);
	if (r->stream)
		r->stream->chunk(r->stream_arg, &hdr, shm_chunk_events(c), hdr.event_count);
	if ((hdr.event_count || hdr.lost_before) && !r->out.err) {
		int err = trace_writer_chunk(&r->w, &hdr, shm_chunk_events(c), hdr.event_count);
		if (err && !r->w.err)
			r->w.err = -err;
		if (r->w.bytes - r->out.committed >= OUT_COMMIT_BYTES)
			record_out_commit(r);
	}
	shm_free_push(r->shm, idx);
}

static size_t drain(struct recording *r, int final, size_t max)
{
	struct shm_header *h = r->shm;
	struct shm_ring_slot *ring = shm_ring(h);
	uint64_t head = atomic_load(&h->ring_head), tail = atomic_load(&h->ring_tail);
	size_t n = 0;

	for (; head < tail && n < max; head++) {
		struct shm_ring_slot *slot = &ring[head % h->chunk_count];
		if (atomic_load_explicit(&slot->seq, memory_order_acquire) != head + 1) {
			/* Reserved but not yet published: wait for it, unless the
			 * producer is gone (then the chunk is salvaged by state). */
			if (!final)
				break;
			continue;
		}
		write_chunk(r, (uint32_t)slot->chunk, 0);
		n++;
	}
	atomic_store(&h->ring_head, head);
	record_out_commit_pending(r);
	return n;
}

/* Write every published chunk; returns how many. */
size_t record_drain(struct recording *r, int final)
{
	return drain(r, final, SIZE_MAX);
}

size_t record_drain_some(struct recording *r, size_t max)
{
	return drain(r, 0, max);
}

struct salvage {
	uint32_t tid, idx;
	uint64_t seq;
};

static int salvage_cmp(const void *a, const void *b)
{
	const struct salvage *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* After the program ended: chunks still owned by a thread (it exited
 * without returning them, or was killed) hold events up to their fill. */
void record_salvage(struct recording *r)
{
	struct shm_header *h = r->shm;
	struct salvage *v = malloc(h->chunk_count * sizeof(*v));
	size_t n = 0;

	if (!v)
		return;
	for (uint32_t i = 0; i < h->chunk_count; i++) {
		struct shm_chunk *c = shm_chunk_at(h, i);
		if (atomic_load(&c->state) != CHUNK_FREE)
			v[n++] = (struct salvage){ c->tid, i, c->seq };
	}
	qsort(v, n, sizeof(*v), salvage_cmp);
	for (size_t i = 0; i < n; i++)
		write_chunk(r, v[i].idx, 1);
	free(v);
	record_out_commit_pending(r);
}

void record_wait(struct recording *r, sig_atomic_t seen, int max_ms)
{
	struct shm_header *h = r->shm;

	if (r->o->wake_mode == WAKE_POLL) {
		/* In slices, so that the end of the program is noticed even if
		 * SIGCHLD came just before the sleep began. */
		int slice = max_ms >= 0 && max_ms < 100 ? max_ms : 100;
		for (int left = max_ms >= 0 && max_ms < r->o->wake_arg ? max_ms : r->o->wake_arg;
		     left > 0 && record_sigchld == seen && !record_stop; left -= slice) {
			int ms = left < slice ? left : slice;
			struct timespec t = { 0, (long)ms * 1000000 };
			nanosleep(&t, NULL);
		}
		return;
	}
	uint32_t word = atomic_load(&h->wake_word);
	atomic_store(&h->reader_waiting, 1);
	uint64_t queued = atomic_load(&h->ring_tail) - atomic_load(&h->ring_head);
	int ready = r->o->wake_mode == WAKE_WAIT ? queued >= h->wake_chunks
						: queued * 100 >= (uint64_t)r->o->wake_arg * h->chunk_count;
	if (!ready && record_sigchld == seen && !record_stop) {
		/* SIGCHLD interrupts the wait; the timeout is a safety net. */
		if (max_ms < 0)
			max_ms = r->o->wake_mode == WAKE_WAIT ? WAKE_WAIT_POLL_MS : 1000;
		struct timespec t = { max_ms / 1000, (long)(max_ms % 1000) * 1000000 };
		syscall(SYS_futex, &h->wake_word, FUTEX_WAIT, word, &t, NULL, 0);
	}
	atomic_store(&h->reader_waiting, 0);
}

int record_buffer_ready(struct recording *r)
{
	struct shm_header *h = r->shm;
	if (r->o->wake_mode != WAKE_PERCENT)
		return 1;
	uint64_t queued = atomic_load(&h->ring_tail) - atomic_load(&h->ring_head);
	return queued * 100 >= (uint64_t)r->o->wake_arg * h->chunk_count;
}
