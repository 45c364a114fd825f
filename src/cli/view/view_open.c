/* view_open.c - opening a trace for a view, iterating it, and output
 * errors (view.h). */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/util/trigger_spec.h"
#include "cli/view/view.h"
#include "reader/sym_source.h"
#include "common/cxx_name.h"
#include "common/shm_layout.h"

struct trace *view_open(const char *path)
{
	char err[512];
	struct stat st;
	/* Run as uftrace with no needle.data here, uftrace's default name
	 * for it: a trace a receiver stored from uftrace record --host. */
	if (!path && cli_uftrace_style && stat("needle.data", &st) && !stat("uftrace.data", &st) && S_ISREG(st.st_mode))
		path = "uftrace.data";
	/* No needle.data, and uftrace's own trace directory here: say so. */
	if (!path && stat("needle.data", &st) && errno == ENOENT && !stat("uftrace.data", &st) && S_ISDIR(st.st_mode)) {
		cli_error("no needle.data here; uftrace.data is uftrace's trace directory, which needle does not read "
			  "(record with needle, or give -i FILE)");
		return NULL;
	}
	struct trace *t = trace_open(path ? path : "needle.data", err, sizeof(err));
	if (!t)
		cli_error("%s", err);
	else if (t->incomplete)
		/* Readable, but not all there: say so once, whatever the view. */
		cli_error("warning: %s is incomplete (the recording did not finish): showing %llu chunks, %llu bytes at "
			  "the end ignored",
			  t->path, (unsigned long long)t->end.chunks, (unsigned long long)t->tail_bytes);
	return t;
}

int view_sched_option(struct view_sched *s, int opt, const char *arg)
{
	switch (opt) {
	case 'E': {
		/* read:*, diff:*: the readings of -T read=, always shown. */
		unsigned ev = trigger_event_match(arg);
		/* A USDT probe's name (PROVIDER:NAME, a glob): checked
		 * against the probes the trace recorded once it is open. */
		if (!ev && strchr(arg, ':') && strncmp(arg, "linux:", 6)) {
			if (s->probe_cnt == VIEW_PROBES_MAX) {
				cli_error("-E '%s': at most %d USDT probe names in one view (a glob names several)", arg,
					  VIEW_PROBES_MAX);
				return -1;
			}
			s->probes[s->probe_cnt++] = arg;
			break;
		}
		if (!ev) {
			cli_error("-E '%s': needle's views show the events linux:schedule (the intervals off the CPU "
				  "recorded with -E linux:schedule or --kernel=switch), linux:task-name (the renames "
				  "recorded with -E linux:task-name or --kernel=comm), read:*, diff:* (-T "
				  "FUNC@read='s readings) and the USDT probes recorded with -E PROVIDER:NAME",
				  arg);
			return -1;
		}
		if (ev & TRIGGER_EVENT_SCHEDULE)
			s->set |= TRACE_SCHED_CALLS;
		if (ev & TRIGGER_EVENT_TASK_NAME)
			s->comm_asked = 1;
		break;
	}
	case VIEW_OPT_NO_PAGER:
		break;
	case VIEW_OPT_NO_EVENT:
		s->no_event = 1;
		s->none = 1;
		break;
	case VIEW_OPT_EVENT_FULL:
		s->set |= TRACE_SCHED_FULL;
		break;
	case VIEW_OPT_NO_SCHED_PREEMPT:
		s->set |= TRACE_SCHED_NO_PREEMPT;
		break;
	default: /* --no-sched */
		s->none = 1;
		break;
	}
	return 0;
}

int view_sched_apply(struct trace *t, const struct view_sched *s)
{
	unsigned mode = t->sched | s->set;
	for (unsigned i = 0; i < s->probe_cnt; i++) {
		size_t p = 0;
		while (p < t->probe_cnt && (!t->probe_names[p] || fnmatch(s->probes[i], t->probe_names[p], 0)))
			p++;
		if (p == t->probe_cnt) {
			cli_error("-E '%s': %s recorded no USDT probe of that name (%zu recorded: needle info lists them; "
				  "record with -E PROVIDER:NAME)",
				  s->probes[i], t->path, t->probe_cnt);
			return -1;
		}
	}
	if ((s->set & TRACE_SCHED_CALLS) && !t->sched_site && !t->kernel_events[KEV_OFFCPU]) {
		cli_error("-E linux:schedule: %s has no intervals off the CPU (record with -E linux:schedule or "
			  "--kernel=switch)",
			  t->path);
		return -1;
	}
	/* The site it adds comes after the named ones: in a file whose
	 * recording did not finish, events may name sites that are not. */
	if ((s->set & TRACE_SCHED_CALLS) && !t->sched_site && t->incomplete) {
		cli_error("-E linux:schedule: %s is incomplete (its functions are not all named): not with -E", t->path);
		return -1;
	}
	/* -E linux:schedule in the same command wins over --no-sched and
	 * --no-event. */
	if (s->none && !(s->set & TRACE_SCHED_CALLS))
		mode = TRACE_SCHED_NONE;
	if (mode != t->sched && trace_set_sched(t, mode)) {
		cli_error("out of memory");
		return -1;
	}
	return 0;
}

int view_parse_tid(const char *arg, uint32_t *tid)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*end || !v || v > UINT32_MAX) {
		cli_error("--tid needs a thread id, not '%s'", arg);
		return -1;
	}
	*tid = (uint32_t)v;
	return 0;
}

/* One end of -r: seconds as -f time prints them (0.000009168), or a
 * duration with its unit (9.168us), since the trace's first event. */
static int range_end_ns(const char *s, size_t n, uint64_t *ns)
{
	char buf[64];
	char *end;

	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	double v = strtod(buf, &end);
	if (end == buf || v < 0)
		return -1;
	if (!*end) {
		if (!(v * 1e9 < 1.8e19))
			return -1;
		*ns = (uint64_t)(v * 1e9 + 0.5);
		return 0;
	}
	return cli_parse_duration(buf, ns);
}

int view_parse_range(const char *arg, uint64_t *start, uint64_t *end)
{
	const char *tilde = strchr(arg, '~');

	*start = 0;
	*end = UINT64_MAX;
	if (!tilde || (tilde == arg && !tilde[1]) || (tilde > arg && range_end_ns(arg, (size_t)(tilde - arg), start)) ||
	    (tilde[1] && range_end_ns(tilde + 1, strlen(tilde + 1), end))) {
		cli_error("-r '%s': give START~END, START~ or ~END, each in seconds as -f time shows them "
			  "(0.0012) or with a unit (1.2ms), since the trace's first event (at most 584 years)", arg);
		return -1;
	}
	if (*start > *end) {
		cli_error("-r '%s': START is after END", arg);
		return -1;
	}
	return 0;
}

struct trace *view_start(const char *view, int argc, char **argv, int optind_now, const char *input, uint32_t tid,
			 const struct view_sched *sched, int *status)
{
	struct trace *t;

	*status = 2;
	if (optind_now < argc) {
		cli_error("%s: unexpected argument '%s'", view, argv[optind_now]);
		return NULL;
	}
	*status = 1;
	if (!(t = view_open(input)))
		return NULL;
	if (tid && !trace_thread_find(t, tid)) {
		cli_error("thread %u is not in %s (needle info lists the threads)", tid, t->path);
		trace_close(t);
		return NULL;
	}
	if (sched && view_sched_apply(t, sched)) {
		trace_close(t);
		return NULL;
	}
	return t;
}

int view_module_compiled(struct trace *t, uint32_t module, signed char **cache)
{
	if (module >= t->module_cnt)
		return 0;
	const char *base = strrchr(t->modules[module], '/');
	if (!strncmp(base ? base + 1 : t->modules[module], "libneedle", 9))
		return 0;
	if (!*cache && !(*cache = calloc(t->module_cnt, 1)))
		return 0;
	signed char *c = *cache;
	if (c[module])
		return c[module] > 0;
	c[module] = -1;
	const char *path = t->modules[module];
	for (const char *p = t->objects; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p), pl = strlen(path);
		unsigned long compiled;
		if (n > pl + 2 && p[0] == 'O' && sscanf(p, "O %lu", &compiled) == 1 && !strncmp(p + n - pl, path, pl) &&
		    p[n - pl - 1] == ' ' && compiled)
			c[module] = 1;
		p = nl ? nl + 1 : p + n;
	}
	return c[module] > 0;
}

int view_site_is_libcall(struct trace *t, uint32_t site, signed char **cache)
{
	if (site >= t->site_cap)
		return 0;
	/* An event the reader adds (linux:schedule) is no library's. */
	if (t->sites[site].flags & TRACE_SITE_EVENT)
		return 0;
	uint32_t m = t->sites[site].module;
	/* Module 0 is the program: discovery takes it first. */
	return m != 0 && !view_module_compiled(t, m, cache);
}

int view_use_syms(struct trace *t, const char *path)
{
	char err[512];
	struct sym_source *s = sym_source_open(path, err, sizeof(err));
	if (!s) {
		cli_error("--with-syms: %s", err);
		return -1;
	}
	struct sym_use use;
	int rc = trace_use_syms(t, s, &use);
	sym_source_close(s);
	if (rc) {
		cli_error("out of memory");
		return -1;
	}
	/* Said, not refused: the names it did give are right. */
	if (use.other_build)
		cli_error("warning: --with-syms: %s is another build of %s (their build ids differ): its functions "
			  "stay unnamed",
			  path, use.other_build);
	else if (use.unnamed && !use.named)
		cli_error("warning: --with-syms: %s names none of the trace's %zu functions without a name", path,
			  use.unnamed);
	return 0;
}

int view_site_srcline(struct trace *t, uint32_t site, signed char **cache, const char **file, unsigned *line)
{
	if (site >= t->site_cap || view_site_is_libcall(t, site, cache))
		return 0;
	return trace_site_srcline(t, site, file, line);
}

uint32_t *view_module_programs(struct trace *t, uint32_t *programs)
{
	size_t mods = t->module_cnt;
	uint8_t *has_main = calloc(mods ? mods : 1, 1);
	uint32_t *of = calloc(mods ? mods : 1, sizeof(*of));
	if (!has_main || !of) {
		free(has_main);
		free(of);
		return NULL;
	}
	for (size_t i = 0; i < t->site_cap; i++)
		if (t->sites[i].name && t->sites[i].module < mods && t->sites[i].sym && !strcmp(t->sites[i].sym, "main"))
			has_main[t->sites[i].module] = 1;
	uint32_t n = 0;
	int seen_main = 0;
	for (size_t m = 0; m < mods; m++) {
		if (has_main[m]) {
			n += seen_main;
			seen_main = 1;
		}
		of[m] = n;
	}
	free(has_main);
	*programs = n + 1;
	return of;
}

int view_check_program_arg(const struct trace *t, const char *view, const char *arg)
{
	const char *rec = t->argv && t->argv[0] ? t->argv[0] : "";
	const char *a = strrchr(arg, '/'), *b = strrchr(rec, '/');
	if (!strcmp(a ? a + 1 : arg, b ? b + 1 : rec))
		return 0;
	cli_error("%s: unexpected argument '%s' (%s is a trace of %s)", view, arg, t->path,
		  *rec ? rec : "a program of unknown name");
	return -1;
}

static int each_event(struct trace *t, uint32_t tid, struct call_tree *tree, trace_mark_fn mark_fn, void *mark_arg,
		      int (*fn)(const struct trace_event *ev, void *arg), void *arg)
{
	struct trace_iter it;
	struct trace_event ev;
	int r;

	if (trace_iter_init_mark(&it, t, tid, tree, mark_fn, mark_arg)) {
		cli_error("%s: %s", t->path, it.err);
		trace_iter_free(&it);
		return 1;
	}
	while ((r = trace_iter_next(&it, &ev)) > 0) {
		t->work++;
		if (fn(&ev, arg))
			break;
		if (view_interrupted) {
			cli_error("interrupted by signal %d: nothing written", (int)view_interrupted);
			trace_iter_free(&it);
			return 1;
		}
	}
	if (r < 0)
		cli_error("%s: %s", t->path, it.err);
	trace_iter_free(&it);
	return r < 0;
}

volatile sig_atomic_t view_interrupted;

/* Only a flag: the loop above stops at the next event, and the export's
 * own error path removes what it had written. */
static void on_stop_signal(int sig)
{
	view_interrupted = sig;
}

void view_stop_on_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int view_each_event_tree(struct trace *t, uint32_t tid, struct call_tree *tree,
			 int (*fn)(const struct trace_event *ev, void *arg), void *arg)
{
	return each_event(t, tid, tree, NULL, NULL, fn, arg);
}

int view_each_event_mark(struct trace *t, uint32_t tid, trace_mark_fn mark_fn, void *mark_arg,
			 int (*fn)(const struct trace_event *ev, void *arg), void *arg)
{
	return each_event(t, tid, NULL, mark_fn, mark_arg, fn, arg);
}

int view_each_event(struct trace *t, uint32_t tid, int (*fn)(const struct trace_event *ev, void *arg), void *arg)
{
	return view_each_event_tree(t, tid, NULL, fn, arg);
}

void view_close(struct trace *t)
{
	if (!t)
		return;
	if (getenv("NEEDLE_VIEW_WORK"))
		fprintf(stderr, "needle: view work: %llu steps, %llu events\n", (unsigned long long)t->work,
			(unsigned long long)t->end.events);
	trace_close(t);
}

/* errno of the first failed write, caught right after the call that
 * failed: later calls (fflush of an emptied buffer) may not repeat it. */
static int output_errno;

int view_output_failed(FILE *out)
{
	if (!ferror_unlocked(out))
		return 0;
	if (!output_errno)
		output_errno = errno ? errno : EIO;
	return 1;
}

int view_close_output(FILE *out, const char *name)
{
	int err;

	view_output_failed(out);
	errno = 0;
	if (fflush(out) && !output_errno)
		output_errno = errno ? errno : EIO;
	view_output_failed(out);
	if (fclose(out) && !output_errno)
		output_errno = errno ? errno : EIO;
	if (!(err = output_errno))
		return 0;
	output_errno = 0;
	cli_error("cannot write %s: %s", name, strerror(err));
	return 1;
}

void view_buffer_output(FILE *out)
{
	if (!isatty(fileno(out)))
		setvbuf(out, NULL, _IOFBF, 1 << 16);
}

uint32_t *view_name_keys(struct trace *t)
{
	size_t n = t->site_cap, slots = 64;
	while (slots < 2 * n)
		slots *= 2;
	uint32_t *slot = calloc(slots, sizeof(*slot));
	uint32_t *key = calloc(n ? n : 1, sizeof(*key));
	if (!slot || !key) {
		free(slot);
		free(key);
		return NULL;
	}
	for (size_t s = 0; s < n; s++) {
		const char *name = trace_site_name(t, (uint32_t)s);
		uint64_t h = 1469598103934665603ull; /* FNV-1a */
		for (const char *p = name; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		size_t i = h & (slots - 1);
		while (slot[i] && strcmp(trace_site_name(t, slot[i] - 1), name))
			i = (i + 1) & (slots - 1);
		if (!slot[i])
			slot[i] = (uint32_t)s + 1;
		key[s] = slot[i] - 1;
	}
	free(slot);
	return key;
}

/* libstdc++'s (the command links it): cxx_name.h leaves demangling to
 * the caller. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

int view_cxx_pattern_names(const char *pattern, const char *sym)
{
	int status;
	if (!sym || !cxx_name_is_mangled(sym))
		return 0;
	char *d = __cxa_demangle(sym, NULL, NULL, &status);
	if (!d)
		return 0;
	size_t base = cxx_name_shown(d);
	int hit = cxx_name_fnmatch(pattern, d, base);
	free(d);
	return hit;
}

void view_lost_reason(const struct trace *t, char *buf, size_t len)
{
	uint64_t unwritten = t->end.events_unwritten, lost = t->end.lost_events;
	if (!t->end.write_errno) {
		snprintf(buf, len, "the buffer was full: record with a larger --buffer-size");
		return;
	}
	int n = unwritten ? snprintf(buf, len, "the trace file could not be written to its end (%s): its last %llu "
				     "events are not in it", strerror((int)t->end.write_errno), (unsigned long long)unwritten)
			  : snprintf(buf, len, "the trace file could not be written to its end (%s)",
				     strerror((int)t->end.write_errno));
	if (lost > unwritten && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", and %llu were lost before (the buffer was full)",
			 (unsigned long long)(lost - unwritten));
}

int view_pattern_names(const char *pattern, const regex_t *re, const char *name, const char *sym)
{
	if (re && (!regexec(re, name, 0, NULL, 0) ||
		   (sym && view_regex_for_symbols(pattern) && !regexec(re, sym, 0, NULL, 0))))
		return 1;
	return !fnmatch(pattern, name, 0) || (sym && !fnmatch(pattern, sym, 0)) || view_cxx_pattern_names(pattern, sym);
}
