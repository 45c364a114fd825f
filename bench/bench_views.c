/* bench_views - how long each view takes per million events on a trace of
 * deep stacks, and how much memory it needs.
 *
 *   bench_views recurse ITERATIONS DEPTH   the traced workload: ITERATIONS
 *                                          recursions DEPTH calls deep
 *   bench_views run NEEDLE DIR [EVENTS]    record the workload (EVENTS,
 *                                          default 50M, at depth 1,000)
 *                                          into DIR/views.data, then run
 *                                          every view on it, its output to
 *                                          /dev/null
 *
 * "run" prints one line per figure, as bench/run.sh collects them:
 *   view_s_per_mevent_<view>  wall seconds per million events
 *   view_max_rss_kib_<view>   the view's peak resident memory (wait4)
 *   tui_first_screen_ms       needle tui in a terminal (a pty, 100x30): from
 *                             its start to its first screen with calls
 *   tui_s_per_mevent          ... to its status line saying the whole
 *                             trace is read (view_max_rss_kib_tui)
 *   trigger_<action>_ns       replay -T 'recurse@ACTION': ns per event
 *                             (uftrace's triggers run in the views; replay
 *                             alone is view_s_per_mevent_replay x 1000; an
 *                             action that hides calls also saves their
 *                             output)
 * Views are run one after another, never side by side. */
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) long recurse(int d)
{
	long s = d;
	if (d > 1)
		s += recurse(d - 1);
	/* Not a tail call: every level is a real frame. */
	__asm__ volatile("" : "+r"(s));
	return s;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Run argv with stdout (and stdin) on /dev/null; 0 and its peak RSS, or -1. */
static int run(char *const argv[], long *max_rss_kib, int quiet)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		if (quiet)
			dup2(null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	*max_rss_kib = ru.ru_maxrss;
	return 0;
}

/* needle tui on a pty: the seconds to its first screen that shows a call
 * (its header line, then a line under it) and to the status line of a
 * trace read whole ("events, "), then q; its peak RSS.  0, or -1. */
static int run_tui(const char *needle, const char *data, double *first_s, double *all_s, long *rss)
{
	struct winsize ws = { .ws_row = 30, .ws_col = 100 };
	int fd;
	double t0 = now();
	pid_t pid = forkpty(&fd, NULL, NULL, &ws);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setenv("TERM", "xterm", 1);
		execl(needle, needle, "tui", "-i", data, (char *)NULL);
		_exit(127);
	}
	/* The screen's text arrives between escape sequences: the last
	 * bytes are kept so that a word split between reads is seen. */
	char buf[65536], tail[256] = "";
	*first_s = *all_s = -1;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 120000) <= 0)
			break;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		if (n <= 0)
			break;
		buf[n] = 0;
		for (ssize_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		char joined[sizeof(tail) + sizeof(buf)];
		snprintf(joined, sizeof(joined), "%s%s", tail, buf);
		if (*first_s < 0 && strstr(joined, "FUNCTION") && strstr(joined, "recurse"))
			*first_s = now() - t0;
		if (strstr(joined, "events, ")) {
			*all_s = now() - t0;
			if (*first_s < 0)
				*first_s = *all_s;
			if (write(fd, "q", 1) != 1)
				break;
		}
		size_t len = strlen(joined);
		snprintf(tail, sizeof(tail), "%s", joined + (len > sizeof(tail) - 1 ? len - (sizeof(tail) - 1) : 0));
	}
	int status;
	struct rusage ru;
	if (*all_s < 0)
		kill(pid, SIGTERM);
	if (wait4(pid, &status, 0, &ru) != pid)
		return -1;
	close(fd);
	*rss = ru.ru_maxrss;
	return *all_s < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ? -1 : 0;
}

static long long trace_events(const char *needle, const char *data)
{
	char cmd[8192], line[512];
	long long events = -1;

	snprintf(cmd, sizeof(cmd), "'%s' info -i '%s'", needle, data);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "events: %lld", &events) == 1)
			break;
	pclose(p);
	return events;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "recurse")) {
		long iterations = atol(argv[2]), s = 0;
		int depth = atoi(argv[3]);
		for (long i = 0; i < iterations; i++)
			s += recurse(depth);
		return s == 42; /* keep the result */
	}
	if (argc < 4 || strcmp(argv[1], "run")) {
		fprintf(stderr, "usage: bench_views recurse ITERATIONS DEPTH | run NEEDLE DIR [EVENTS]\n");
		return 2;
	}
	char *needle = argv[2], data[4096], iters[32], self[4096];
	long long want = argc > 4 ? atoll(argv[4]) : 50000000;
	const int depth = 1000;
	long rss;

	snprintf(data, sizeof(data), "%s/views.data", argv[3]);
	snprintf(iters, sizeof(iters), "%lld", want / (2 * depth));
	if (!realpath("/proc/self/exe", self))
		return 1;
	/* A buffer that holds the whole run: no event may be lost. */
	char *rec[] = { needle, "record", "--buffer-size=256", "-o", data, "--", self, "recurse", iters, "1000", NULL };
	if (run(rec, &rss, 1)) {
		fprintf(stderr, "bench_views: recording failed\n");
		return 1;
	}
	long long events = trace_events(needle, data);
	if (events <= 0)
		return 1;
	fprintf(stderr, "bench_views: %lld events, recursion %d deep\n", events, depth);
	static const struct {
		const char *key;
		const char *args[4];
	} views[] = {
		{ "replay", { "replay" } },
		{ "report", { "report" } },
		{ "folded", { "export", "--format=folded", "-o", "-" } },
		{ "perfetto", { "export", "--format=perfetto", "-o", "-" } },
		{ "chrome", { "export", "--format=chrome", "-o", "-" } },
		{ "pprof", { "export", "--format=pprof", "-o", "-" } },
		{ "otlp", { "export", "--format=otlp", "-o", "-" } },
		{ "graph", { "graph" } },
	};
	double replay_s = -1;
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		char *v[10] = { needle };
		int n = 1;
		for (int j = 0; j < 4 && views[i].args[j]; j++)
			v[n++] = (char *)views[i].args[j];
		v[n++] = "-i";
		v[n++] = data;
		double t0 = now();
		if (run(v, &rss, 0)) {
			fprintf(stderr, "bench_views: %s failed\n", views[i].key);
			continue;
		}
		double s = now() - t0;
		if (!strcmp(views[i].key, "replay"))
			replay_s = s;
		printf("view_s_per_mevent_%s %.4f\n", views[i].key, s / (events / 1e6));
		/* The exports' keys of their own (issue-named). */
		if (!strcmp(views[i].key, "pprof") || !strcmp(views[i].key, "otlp"))
			printf("export_%s_s_per_mevent %.4f\n", views[i].key, s / (events / 1e6));
		printf("view_max_rss_kib_%s %ld\n", views[i].key, rss);
		fflush(stdout);
	}
	/* The interactive view: how soon it shows, how long to read it all. */
	{
		double first, all;
		if (!run_tui(needle, data, &first, &all, &rss)) {
			printf("tui_first_screen_ms %.1f\n", first * 1e3);
			printf("view_s_per_mevent_tui %.4f\n", all / (events / 1e6));
			printf("view_max_rss_kib_tui %ld\n", rss);
			fflush(stdout);
		} else {
			fprintf(stderr, "bench_views: tui failed\n");
		}
	}
	/* uftrace's triggers, each on the recursive function. */
	static const struct {
		const char *key, *spec;
	} triggers[] = {
		{ "depth", "recurse@depth=10" }, { "time", "recurse@time=1ms" }, { "hide", "recurse@hide" },
		{ "filter", "recurse@filter" },  { "notrace", "recurse@notrace" }, { "trace_off", "recurse@trace_off" },
		{ "finish", "recurse@finish" },
	};
	for (size_t i = 0; replay_s > 0 && i < sizeof(triggers) / sizeof(triggers[0]); i++) {
		char *v[] = { needle, "replay", "-T", (char *)triggers[i].spec, "-i", data, NULL };
		double t0 = now();
		if (run(v, &rss, 0)) {
			fprintf(stderr, "bench_views: replay -T %s failed\n", triggers[i].spec);
			continue;
		}
		printf("trigger_%s_ns %.3f\n", triggers[i].key, (now() - t0) * 1e9 / (double)events);
		fflush(stdout);
	}
	/* The CTF export writes a directory: one of its own, removed after. */
	{
		char dir[4200], cmd[4300];
		snprintf(dir, sizeof(dir), "%s.ctf", data);
		char *v[] = { needle, "export", "--format=ctf", "-o", dir, "-i", data, NULL };
		double t0 = now();
		if (!run(v, &rss, 0)) {
			double s = now() - t0;
			printf("view_s_per_mevent_ctf %.4f\n", s / (events / 1e6));
			printf("view_max_rss_kib_ctf %ld\n", rss);
			printf("export_ctf_s_per_mevent %.4f\n", s / (events / 1e6));
		} else {
			fprintf(stderr, "bench_views: ctf failed\n");
		}
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "bench_views: could not remove %s\n", dir);
	}
	unlink(data);
	return 0;
}
