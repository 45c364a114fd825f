/* section_crc.h - the CRC-32 of a trace file section's payload
 * (file-format.md: zlib's CRC-32, the gzip polynomial).
 *
 * Computed by libdeflate, whose CRC-32 is that same function: the
 * recorder's reader checksums every chunk it drains, beside the program
 * it drains, and the views every section they read.  zlib's table-driven
 * crc32 takes 7 us a 16 KiB chunk here (2.2 GB/s); libdeflate's, folding
 * with carry-less multiplies, a fraction of that.  zlib stays for what
 * compresses (the pprof export). */
#ifndef NEEDLE_SECTION_CRC_H
#define NEEDLE_SECTION_CRC_H

#include <libdeflate.h>
#include <stddef.h>
#include <stdint.h>

static inline uint32_t section_crc32(const void *payload, size_t len)
{
	return libdeflate_crc32(0, payload, len);
}

#endif
