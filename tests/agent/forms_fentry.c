/* Built with gcc -pg -mfentry: call __fentry__ (through the GOT when PIE,
 * through the PLT when not). */
#include "forms.h"
int form_fentry_call(int x) { opaque_sink(x); return x + 5; }
