/* version.c - the version of the library the program runs with. */
#include "needle.h"

NEEDLE_API uint32_t needle_version(void)
{
	return NEEDLE_VERSION;
}
