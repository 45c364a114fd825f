/* Built with clang -fpatchable-function-entry=5 -fcf-protection=full. */
#include "forms.h"
int form_clang_endbr(int x) { opaque_sink(x); return x + 4; }
