/* info.c - `needle info`: what a trace file holds: the header, whether
 * the recording finished writing it, the recorded command, the clock,
 * threads with their event and loss counts, and the totals.
 *
 * Invariants: the LOST column adds up to the "lost events" total (losses
 * no chunk could carry, because the thread never took another chunk, get
 * a row of their own); a thread is (tid, serial) and is named by its own
 * latest chunk; the command line is printed so that it can be pasted back
 * into a shell. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/util/cli_util.h"
#include "cli/view/view.h"
#include "cli/view/view_format.h"

/* One argument as a POSIX shell reads it back: bare if it has only safe
 * characters, in single quotes otherwise ('\'' for a quote), and as
 * $'...' if it holds control characters, which would break the line. */
static void print_shell_word(const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-";
	int ctl = 0;

	if (*s && strspn(s, safe) == strlen(s)) {
		fputs(s, stdout);
		return;
	}
	for (const char *p = s; *p; p++)
		ctl |= (unsigned char)*p < 0x20 || *p == 0x7f;
	if (!ctl) {
		putchar('\'');
		for (; *s; s++) {
			if (*s == '\'')
				fputs("'\\''", stdout);
			else
				putchar(*s);
		}
		putchar('\'');
		return;
	}
	fputs("$'", stdout);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '\\' || ch == '\'')
			printf("\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", stdout);
		else if (ch == '\t')
			fputs("\\t", stdout);
		else if (ch < 0x20 || ch == 0x7f)
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
	putchar('\'');
}

static void print_time(uint64_t realtime_ns)
{
	time_t secs = (time_t)(realtime_ns / 1000000000u);
	struct tm tm;
	char buf[64];

	gmtime_r(&secs, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s.%03u UTC", buf, (unsigned)(realtime_ns / 1000000u % 1000u));
}

static void print_attach(const struct trace *t)
{
	const struct sec_attach *a = &t->attach;
	static const char *const ends[] = { "", "detached; the process ran on",
					    "the process ended (how is not known: this kernel does not tell)",
					    "the session ended in the process (exec, or closed needle's socket)" };
	printf("attached:      to the running process at ");
	print_time(a->attach_realtime_ns);
	printf(", until ");
	print_time(a->detach_realtime_ns);
	printf(" (%.3f s)\n", (double)(a->detach_realtime_ns - a->attach_realtime_ns) / 1e9);
	int st = t->process.wait_status;
	if (a->end == ATTACH_END_ENDED && WIFSIGNALED(st))
		printf("end:           the process was killed by signal %d (%s)%s\n", WTERMSIG(st),
		       strsignal(WTERMSIG(st)), WCOREDUMP(st) ? ", core dumped" : "");
	else if (a->end == ATTACH_END_ENDED)
		printf("end:           the process exited with status %d\n", WEXITSTATUS(st));
	else
		printf("end:           %s\n", ends[a->end <= ATTACH_END_LOST ? a->end : 0]);
	printf("held:          longest hold of a thread %.3f ms: thread %u borrowed to load libneedle %.3f ms;\n"
	       "               %llu patch batch%s that stopped threads, the longest %.3f ms; held from outside %.3f ms\n"
	       "               (libneedle stays loaded and idle in the process; a later -p reuses it)\n",
	       (double)a->max_hold_ns / 1e6, a->borrowed_tid, (double)a->borrowed_hold_ns / 1e6,
	       (unsigned long long)a->stops, a->stops == 1 ? "" : "es", (double)a->stop_window_max_ns / 1e6,
	       (double)a->outside_hold_max_ns / 1e6);
	if (t->clock.source == TRACE_CLOCK_TSC && t->first_raw && t->first_raw >= t->clock.raw0 && t->ns_per_raw > 0)
		printf("first event:   %.3f ms after needle record -p began\n",
		       (double)(t->first_raw - t->clock.raw0) * t->ns_per_raw / 1e6);
	if (a->detach_ns)
		printf("detach:        %.3f ms (every site back to its NOP, the buffer unmapped)\n",
		       (double)a->detach_ns / 1e6);
}

static void print_snapshot(struct trace *t)
{
	static const char *const reasons[] = { "?", "the program ended", "the program crashed", "SIGUSR2 to needle record",
					       "needle ctl snapshot", "a trigger: the function was entered",
					       "a trigger: a call took longer than asked",
					       "the recording ended (needle record -p detached; the process runs on)" };
	const struct sec_snapshot *s = &t->snapshot;
	char at[24], dur[24];

	cli_format_duration(at, sizeof(at), s->asked_ns);
	if (s->number)
		printf("snapshot:      number %u, asked for %s after the start\n", s->number, at);
	else
		printf("snapshot:      the last one, taken %s after the start\n", at);
	printf("  reason:      %s\n", reasons[s->reason < 8 ? s->reason : 0]);
	if (s->reason == TRACE_SNAPSHOT_DURATION || s->reason == TRACE_SNAPSHOT_ENTERED) {
		printf("  trigger:     %s: %s in thread %u", s->trigger[0] ? s->trigger : "?",
		       trace_site_name(t, s->trigger_site), s->trigger_tid);
		if (s->reason == TRACE_SNAPSHOT_DURATION) {
			cli_format_duration(dur, sizeof(dur), s->duration_ns);
			printf(", a call of %s", dur);
		}
		putchar('\n');
	}
	if (s->chunks_dropped)
		printf("  overwritten while copied: %llu chunks (not in the file)\n", (unsigned long long)s->chunks_dropped);
}

/* The objects' table (SEC_OBJECTS): per object, its compiled sites, the
 * functions tried for relocation, how many were relocated, and why the
 * others were not. */
static void print_objects(const char *text)
{
	char reasons[16][48];
	const char *p = text;

	memset(reasons, 0, sizeof(reasons));
	printf("functions per object: compiled sites, relocated / tried, refused by reason\n");
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[4400];
		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), p);
		p = nl ? nl + 1 : NULL;
		int r, off = 0;
		if (line[0] == 'Y' && sscanf(line, "Y %d %n", &r, &off) >= 1 && off && r > 0 && r < 16) {
			snprintf(reasons[r], sizeof(reasons[r]), "%s", line + off);
			continue;
		}
		unsigned c, tr, rel, ref[16] = { 0 };
		int pos = 0;
		if (line[0] != 'O' || sscanf(line, "O %u %u %u%n", &c, &tr, &rel, &pos) < 3)
			continue;
		for (int i = 1; i <= 15; i++) {
			int adv = 0;
			if (sscanf(line + pos, " %u%n", &ref[i], &adv) < 1)
				break;
			pos += adv;
		}
		const char *path = line + pos + (line[pos] == ' ');
		printf("  %s: %u compiled", path, c);
		if (tr)
			printf(", %u of %u relocated (%.1f%%)", rel, tr, 100.0 * rel / tr);
		for (int i = 1; i <= 15; i++)
			if (ref[i])
				printf("; %s %u", reasons[i][0] ? reasons[i] : "?", ref[i]);
		putchar('\n');
	}
}

/* Threads in the order they began. */
static struct trace *task_trace;

static uint64_t began(uint32_t i)
{
	const struct trace_thread *th = &task_trace->threads[i];
	return th->chunk_cnt ? th->chunks[0].base : UINT64_MAX;
}

static int began_first(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t bx = began(x), by = began(y);
	return bx != by ? (bx < by ? -1 : 1) : (x > y) - (x < y);
}

/* info --task: uftrace's task list: when each thread began (CLOCK_MONOTONIC
 * seconds), its flags (F: a process's first thread, its tid its pid; S:
 * it began a session, the recorded program's first thread), tid, name,
 * and the bytes of its events in the file. */
static int info_tasks(struct trace *t)
{
	uint32_t *order = malloc((t->thread_cnt ? t->thread_cnt : 1) * sizeof(*order));
	if (!order) {
		cli_error("out of memory");
		return 1;
	}
	for (size_t i = 0; i < t->thread_cnt; i++)
		order[i] = (uint32_t)i;
	task_trace = t;
	qsort(order, t->thread_cnt, sizeof(*order), began_first);
	uint64_t mono0 = trace_monotonic_base(t);
	uint32_t programs = 0, *program_of = view_module_programs(t, &programs);
	uint8_t *program_seen = calloc(programs ? programs : 1, 1);
	if (!program_of || !program_seen) {
		free(order);
		free(program_of);
		free(program_seen);
		cli_error("out of memory");
		return 1;
	}
	printf("#%23s  %5s  %8s  %-16s  %s\n", "TIMESTAMP     ", "FLAGS", "  TID  ", "TASK", "DATA SIZE");
	int seen_main = 0;
	for (size_t k = 0; k < t->thread_cnt; k++) {
		const struct trace_thread *th = &t->threads[order[k]];
		uint64_t ns = mono0 + (th->chunk_cnt ? trace_ns(t, th->chunks[0].base) : 0), bytes = 0;
		for (size_t c = 0; c < th->chunk_cnt; c++)
			bytes += th->chunks[c].length;
		/* A process's first thread: the recorded one's, or a forked
		 * child's, which begins inside its parent's calls (its first
		 * event is an entry it inherits). */
		/* From the TASKS records when the file has them: its tid is
		 * its process's pid. */
		int known = th->pid != 0;
		int first_of_process = known ? th->tid == th->pid : t->have_process && th->tid == t->process.pid;
		int session = 0;
		struct trace_iter it;
		struct trace_event ev;
		if (!trace_iter_init_thread(&it, t, order[k]) && trace_iter_next(&it, &ev) > 0) {
			if (!known)
				first_of_process |=
					ev.kind == TEV_ENTRY && (ev.flags & (TEV_INHERITED | TEV_BEFORE)) == TEV_INHERITED;
			/* The first thread of a program exec'ed begins a
			 * session, and a process: its tid is its pid. */
			uint32_t m = ev.site < t->site_cap ? t->sites[ev.site].module : UINT32_MAX;
			uint32_t p = m < t->module_cnt ? program_of[m] : 0;
			if (p && !program_seen[p])
				session = first_of_process = 1;
			if (p)
				program_seen[p] = 1;
		}
		trace_iter_free(&it);
		char flags[6] = "     ";
		if (first_of_process)
			flags[0] = 'F';
		if ((t->have_process && th->tid == t->process.pid && !seen_main) || session) {
			flags[1] = 'S';
			seen_main |= th->tid == t->process.pid;
		}
		uint64_t kb = bytes / 1024;
		printf(" %13llu.%09llu  %s  [%6u]  %-16s  %5llu.%03llu MB\n", (unsigned long long)(ns / 1000000000),
		       (unsigned long long)(ns % 1000000000), flags, th->tid, th->name, (unsigned long long)(kb / 1024),
		       (unsigned long long)(kb % 1024 >= 1000 ? 999 : kb % 1024));
	}
	free(order);
	free(program_of);
	free(program_seen);
	return view_close_output(stdout, "standard output");
}

/* The INFO key's value into buf (NUL-terminated), or 0 if the trace has none. */
static int info_get(const struct trace *t, const char *key, char *buf, size_t len)
{
	size_t n;
	const char *v = trace_info_value(t, key, NULL, &n);
	if (!v)
		return 0;
	snprintf(buf, len, "%.*s", (int)n, v);
	return 1;
}

/* The machine and the program's use of it (INFO), in uftrace info's
 * layout: a uftrace user finds the fields where they look for them. */
static void print_system(const struct trace *t)
{
	char v[1024];
	unsigned long long a, b, c, d, e, f, g, h, i;
	double l1, l5, l15;

	if (!t->info)
		return;
	printf("\n# system information\n# ==================\n");
	if (info_get(t, "version", v, sizeof(v)))
		printf("# program version     : %s\n", v);
	if (info_get(t, "recorded_on", v, sizeof(v))) {
		time_t when = (time_t)strtoll(v, NULL, 10);
		char date[64];
		struct tm tm;
		if (localtime_r(&when, &tm) && strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", &tm))
			printf("# recorded on         : %s\n", date);
	}
	if (info_get(t, "cmdline", v, sizeof(v)))
		printf("# cmdline             : %s\n", v);
	if (info_get(t, "cpu", v, sizeof(v)))
		printf("# cpu info            : %s\n", v);
	if (info_get(t, "cpus", v, sizeof(v)) && sscanf(v, "%llu %llu", &a, &b) == 2)
		printf("# number of cpus      : %llu / %llu (online / possible)\n", a, b);
	if (info_get(t, "memory", v, sizeof(v)) && sscanf(v, "%llu %llu", &a, &b) == 2)
		printf("# memory info         : %.1f / %.1f GB (free / total)\n", a / 1048576.0, b / 1048576.0);
	if (info_get(t, "load", v, sizeof(v)) && sscanf(v, "%lf %lf %lf", &l1, &l5, &l15) == 3)
		printf("# system load         : %.2f / %.2f / %.2f (1 / 5 / 15 min)\n", l1, l5, l15);
	if (info_get(t, "kernel", v, sizeof(v)))
		printf("# kernel version      : %s\n", v);
	if (info_get(t, "hostname", v, sizeof(v)))
		printf("# hostname            : %s\n", v);
	if (info_get(t, "distro", v, sizeof(v)))
		printf("# distro              : %s\n", v);
	printf("#\n# process information\n# ===================\n");
	printf("# number of tasks     : %zu\n", t->thread_cnt);
	printf("# task list           :");
	for (size_t k = 0; k < t->thread_cnt; k++)
		printf("%s %u(%s)", k ? "," : "", t->threads[k].tid, t->threads[k].name[0] ? t->threads[k].name : "?");
	putchar('\n');
	if (info_get(t, "exe", v, sizeof(v)))
		printf("# exe image           : %s\n", v);
	if (info_get(t, "build_id", v, sizeof(v)))
		printf("# build id            : %s\n", v);
	for (const char *ev = trace_info_value(t, "event", NULL, &(size_t){ 0 }); ev;
	     ev = trace_info_value(t, "event", ev, &(size_t){ 0 }))
		printf("# event               : %.*s\n", (int)strcspn(ev, "\n"), ev);
	int st = t->process.wait_status;
	if (t->have_process && !t->have_attach && !(t->have_snapshot && t->snapshot.number)) {
		if (WIFEXITED(st))
			printf("# exit status         : exited with code: %d\n", WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			printf("# exit status         : terminated by signal: %d\n", WTERMSIG(st));
	}
	if (info_get(t, "elapsed_ns", v, sizeof(v))) {
		a = strtoull(v, NULL, 10);
		printf("# elapsed time        : %llu.%09llu sec\n", a / 1000000000ull, a % 1000000000ull);
	}
	if (info_get(t, "usage", v, sizeof(v)) &&
	    sscanf(v, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &a, &b, &c, &d, &e, &f, &g, &h, &i) == 9) {
		printf("# cpu time            : %.3f / %.3f sec (sys / user)\n", a / 1e6, b / 1e6);
		printf("# context switch      : %llu / %llu (voluntary / involuntary)\n", c, d);
		printf("# max rss             : %llu KB\n", e);
		printf("# page fault          : %llu / %llu (major / minor)\n", f, g);
		printf("# disk iops           : %llu / %llu (read / write)\n", h, i);
	}
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' }, { "help", no_argument, NULL, 'h' },
		{ "task", no_argument, NULL, 'T' },        { "no-pager", no_argument, NULL, 'P' },
		{ "no-event", no_argument, NULL, 'P' },    { NULL, 0, NULL, 0 },
	};
	const char *input = NULL;
	int c, tasks = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:d:h", longopts, NULL)) != -1) {
		if (c == 'i' || c == 'd') { /* -d DIR: uftrace's; here the trace file */
			input = optarg;
		} else if (c == 'T') {
			tasks = 1;
		} else if (c == 'P') {
			/* --no-pager, --no-event: uftrace's; needle never pages,
			 * and info shows no event */
		} else if (c == 'h') {
			fputs("usage: needle info [-i FILE] [--task]\n", stdout);
			return 0;
		} else {
			cli_option_error(argv[0], argc, argv, "i:d:h", longopts);
			return 2;
		}
	}
	/* uftrace info takes the program's name too (view_check_program_arg). */
	const char *prog_arg = optind == argc - 1 ? argv[--argc] : NULL;
	if (optind < argc) {
		cli_error("info: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	struct trace *t = view_open(input);
	char err[512];
	if (!t)
		return 1;
	if (prog_arg && view_check_program_arg(t, "info", prog_arg)) {
		trace_close(t);
		return 2;
	}
	if (trace_verify(t, err, sizeof(err))) {
		cli_error("%s: %s", t->path, err);
		trace_close(t);
		return 1;
	}
	if (tasks) {
		int rc = info_tasks(t);
		trace_close(t);
		return rc;
	}
	static const char *const modes[] = { "wait", "poll", "buffer-percent" };
	printf("file:          %s (format version %u)\n", t->path, t->header.version);
	if (t->incomplete)
		printf("status:        incomplete (the recording did not finish): %llu chunks read, %llu bytes at the end"
		       " ignored%s\n",
		       (unsigned long long)t->end.chunks, (unsigned long long)t->tail_bytes,
		       t->names_len ? "" : "; no function names (they show as site#N)");
	else if (t->end.write_errno && t->end.events_unwritten)
		printf("status:        cut short: the trace file could not be written to its end (%s); its last %llu "
		       "events are not in it\n",
		       strerror((int)t->end.write_errno), (unsigned long long)t->end.events_unwritten);
	else if (t->end.write_errno)
		printf("status:        cut short: the trace file could not be written to its end (%s)\n",
		       strerror((int)t->end.write_errno));
	else
		printf("status:        complete\n");
	char returns[32];
	printf("tracer:        %s%s\n", t->tracer == TRACER_FUNCTION ? "function" : "function_graph",
	       t->tracer != TRACER_FUNCTION && info_get(t, "returns", returns, sizeof(returns)) && !strcmp(returns, "estimated")
		       ? " (--estimate-return: a call ends at the thread's next entry at or above it)"
		       : "");
	if (t->view_opts_len) {
		/* The views' default options, as record took them. */
		fputs("view options: ", stdout);
		for (size_t i = 0; i < t->view_opts_len; i += strlen(t->view_opts + i) + 1)
			printf(" %s", t->view_opts + i);
		putchar('\n');
	}
	if (t->have_process) {
		printf("command:      ");
		for (size_t i = 0; t->argv && t->argv[i]; i++) {
			putchar(' ');
			print_shell_word(t->argv[i]);
		}
		printf("\npid:           %u\n", t->process.pid);
		int st = t->process.wait_status;
		if (t->have_snapshot && t->snapshot.number)
			printf("exit:          still running when the snapshot was taken\n");
		else if (t->have_attach)
			print_attach(t);
		else if (WIFEXITED(st))
			printf("exit:          status %d\n", WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			printf("exit:          killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
		if (t->have_snapshot)
			printf("reader:        none (snapshot of overwrite rings)");
		else
			printf("reader:        %s", modes[t->process.wake_mode < 3 ? t->process.wake_mode : 0]);
		if (t->have_snapshot)
			;
		else if (t->process.wake_mode == 1)
			printf(" every %u ms", t->process.wake_arg);
		else if (t->process.wake_mode == 2)
			printf(" %u%%", t->process.wake_arg);
		printf(", buffer %llu MiB\n", (unsigned long long)(t->process.buffer_bytes >> 20));
	}
	printf("clock:         %s", t->clock.source == TRACE_CLOCK_TSC ? "tsc" : "monotonic");
	if (t->clock.source == TRACE_CLOCK_TSC)
		printf(" (%.3f GHz)", 1.0 / t->ns_per_raw);
	if (t->clock_guessed)
		printf(", estimated here: the file has no clock section");
	printf("\nmodules:       %zu\n", t->module_cnt);
	if (t->objects)
		print_objects(t->objects);
	for (size_t i = 0; i < t->module_cnt; i++)
		printf("  [%zu] %s\n", i, t->modules[i]);
	size_t sites = 0;
	for (size_t i = 0; i < t->site_cap; i++)
		sites += t->sites[i].name && !(t->sites[i].flags & TRACE_SITE_EVENT);
	if (t->have_end)
		printf("sites:         %zu known, %llu traced\n", sites, (unsigned long long)t->end.sites_traced);
	else
		printf("sites:         %zu known\n", sites);
	printf("events:        %llu in %llu chunks (%llu salvaged after the program ended)\n",
	       (unsigned long long)t->end.events, (unsigned long long)t->end.chunks,
	       (unsigned long long)t->end.salvaged_chunks);
	printf("lost events:   %llu\n", (unsigned long long)t->end.lost_events);
	if (t->kernel_recorded)
		printf("kernel events: %llu (%llu system calls, %llu off-CPU intervals, %llu page faults, %llu names), "
		       "%llu records the kernel dropped (its rings full)\n",
		       (unsigned long long)t->kernel_events[0], (unsigned long long)t->kernel_events[KEV_SYSCALL],
		       (unsigned long long)t->kernel_events[KEV_OFFCPU], (unsigned long long)t->kernel_events[KEV_FAULT],
		       (unsigned long long)t->kernel_events[KEV_COMM], (unsigned long long)t->kernel_lost);
	if (t->probe_cnt)
		printf("USDT probes:   %llu hits of the %zu probes -E named\n",
		       (unsigned long long)t->kernel_events[KEV_PROBE], t->probe_cnt);
	if (t->have_end)
		printf("reader wakeups by the program: %llu\n", (unsigned long long)t->end.producer_wakeups);
	if (t->have_snapshot)
		print_snapshot(t);
	printf("threads:       %zu\n", t->thread_cnt);
	if (t->end.threads_refused || t->end.threads_shared_tls)
		printf("untraced threads: %llu (the agent's thread-state pool was full), %llu (shared another "
		       "thread's TLS: made by a raw clone without CLONE_SETTLS)\n",
		       (unsigned long long)t->end.threads_refused, (unsigned long long)t->end.threads_shared_tls);
	if (t->end.funcs_entry_only)
		printf("entry only:    %llu functions had calls recorded without their exit: called from code "
		       "outside any ELF object (a JIT's, V8's builtins), whose return address the runtime "
		       "walks, so it was left alone\n",
		       (unsigned long long)t->end.funcs_entry_only);
	printf("  %8s  %6s  %12s  %10s  %8s  %s%s\n", "TID", "SERIAL", "EVENTS", "LOST", "CHUNKS",
	       t->have_snapshot ? "REACHES BACK  " : "", "NAME");
	for (size_t i = 0; i < t->thread_cnt; i++) {
		struct trace_thread *th = &t->threads[i];
		char back[32] = "";
		if (t->have_snapshot) {
			/* How far before the snapshot its oldest kept event is. */
			uint64_t raw = th->chunk_cnt ? th->chunks[0].base : 0;
			uint64_t first = raw > t->clock.raw0 ? (uint64_t)((double)(raw - t->clock.raw0) * t->ns_per_raw) : 0;
			char d[24];
			cli_format_duration(d, sizeof(d), t->snapshot.copied_ns > first ? t->snapshot.copied_ns - first : 0);
			snprintf(back, sizeof(back), "%12s  ", th->chunk_cnt ? d : "-");
		}
		printf("  %8u  %6u  %12llu  %10llu  %8zu  %s%s\n", th->tid, th->serial, (unsigned long long)th->events,
		       (unsigned long long)th->lost, th->chunk_cnt, back, th->name[0] ? th->name : "?");
	}
	/* A thread that drops events and never takes another chunk (it
	 * ended, or the program did) has no chunk to count them in: only the
	 * total has them. */
	if (t->end.lost_events > t->lost_in_chunks)
		printf("  %8s  %6s  %12s  %10llu  %8s  %s\n", "-", "-", "0",
		       (unsigned long long)(t->end.lost_events - t->lost_in_chunks), "-",
		       "(lost after a thread's last chunk)");
	print_system(t);
	view_close(t);
	return view_close_output(stdout, "standard output");
}
