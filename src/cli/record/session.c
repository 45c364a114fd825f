/* session.c - one recording's trace file from start to end, the same
 * for a program needle record starts (cmd_record.c), a process it
 * attaches to (attach.c) and each snapshot (snapshot.c): what is set up
 * before the agent runs (record_prepare), the file's first sections once
 * it records (record_begin), and its closing sections (record_finish).
 *
 * Invariants: the trace file is replaced only by record_begin, when the
 * agent reports that it records; everything record_prepare can refuse is
 * refused before the program starts or the process is touched. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args/args.h"
#include "cli/record/record.h"
#include "cli/util/cli_util.h"
#include "common/tsc.h"

int record_prepare(struct recording *r, const char *exe, pid_t pid)
{
	struct record_opts *o = r->o;
	struct program_libs libs = { 0 };

	if (arg_plan_wanted(&o->values) || o->probe_globs) {
		if (pid)
			program_libs_of_process(pid, &libs);
		else
			program_libs_of_file(exe, &libs);
	}
	const struct cxx_pattern_list patterns[] = {
		{ &o->agent.filter, 0 }, { &o->agent.notrace, 0 }, { &o->agent.subtree, 0 }, { &o->agent.drop, 0 }, { &o->agent.triggers, 1 },
		{ &o->agent.trace_on, 0 }, { &o->agent.trace_off, 0 }, { &o->agent.finish, 0 },
	};
	int err = arg_plan_resolve(&o->values, exe, &libs) ||
		  cxx_patterns_expand(exe, o->agent.syms, o->match_regex, patterns, sizeof(patterns) / sizeof(patterns[0])) ||
		  (o->probe_globs && record_probes_resolve(r, exe, &libs));
	program_libs_free(&libs);
	if (err)
		return -1;
	o->agent.args = o->values.args;
	o->agent.arg_filters = o->values.arg_filters;
	/* What the agent is handed has its limits (common/record_config.h):
	 * said here, in the command's words, not as the program's exec or the
	 * session failing. */
	uint8_t *config;
	size_t config_len;
	int size_err = record_config_encode(&o->agent, &config, &config_len);
	if (size_err == -E2BIG) {
		cli_error("the functions named are too many to hand to the program (a list over %u MiB, the values over "
			  "%u MiB): narrow -F, -N, -P, -U, -T or --trigger patterns (C++ patterns are sent as every "
			  "mangled name they match)", RECORD_CONFIG_GLOBS_MAX >> 20, RECORD_CONFIG_ARGS_MAX >> 20);
		return -1;
	}
	if (!size_err)
		free(config);
	/* A file size limit (ulimit -f) is a write error (EFBIG), for the
	 * trace file and the buffer alike, not a reason to die. */
	signal(SIGXFSZ, SIG_IGN);
	if (o->host ? record_out_connect(&r->out, o->host, o->port, remote_file_name(o->output))
		    : record_out_open(&r->out, o->output, o->force) || (o->snapshot && record_snapshot_check(r)))
		return -1;
	if (!(r->shm = record_buffer_create(o, &r->buf_fd))) {
		cli_error("cannot create a %llu MiB trace buffer: %s%s", (unsigned long long)(o->buffer_bytes >> 20),
			  strerror(errno), errno == EFBIG ? " (the file size limit, ulimit -f, applies to it too: "
			  "try a smaller --buffer-size)" : "");
		record_out_abandon(&r->out);
		return -1;
	}
	r->meta_fd = record_meta_create();
	if (r->meta_fd < 0) {
		cli_error("cannot create the metadata file: %s", strerror(errno));
		record_out_abandon(&r->out);
		return -1;
	}
	return 0;
}

static void write_clock(struct recording *r, uint64_t raw1, uint64_t ns1)
{
	struct sec_clock clock = { .source = TRACE_CLOCK_TSC, .raw0 = r->raw0, .ns0 = r->ns0, .raw1 = raw1, .ns1 = ns1 };

	if (r->shm->clock_source == CLOCK_SOURCE_MONOTONIC)
		clock = (struct sec_clock){ .source = TRACE_CLOCK_MONOTONIC, .raw0 = 0, .ns0 = 0, .raw1 = 1, .ns1 = 1 };
	if (clock.raw1 <= clock.raw0)
		clock.raw1 = clock.raw0 + 1;
	trace_writer_section(&r->w, SEC_CLOCK, &clock, sizeof(clock));
}

/* The agent records: the old file goes; the header, the symbols and a
 * first clock (from the start to now) come in, so that a file cut short
 * later still names its functions and times its events. */
void record_begin_file(struct recording *r)
{
	if (!record_out_begin(r)) {
		record_write_symbols(r);
		record_write_probes(r);
		if (r->o->values.arg_labels)
			trace_writer_section(&r->w, SEC_ARGS, r->o->values.arg_labels, strlen(r->o->values.arg_labels));
		if (r->o->view_opts_len)
			trace_writer_section(&r->w, SEC_VIEW_OPTS, r->o->view_opts, r->o->view_opts_len);
		write_clock(r, tsc_read(), monotonic_ns());
	}
	record_out_commit(r);
}

void *(*record_stream_open)(struct recording *r, const struct record_stream_ops **ops);

void record_begin(struct recording *r)
{
	/* The follower first: record_begin_file reads the functions' names. */
	if (r->o->otlp_endpoint && record_stream_open && !r->stream) {
		const struct record_stream_ops *ops = NULL;
		void *arg = record_stream_open(r, &ops);
		if (arg) {
			r->stream = ops;
			r->stream_arg = arg;
		}
	}
	record_begin_file(r);
	if (r->o->agent.ctl)
		fprintf(stderr, "needle: recording PID %d; control it with: needle ctl %d COMMAND\n", (int)r->pid,
			(int)r->pid);
}

/* The closing sections, for what the file holds up to mark m.  Events
 * drained but not in the file (after a write error) are counted lost. */
int record_write_tail(struct recording *r, const struct out_mark *m, int minimal)
{
	/* The objects dlopen'ed after the start: the agent appended them. */
	if (r->meta_off > 0)
		record_write_symbols(r);
	write_clock(r, r->raw1, r->ns1);
	record_write_process(r, r->status, r->argv);
	record_write_info(r);
	if (r->attached)
		trace_writer_section(&r->w, SEC_ATTACH, &r->attach, sizeof(r->attach));
	if (r->snapshot)
		trace_writer_section(&r->w, SEC_SNAPSHOT, r->snapshot, sizeof(*r->snapshot));
	if (!minimal)
		record_write_threads(r);
	struct sec_end end = {
		.events = m->events,
		/* A snapshot counts what its own window lost, not the
		 * recording's total (which includes what a freeze dropped
		 * after it). */
		.lost_events = (r->snapshot ? r->snapshot_lost : atomic_load(&r->shm->lost_events)) +
			       (r->drained - m->events),
		.chunks = m->chunks,
		.producer_wakeups = atomic_load(&r->shm->producer_wakeups),
		.salvaged_chunks = m->salvaged,
		.sites_traced = r->sites_traced,
		.threads_refused = atomic_load(&r->shm->threads_refused),
		.threads_shared_tls = atomic_load(&r->shm->threads_shared_tls),
		.funcs_entry_only = atomic_load(&r->shm->funcs_entry_only),
		.write_errno = r->out.err > 0 ? (uint64_t)r->out.err : r->drained > m->events ? EIO : 0,
		.events_unwritten = r->drained - m->events,
	};
	return trace_writer_section(&r->w, SEC_END, &end, sizeof(end));
}

/* The kernel's events open: the agent may pause them for needle ctl;
 * a pause or resume it asked for is applied here. */
static void kernel_control(struct recording *r)
{
	if (!atomic_load_explicit(&r->shm->kernel_on, memory_order_relaxed))
		atomic_store_explicit(&r->shm->kernel_on, 1, memory_order_relaxed);
	int paused = atomic_load_explicit(&r->shm->kernel_paused, memory_order_relaxed) != 0;
	if (paused != r->kernel.paused) {
		/* Before pausing, what was recorded so far is read: the
		 * intervals still open are dropped by the pause. */
		kernel_pause(&r->kernel, paused);
	}
}

void record_kernel_keep(struct recording *r, int now)
{
	/* Once the agent records: its clock is the trace's from then on. */
	if (!r->kernel.ring_cnt || atomic_load(&r->shm->agent_state) != AGENT_RECORDING)
		return;
	kernel_control(r);
	kernel_drain(&r->kernel, NULL, r->shm->clock_source != CLOCK_SOURCE_MONOTONIC,
		     now ? KERNEL_DRAIN_NOW : KERNEL_DRAIN);
}

void record_kernel_drain(struct recording *r, int final)
{
	if (!r->kernel.ring_cnt || r->out.err || !r->out.begun)
		return;
	if (!final)
		kernel_control(r);
	long n = kernel_drain(&r->kernel, &r->w, r->shm->clock_source != CLOCK_SOURCE_MONOTONIC, final);
	if (n < 0 && !r->w.err)
		r->w.err = (int)-n;
	if (n)
		record_out_commit(r);
}

int record_finish(struct recording *r)
{
	const char *output = r->out.remote ? r->out.where : r->o->output;

	record_drain(r, 1);
	record_salvage(r);
	record_kernel_drain(r, 1);
	r->raw1 = tsc_read();
	r->ns1 = monotonic_ns();
	char agent_err[512];
	record_read_result(r, &r->sites_traced, agent_err, sizeof(agent_err));

	struct out_mark kept = { 0 };
	int fin = record_out_finish(r, record_write_tail, &kept);
	int werr = r->out.err;
	trace_writer_finish(&r->w); /* frees; the file is already flushed */
	if (!fin && !werr && r->out.remote && record_out_confirm(&r->out))
		werr = EIO; /* said: the receiver did not store all of it */
	else if (fin < 0 && !r->out.have_base) {
		/* Not even the header and the symbols fit: nothing to read. */
		if (!r->out.remote)
			unlink(output);
		cli_error("cannot %s %s: %s; no trace was %s", r->out.remote ? "send" : "write", output, strerror(werr),
			  r->out.remote ? "stored" : "kept");
	} else if (fin < 0 && r->out.remote) {
		cli_error("cannot send %s: %s; the receiver keeps what reached it, without an END section (%llu events "
			  "were sent; %llu more not)", output, strerror(werr), (unsigned long long)kept.events,
			  (unsigned long long)(r->drained - kept.events));
	} else if (fin < 0) {
		cli_error("cannot write %s: %s; kept the first %llu events (%llu more not written), without an END "
			  "section: views read it up to its last chunk", output, strerror(werr),
			  (unsigned long long)kept.events, (unsigned long long)(r->drained - kept.events));
	} else if (werr) {
		cli_error("cannot write %s: %s; kept the first %llu events (%llu more not written), the trace ends "
			  "there", output, strerror(werr), (unsigned long long)kept.events,
			  (unsigned long long)(r->drained - kept.events));
	} else {
		uint64_t lost = atomic_load(&r->shm->lost_events);
		fprintf(stderr, "needle: recorded %llu events from %zu threads into %s", (unsigned long long)kept.events,
			r->thread_cnt, output);
		if (r->kernel.ring_cnt)
			fprintf(stderr, ", and %llu of the kernel's", (unsigned long long)r->kernel.written);
		if (r->kernel.lost)
			fprintf(stderr, "; %llu kernel records DROPPED (the kernel's rings were full)",
				(unsigned long long)r->kernel.lost);
		if (lost)
			fprintf(stderr, "; %llu events LOST (buffer full: try --buffer-size)", (unsigned long long)lost);
		fputc('\n', stderr);
	}
	/* What became of the programs exec'ed (not traced, not named), each
	 * said once. */
	for (char *p = r->notes, *nl; p && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		*nl = 0;
		int seen = 0;
		for (char *q = r->notes; q < p && !seen; q += strlen(q) + 1)
			seen = !strcmp(q, p);
		if (!seen)
			fprintf(stderr, "needle: %s\n", p);
	}
	if (r->stream) {
		char line[512];
		r->stream->finish(r->stream_arg, line, sizeof(line));
		r->stream = NULL;
		fprintf(stderr, "needle: %s\n", line);
	}
	record_images_free(r);
	record_out_close(&r->out);
	free(r->exe);
	r->exe = NULL;
	return werr ? 1 : 0;
}

