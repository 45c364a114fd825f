/* export_perfetto.c - a Perfetto trace (protobuf TracePacket stream) that
 * the Perfetto UI opens: a process track, a track per thread, and per call
 * a TrackEvent slice begin/end.  Function names are interned (written once
 * per trace as InternedData, referred to by iid), which keeps the file
 * near 12 bytes per event.
 *
 * Invariants: one pass, O(1) per event, no allocation per event (the
 * packet buffers are reused); a track per thread (tid, serial); every
 * slice begun is ended, calls still running or whose exit was lost
 * included; exits without an entry and losses are left out.
 *
 * The protobuf is encoded directly.  Field numbers, from Perfetto's protos:
 *   Trace.packet 1
 *   TracePacket: timestamp 8, trusted_packet_sequence_id 10, track_event 11,
 *                interned_data 12, sequence_flags 13, track_descriptor 60
 *   TrackEvent: type 9 (1 begin, 2 end, 3 instant), name_iid 10, track_uuid 11, name 23,
 *               debug_annotations 4
 *   TrackDescriptor: uuid 1, name 2, process 3, thread 4, parent_uuid 5
 *   ProcessDescriptor: pid 1, process_name 6
 *   ThreadDescriptor: pid 1, tid 2, thread_name 5
 *   InternedData.event_names 2; EventName: iid 1, name 2 */
#include <stdlib.h>
#include <string.h>

#include "cli/export/export.h"
#include "cli/export/protobuf.h"
#include "cli/view/view.h"
#include "cli/view/view_format.h"

#define SEQ_ID 1
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2
#define PROCESS_UUID 1

struct perfetto {
	struct trace *t;
	FILE *out;
	struct view_buf packet, event, nested, interned, annotation;
	uint8_t *name_sent; /* by site id */
	size_t name_cap;
	uint8_t *kernel_tracks; /* by thread: a bit per kernel track declared */
	uint64_t *back_on_cpu;  /* by thread: when its last off-CPU interval ended, + 1 (0: none yet) */
	int first_event;
	int oom;
};

/* Write one TracePacket (the Trace.packet field): its key and length,
 * then the packet, straight from the packet buffer. */
static void emit_packet(struct perfetto *x)
{
	uint8_t key[16];
	size_t n = varint_put(key, 1u << 3 | 2);

	n += varint_put(key + n, x->packet.len);
	if (x->packet.oom || x->event.oom || x->nested.oom || x->interned.oom) {
		x->oom = 1;
	} else {
		fwrite_unlocked(key, 1, n, x->out);
		fwrite_unlocked(x->packet.p, 1, x->packet.len, x->out);
	}
	x->packet.len = 0;
}

/* A track per thread (tid, serial): two lifetimes of one tid are two
 * tracks. */
static uint64_t thread_uuid(uint32_t thread)
{
	return ((uint64_t)thread + 1) << 8 | 2;
}

/* A process's track: the recorded process's, or a child's (forked, or
 * a program it exec'ed), by its pid (the low byte tells it from a
 * thread's). */
static uint64_t process_uuid(const struct trace *t, uint32_t pid)
{
	return pid == t->process.pid ? PROCESS_UUID : (uint64_t)pid << 8 | 1;
}

static void process_descriptor(struct perfetto *x, uint32_t pid, const char *name)
{
	x->nested.len = 0;
	pb_uint(&x->nested, 1, pid);
	pb_string(&x->nested, 6, name);
	x->event.len = 0;
	pb_uint(&x->event, 1, process_uuid(x->t, pid));
	pb_bytes(&x->event, 3, x->nested.p, x->nested.len);
	pb_bytes(&x->packet, 60, x->event.p, x->event.len);
	emit_packet(x);
}

static int by_tid_then_index(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return *x < *y ? -1 : *x > *y;
}

static void track_descriptors(struct perfetto *x)
{
	struct trace *t = x->t;
	const char *pname = t->argv && t->argv[0] ? t->argv[0] : "traced program";

	process_descriptor(x, t->process.pid, pname);
	/* Each other process, named by its first thread's last life (the
	 * program it became): one descriptor each, so the records of that
	 * thread are sorted by tid, then by index. */
	uint64_t *mains = malloc((t->thread_cnt ? t->thread_cnt : 1) * sizeof(*mains));
	size_t n = 0;
	for (size_t i = 0; mains && i < t->thread_cnt; i++) {
		uint32_t pid = trace_thread_pid(t, i);
		if (pid != t->process.pid && t->threads[i].tid == pid)
			mains[n++] = (uint64_t)pid << 32 | i;
	}
	if (mains)
		qsort(mains, n, sizeof(*mains), by_tid_then_index);
	for (size_t k = 0; k < n; k++) {
		if (k + 1 < n && mains[k + 1] >> 32 == mains[k] >> 32)
			continue;
		const struct trace_thread *th = &t->threads[(uint32_t)mains[k]];
		process_descriptor(x, th->tid, th->name[0] ? th->name : "process");
	}
	free(mains);
	for (size_t i = 0; i < t->thread_cnt; i++) {
		uint32_t pid = trace_thread_pid(t, i);
		x->nested.len = 0;
		pb_uint(&x->nested, 1, pid);
		pb_uint(&x->nested, 2, t->threads[i].tid);
		pb_string(&x->nested, 5, t->threads[i].name[0] ? t->threads[i].name : "thread");
		x->event.len = 0;
		pb_uint(&x->event, 1, thread_uuid((uint32_t)i));
		pb_uint(&x->event, 5, process_uuid(t, pid));
		pb_bytes(&x->event, 4, x->nested.p, x->nested.len);
		pb_bytes(&x->packet, 60, x->event.p, x->event.len);
		emit_packet(x);
	}
}

/* Intern the site's name if this is its first use; 0 or -1. */
static int intern(struct perfetto *x, uint32_t site)
{
	if (site >= x->name_cap) {
		size_t cap = x->name_cap ? x->name_cap : 1024;
		while (cap <= site)
			cap *= 2;
		uint8_t *v = realloc(x->name_sent, cap);
		if (!v)
			return -1;
		memset(v + x->name_cap, 0, cap - x->name_cap);
		x->name_sent = v;
		x->name_cap = cap;
	}
	if (x->name_sent[site])
		return 0;
	x->name_sent[site] = 1;
	x->nested.len = 0;
	pb_uint(&x->nested, 1, (uint64_t)site + 1);
	pb_string(&x->nested, 2, trace_site_name(x->t, site));
	pb_bytes(&x->interned, 2, x->nested.p, x->nested.len);
	return 0;
}

/* The values an event carries (needle record -A / -R) as TrackEvent
 * debug annotations (field 4; DebugAnnotation: name 10, string_value 6),
 * and a -W cpu note as "cpu" (uint_value 3),
 * formatted as replay shows them: the UI lists them in the slice's
 * arguments, an end event's merged with its begin's. */
static void put_annotations(struct perfetto *x, const struct trace_event *ev)
{
	char name[64], val[320];
	size_t at = 0;

	while (view_value_next(x->t, ev, &at, name, sizeof(name), val, sizeof(val))) {
		x->annotation.len = 0;
		pb_string(&x->annotation, 10, name);
		pb_string(&x->annotation, 6, val);
		pb_bytes(&x->event, 4, x->annotation.p, x->annotation.len);
	}
	/* -W cpu's note (DebugAnnotation uint_value 3). */
	uint64_t cpu;
	if (view_watch_cpu(ev->data, ev->data_len, &cpu)) {
		x->annotation.len = 0;
		pb_string(&x->annotation, 10, "cpu");
		pb_uint(&x->annotation, 3, cpu);
		pb_bytes(&x->event, 4, x->annotation.p, x->annotation.len);
	}
}

/* A thread's kernel tracks (--kernel), children of its track: system
 * calls, thread state off the CPU, page faults, renames.  Each is its own packet
 * sequence, its slices begun and ended in order there: a system call
 * that blocks holds an off-CPU interval, which is on the other track. */
static const char *const kernel_track_name[KEV_KINDS] = { "", "system calls", "thread state", "page faults",
							  "task names", "USDT probes" };

static uint64_t kernel_uuid(uint32_t thread, unsigned kind)
{
	return ((uint64_t)thread + 1) << 8 | (3 + kind);
}

static uint32_t kernel_seq(uint32_t thread, unsigned kind)
{
	return SEQ_ID + 1 + thread * (KEV_KINDS - 1) + (kind - 1);
}

static void kernel_track(struct perfetto *x, uint32_t thread, unsigned kind)
{
	if (x->kernel_tracks[thread] & (1u << kind))
		return;
	x->kernel_tracks[thread] |= (uint8_t)(1u << kind);
	x->event.len = 0;
	pb_uint(&x->event, 1, kernel_uuid(thread, kind));
	pb_string(&x->event, 2, kernel_track_name[kind]);
	pb_uint(&x->event, 5, thread_uuid(thread));
	pb_bytes(&x->packet, 60, x->event.p, x->event.len);
	emit_packet(x);
}

static void kernel_packet(struct perfetto *x, const struct trace_event *ev, int type, uint64_t ns, const char *name,
			  const char *detail)
{
	unsigned kind = ev->kev.kind;
	x->event.len = 0;
	pb_uint(&x->event, 9, (uint64_t)type);
	pb_uint(&x->event, 11, kernel_uuid(ev->thread, kind));
	if (type != 2)
		pb_string(&x->event, 23, name);
	if (type != 2 && *detail) {
		x->annotation.len = 0;
		pb_string(&x->annotation, 10,
			  kind == KEV_FAULT    ? "address"
			  : kind == KEV_OFFCPU ? "woken by"
			  : kind == KEV_COMM   ? "comm"
					       : "return");
		pb_string(&x->annotation, 6, detail);
		pb_bytes(&x->event, 4, x->annotation.p, x->annotation.len);
	}
	pb_uint(&x->packet, 8, ns);
	pb_uint(&x->packet, 10, kernel_seq(ev->thread, kind));
	pb_bytes(&x->packet, 11, x->event.p, x->event.len);
	emit_packet(x);
}

static int kernel_event(struct perfetto *x, const struct trace_event *ev)
{
	char name[64], detail[64];
	unsigned kind = ev->kev.kind;

	/* An exec's name is the program's, no rename (as replay and the
	 * Chrome export leave it). */
	if (!kind || kind >= KEV_KINDS || (kind == KEV_COMM && (ev->kev.flags & KEV_COMM_EXEC)))
		return 0;
	if (!x->kernel_tracks && !(x->kernel_tracks = calloc(x->t->thread_cnt ? x->t->thread_cnt : 1, 1)))
		return x->oom = 1;
	kernel_track(x, ev->thread, kind);
	view_kernel_slice(ev, name, sizeof(name), detail, sizeof(detail));
	if (kind == KEV_OFFCPU) {
		/* Between two intervals off the CPU the thread ran: a Running
		 * slice, as Perfetto's own thread state tracks show it. */
		if (!x->back_on_cpu && !(x->back_on_cpu = calloc(x->t->thread_cnt ? x->t->thread_cnt : 1, 8)))
			return x->oom = 1;
		uint64_t since = x->back_on_cpu[ev->thread];
		if (since && since - 1 < ev->ns) {
			kernel_packet(x, ev, 1, since - 1, "Running", "");
			kernel_packet(x, ev, 2, ev->ns, "Running", "");
		}
		x->back_on_cpu[ev->thread] = ev->ns + ev->kev_ns + 1;
	}
	if (kind == KEV_FAULT || kind == KEV_COMM || kind == KEV_PROBE) {
		kernel_packet(x, ev, 3, ev->ns, name, detail);
	} else {
		kernel_packet(x, ev, 1, ev->ns, name, detail);
		kernel_packet(x, ev, 2, ev->ns + ev->kev_ns, name, detail);
	}
	return x->oom || view_output_failed(x->out);
}

static int perfetto_event(const struct trace_event *ev, void *arg)
{
	struct perfetto *x = arg;
	int type;

	if (ev->kind == TEV_KERNEL)
		return kernel_event(x, ev);
	if (ev->kind == TEV_LOST ||
	    (ev->kind == TEV_EXIT && (ev->flags & TEV_ORPHAN)))
		return 0;
	if (ev->kind == TEV_ENTRY)
		type = ev->flags & TEV_FLAT ? 3 : 1;
	else
		type = 2;
	x->interned.len = 0;
	x->event.len = 0;
	pb_uint(&x->event, 9, (uint64_t)type);
	pb_uint(&x->event, 11, thread_uuid(ev->thread));
	if (type != 2) {
		if (intern(x, ev->site))
			return x->oom = 1;
		pb_uint(&x->event, 10, (uint64_t)ev->site + 1);
	}
	if (ev->data_len)
		put_annotations(x, ev);
	pb_uint(&x->packet, 8, ev->ns);
	pb_uint(&x->packet, 10, SEQ_ID);
	pb_bytes(&x->packet, 11, x->event.p, x->event.len);
	if (x->interned.len)
		pb_bytes(&x->packet, 12, x->interned.p, x->interned.len);
	pb_uint(&x->packet, 13,
		x->first_event ? SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE : SEQ_NEEDS_INCREMENTAL_STATE);
	x->first_event = 0;
	emit_packet(x);
	return x->oom || view_output_failed(x->out);
}

int export_perfetto(struct trace *t, FILE *out)
{
	struct perfetto x = { .t = t, .out = out, .first_event = 1 };

	track_descriptors(&x);
	int err = view_each_event(t, 0, perfetto_event, &x);
	if (x.oom) {
		fprintf(stderr, "needle: out of memory while writing the Perfetto trace\n");
		err = 1;
	}
	free(x.packet.p);
	free(x.event.p);
	free(x.nested.p);
	free(x.interned.p);
	free(x.annotation.p);
	free(x.name_sent);
	free(x.kernel_tracks);
	free(x.back_on_cpu);
	return err;
}
