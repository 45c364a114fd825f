/* Built with gcc -pg -mfentry -mnop-mcount -fno-pie: a NOP5 at entry. */
#include "forms.h"
int form_mnop_mcount(int x) { opaque_sink(x); return x + 6; }
