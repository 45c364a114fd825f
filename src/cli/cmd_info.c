/* cmd_info.c - `needle info`: what a trace file holds: the header, the
 * recorded command, the clock, threads with their event and loss counts,
 * and the totals of the END section. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "view_common.h"

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *input = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		if (c == 'i') {
			input = optarg;
		} else {
			fputs("usage: needle info [-i FILE]\n", c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc) {
		cli_error("info: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	struct trace *t = view_open(input);
	char err[512];
	if (!t)
		return 1;
	if (trace_verify(t, err, sizeof(err))) {
		cli_error("%s: %s", t->path, err);
		trace_close(t);
		return 1;
	}
	static const char *const modes[] = { "wait", "poll", "buffer-percent" };
	printf("file:          %s (format version %u)\n", t->path, t->header.version);
	printf("tracer:        %s\n", t->tracer == TRACER_FUNCTION ? "function" : "function_graph");
	if (t->have_process) {
		printf("command:      ");
		for (size_t i = 0; t->argv && t->argv[i]; i++)
			printf(" %s", t->argv[i]);
		printf("\npid:           %u\n", t->process.pid);
		int st = t->process.wait_status;
		if (WIFEXITED(st))
			printf("exit:          status %d\n", WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			printf("exit:          killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
		printf("reader:        %s", modes[t->process.wake_mode < 3 ? t->process.wake_mode : 0]);
		if (t->process.wake_mode == 1)
			printf(" every %u ms", t->process.wake_arg);
		else if (t->process.wake_mode == 2)
			printf(" %u%%", t->process.wake_arg);
		printf(", buffer %llu MiB\n", (unsigned long long)(t->process.buffer_bytes >> 20));
	}
	printf("clock:         %s", t->clock.source == TRACE_CLOCK_TSC ? "tsc" : "monotonic");
	if (t->clock.source == TRACE_CLOCK_TSC)
		printf(" (%.3f GHz)", 1.0 / t->ns_per_raw);
	printf("\nmodules:       %zu\n", t->module_cnt);
	for (size_t i = 0; i < t->module_cnt; i++)
		printf("  [%zu] %s\n", i, t->modules[i]);
	size_t sites = 0;
	for (size_t i = 0; i < t->site_cap; i++)
		sites += t->sites[i].name != NULL;
	printf("sites:         %zu known, %llu traced\n", sites, (unsigned long long)t->end.sites_traced);
	printf("events:        %llu in %llu chunks (%llu salvaged after the program ended)\n",
	       (unsigned long long)t->end.events, (unsigned long long)t->end.chunks,
	       (unsigned long long)t->end.salvaged_chunks);
	printf("lost events:   %llu\n", (unsigned long long)t->end.lost_events);
	printf("reader wakeups by the program: %llu\n", (unsigned long long)t->end.producer_wakeups);
	printf("threads:       %zu\n", t->thread_cnt);
	printf("  %8s  %-16s  %12s  %10s  %8s\n", "TID", "NAME", "EVENTS", "LOST", "CHUNKS");
	for (size_t i = 0; i < t->thread_cnt; i++) {
		struct trace_thread *th = &t->threads[i];
		printf("  %8u  %-16s  %12llu  %10llu  %8zu\n", th->tid, th->name[0] ? th->name : "?",
		       (unsigned long long)th->events, (unsigned long long)th->lost, th->chunk_cnt);
	}
	trace_close(t);
	return view_close_output(stdout, "standard output");
}
