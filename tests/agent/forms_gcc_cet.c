/* Built with gcc -fpatchable-function-entry=5 -fcf-protection=full: endbr64 first. */
#include "forms.h"
int form_gcc_endbr(int x) { opaque_sink(x); return x + 2; }
