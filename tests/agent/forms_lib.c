/* A shared object dlopen'ed by the test after start-up. */
#include "forms.h"
int form_dlopen(int x) { opaque_sink(x); return x + 7; }
