/* varint.h - LEB128 unsigned varints, the unit of needle's compact event
 * encoding. */
#ifndef NEEDLE_VARINT_H
#define NEEDLE_VARINT_H

#include <stddef.h>
#include <stdint.h>

static inline size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Decode from [*p, end); 0 on success, -1 on a truncated or overlong
 * varint, or one whose value does not fit 64 bits (a 10th byte above 1). */
static inline int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

#endif
