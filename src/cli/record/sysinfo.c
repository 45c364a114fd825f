/* sysinfo.c - the INFO section: the machine a trace was recorded on and
 * what the program used of it, the fields `uftrace info` shows, written
 * once with the closing sections (needle info prints them).
 *
 * Each line is "KEY<tab>VALUE" (docs/file-format.md lists the keys).
 * Values are what the views need to print, raw where they are numbers
 * (the view formats them), and never hold a tab or a newline: text from
 * the system (a CPU's model, a distribution's name, the command line) is
 * kept on one line, as uftrace keeps it.
 *
 * Invariants:
 *  - Everything here is read in needle record, after the program has
 *    ended (or at a snapshot): nothing of it touches the program or its
 *    time.
 *  - The program's resource use ("usage", "elapsed_ns") is written only
 *    when needle record started it and reaped it (wait4): an attached
 *    process or a snapshot taken while it runs has none.
 *  - Each "event" line names an event of -E; readers act on the ones
 *    they know (linux:schedule) and ignore the others.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli/record/record.h"
#include "cli/util/build_id.h"
#include "common/tsc.h"
#include "needle.h"

/* The section's text, built in a memory stream. */
struct info_text {
	FILE *f;
	char *p;
	size_t len;
};

static void info_put(struct info_text *b, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void info_put(struct info_text *b, const char *key, const char *fmt, ...)
{
	char val[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	/* One line: a tab or a newline in a value would end it. */
	for (char *c = val; *c; c++)
		if (*c == '\t' || *c == '\n' || *c == '\r')
			*c = ' ';
	if (b->f)
		fprintf(b->f, "%s\t%s\n", key, val);
}

/* The first line of file beginning with prefix, its rest into out. */
static int file_line(const char *file, const char *prefix, char *out, size_t len)
{
	FILE *f = fopen(file, "re");
	char line[512];
	size_t pl = strlen(prefix);
	int found = 0;
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, prefix, pl))
			continue;
		char *v = line + pl;
		v[strcspn(v, "\n")] = 0;
		snprintf(out, len, "%s", v);
		found = 1;
	}
	fclose(f);
	return found;
}

/* needle record's own command line, its words joined by spaces, with
 * '"' and '\' escaped as uftrace's cmdline field has them. */
static void own_cmdline(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cmdline", "re");
	size_t k = 0;
	int c;
	out[0] = 0;
	if (!f)
		return;
	while ((c = fgetc(f)) != EOF && k + 3 < len) {
		if (!c) {
			out[k++] = ' ';
			continue;
		}
		if (c == '"' || c == '\\')
			out[k++] = '\\';
		out[k++] = (char)c;
	}
	fclose(f);
	while (k && out[k - 1] == ' ')
		k--;
	out[k] = 0;
}

static void system_part(struct info_text *b, struct recording *r)
{
	char text[512], cmd[1024];
	struct utsname u;
	struct sysinfo si;

	info_put(b, "version", "needle %d.%d.%d", NEEDLE_VERSION_MAJOR, NEEDLE_VERSION_MINOR, NEEDLE_VERSION_PATCH);
	/* When the program started: now, less the time the recording took. */
	uint64_t mono = monotonic_ns(), since = mono > r->ns0 ? mono - r->ns0 : 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	info_put(b, "recorded_on", "%lld", (long long)now.tv_sec - (long long)(since / 1000000000ull));
	own_cmdline(cmd, sizeof(cmd));
	info_put(b, "cmdline", "%s", cmd);
	if (file_line("/proc/cpuinfo", "model name\t: ", text, sizeof(text)))
		info_put(b, "cpu", "%s", text);
	info_put(b, "cpus", "%ld %ld", sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF));
	if (!sysinfo(&si)) {
		info_put(b, "memory", "%llu %llu", (unsigned long long)si.freeram * si.mem_unit / 1024,
			 (unsigned long long)si.totalram * si.mem_unit / 1024);
		/* The load averages in the kernel's fixed point (1 << SI_LOAD_SHIFT). */
		info_put(b, "load", "%.2f %.2f %.2f", si.loads[0] / 65536.0, si.loads[1] / 65536.0, si.loads[2] / 65536.0);
	}
	if (!uname(&u)) {
		info_put(b, "kernel", "%s %s", u.sysname, u.release);
		info_put(b, "hostname", "%s", u.nodename);
	}
	if (file_line("/etc/os-release", "PRETTY_NAME=", text, sizeof(text)))
		info_put(b, "distro", "%s", text);
}

static void process_part(struct info_text *b, struct recording *r)
{
	if (r->exe) {
		char id[128];
		info_put(b, "exe", "%s", r->exe);
		build_id_of(r->exe, id, sizeof(id));
		if (id[0])
			info_put(b, "build_id", "%s", id);
	}
	/* --estimate-return: every exit's time is an estimate (the views say
	 * so in info). */
	if (r->o->agent.estimate_return)
		info_put(b, "returns", "estimated");
	if (r->o->kernel_events & RECORD_EVENT_SCHEDULE)
		info_put(b, "event", "linux:schedule");
	if (!r->have_usage)
		return;
	const struct rusage *u = &r->usage;
	info_put(b, "elapsed_ns", "%llu", (unsigned long long)(r->exit_ns > r->ns0 ? r->exit_ns - r->ns0 : 0));
	info_put(b, "usage", "%lld %lld %ld %ld %ld %ld %ld %ld %ld",
		 (long long)u->ru_stime.tv_sec * 1000000 + u->ru_stime.tv_usec,
		 (long long)u->ru_utime.tv_sec * 1000000 + u->ru_utime.tv_usec, u->ru_nvcsw, u->ru_nivcsw,
		 u->ru_maxrss, u->ru_majflt, u->ru_minflt, u->ru_inblock, u->ru_oublock);
}

void record_write_info(struct recording *r)
{
	struct info_text b = { 0 };
	if (!(b.f = open_memstream(&b.p, &b.len)))
		return; /* out of memory: a trace without the section, as an older needle's */
	system_part(&b, r);
	process_part(&b, r);
	int bad = ferror(b.f);
	if (fclose(b.f) == 0 && !bad && b.len)
		trace_writer_section(&r->w, SEC_INFO, b.p, b.len);
	free(b.p);
}
