/* export.h - the export formats of `needle export`. */
#ifndef NEEDLE_EXPORT_H
#define NEEDLE_EXPORT_H

#include <stdio.h>

#include "reader/trace_reader.h"

/* Each writes the whole trace to out; 0, or 1 if the trace is damaged. */
int export_perfetto(struct trace *t, FILE *out);
int export_chrome(struct trace *t, FILE *out);
int export_folded(struct trace *t, FILE *out);

#endif
