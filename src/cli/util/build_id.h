/* build_id.h - an object's GNU build-id (see build_id.c). */
#ifndef NEEDLE_CLI_BUILD_ID_H
#define NEEDLE_CLI_BUILD_ID_H

#include <stddef.h>

/* The object's GNU build-id as hex into hex ("" when it has none, is
 * gone or is no ELF file). */
void build_id_of(const char *path, char *hex, size_t len);

#endif
