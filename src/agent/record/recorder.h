/* recorder.h - the function and function_graph tracers: a consumer that
 * writes entry/exit events into the shared trace buffer of `needle record`. */
#ifndef NEEDLE_RECORDER_H
#define NEEDLE_RECORDER_H

/* If the environment carries a trace buffer (NEEDLE_BUFFER_FD), attach the
 * recorder as it asks.  Caller holds the control mutex.  0 when there is
 * nothing to record, 1 when recording, negative errno on failure (also
 * reported to the reader through the buffer header). */
int recorder_start_from_env(void);

#endif
