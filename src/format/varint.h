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

/* The bytes varint_put writes for v. */
static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A signed value as an unsigned one that stays small when the value is
 * small either side of 0 (protobuf's sint): d << 1 ^ d >> 63. */
static inline uint64_t varint_zigzag(uint64_t d)
{
	return d << 1 ^ (uint64_t)((int64_t)d >> 63);
}
static inline uint64_t varint_unzigzag(uint64_t z)
{
	return z >> 1 ^ (uint64_t)-(int64_t)(z & 1);
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
