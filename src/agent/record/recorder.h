/* recorder.h - the function and function_graph tracers: a consumer that
 * writes entry/exit events into the shared trace buffer of `needle record`. */
#ifndef NEEDLE_RECORDER_H
#define NEEDLE_RECORDER_H

#include <stdatomic.h>
#include <stdint.h>

#include <stddef.h>
#include <stdint.h>

/* If the environment carries a trace buffer (NEEDLE_BUFFER_FD), attach the
 * recorder as it asks.  Caller holds the control mutex.  0 when there is
 * nothing to record, 1 when recording, negative errno on failure (also
 * reported to the reader through the buffer header). */
int recorder_start_from_env(void);
/* Counters in the trace buffer's header for threads that run untraced,
 * for the agent to wire to the thread-state pool (NULLs when not
 * recording). */
void recorder_untraced_counters(_Atomic uint64_t **refused, _Atomic uint64_t **shared_tls);

/* The agent could not start: tell `needle record` why (if it asked). */
void recorder_report_failure(int err);

/* A change asked for through the control socket (control.c). */
struct recorder_config {
	int set_filter, set_notrace, set_tracer, set_depth;
	const char *filter, *notrace; /* newline-separated globs; "" = all / none */
	int graph;                    /* 1 function_graph, 0 function */
	uint32_t depth;               /* 0 = unlimited */
};

/* Apply cfg to the live recording: one patch batch at most.  Caller holds
 * the control mutex.  0 or -errno; msg says what happened either way. */
int recorder_reconfigure(const struct recorder_config *cfg, char *msg, size_t msglen);

#endif
