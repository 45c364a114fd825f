/* task_graph.h - `needle graph --task` (task_graph.c). */
#ifndef NEEDLE_TASK_GRAPH_H
#define NEEDLE_TASK_GRAPH_H

#include <stdint.h>

#include "reader/trace_reader.h"

/* Print t's task tree, the tasks that lasted min_ns or more (and their
 * parents).  0, or 1 after printing why. */
int graph_task(struct trace *t, uint64_t min_ns);

#endif
