/* Built with gcc -fpatchable-function-entry=5: five 1-byte NOPs. */
#include "forms.h"
int form_gcc_nops(int x) { opaque_sink(x); return x + 1; }
