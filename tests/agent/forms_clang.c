/* Built with clang -fpatchable-function-entry=5: one 5-byte NOP. */
#include "forms.h"
int form_clang_nop5(int x) { opaque_sink(x); return x + 3; }
