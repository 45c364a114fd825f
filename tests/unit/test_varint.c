/* test_varint - the LEB128 varints of the trace format (src/format/varint.h):
 * round trips at every length boundary with their exact encodings,
 * truncated and over-long input rejected, and decoding that never reads
 * past the end it is given (inputs are placed right before a page that
 * cannot be read). */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "format/varint.h"

static uint8_t *guard_end; /* the first byte that must not be read */

/* Copy n bytes so that they end right at the inaccessible page. */
static const uint8_t *at_end(const uint8_t *src, size_t n)
{
	uint8_t *p = guard_end - n;
	memcpy(p, src, n);
	return p;
}

static size_t expected_len(uint64_t v)
{
	size_t n = 1;
	while (v >>= 7)
		n++;
	return n;
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map + page, (size_t)page, PROT_NONE)) {
		printf("FAIL: cannot set up a guard page\n");
		return 1;
	}
	guard_end = map + page;

	static const struct {
		uint64_t v;
		size_t len;
		uint8_t bytes[10];
	} edges[] = {
		{ 0, 1, { 0x00 } },
		{ 1, 1, { 0x01 } },
		{ 127, 1, { 0x7f } },
		{ 128, 2, { 0x80, 0x01 } },
		{ 300, 2, { 0xac, 0x02 } },
		{ (1u << 14) - 1, 2, { 0xff, 0x7f } },
		{ 1u << 14, 3, { 0x80, 0x80, 0x01 } },
		{ UINT32_MAX, 5, { 0xff, 0xff, 0xff, 0xff, 0x0f } },
		{ 1ull << 32, 5, { 0x80, 0x80, 0x80, 0x80, 0x10 } },
		{ (1ull << 63) - 1, 9, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f } },
		{ 1ull << 63, 10, { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 } },
		{ UINT64_MAX, 10, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 } },
	};

	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		uint8_t buf[16];
		memset(buf, 0xee, sizeof(buf));
		size_t n = varint_put(buf, edges[i].v);
		CHECK(n == edges[i].len && !memcmp(buf, edges[i].bytes, n) && buf[n] == 0xee,
		      "%llu encodes to its %zu exact bytes (got %zu)", (unsigned long long)edges[i].v, edges[i].len, n);

		/* Decoded from bytes that end exactly at the guard page. */
		const uint8_t *start = at_end(buf, n), *p = start;
		uint64_t out = 12345;
		int r = varint_get(&p, guard_end, &out);
		CHECK(r == 0 && out == edges[i].v && p == start + n, "%llu decodes back, consuming %zu bytes",
		      (unsigned long long)edges[i].v, n);

		/* Followed by another byte: the decoder stops after its own. */
		uint8_t two[17];
		memcpy(two, buf, n);
		two[n] = 0x05;
		start = at_end(two, n + 1);
		p = start;
		r = varint_get(&p, guard_end, &out);
		CHECK(r == 0 && out == edges[i].v && p == start + n, "%llu decodes from a longer buffer, leaving the rest",
		      (unsigned long long)edges[i].v);

		/* Every proper prefix is truncated, and reading it stays in bounds. */
		int bad = 0;
		for (size_t k = 0; k < n; k++) {
			start = at_end(buf, k);
			p = start;
			out = 777;
			r = varint_get(&p, guard_end, &out);
			bad += r != -1 || out != 777 || p > guard_end;
		}
		CHECK(bad == 0, "every prefix (0 to %zu bytes) of %llu is rejected as truncated", n - 1,
		      (unsigned long long)edges[i].v);
	}

	/* An empty input. */
	{
		const uint8_t *p = guard_end;
		uint64_t out = 9;
		CHECK(varint_get(&p, guard_end, &out) == -1 && out == 9 && p == guard_end, "an empty input is truncated");
	}

	/* Over-long: 11 or more bytes with the continuation bit are rejected
	 * whatever follows, and without reading beyond the 10th byte's
	 * successor. */
	for (size_t len = 11; len <= 20; len++) {
		uint8_t buf[32];
		memset(buf, 0x80, len - 1);
		buf[len - 1] = 0x00;
		const uint8_t *start = at_end(buf, len), *p = start;
		uint64_t out = 5;
		int r = varint_get(&p, guard_end, &out);
		CHECK(r == -1 && out == 5 && p <= start + 10, "an over-long varint of %zu bytes is rejected (read %td)", len,
		      p - start);
		memset(buf, 0xff, len);
		start = at_end(buf, len);
		p = start;
		r = varint_get(&p, guard_end, &out);
		CHECK(r == -1 && p <= start + 10, "%zu bytes of 0xff are rejected", len);
	}

	/* Ten bytes whose last one carries bits above bit 63: the value does
	 * not fit 64 bits and must not decode to a truncated one. */
	static const uint8_t too_big[] = { 0x02, 0x03, 0x40, 0x7e, 0x7f };
	for (size_t i = 0; i < sizeof(too_big); i++) {
		unsigned last = too_big[i];
		uint8_t buf[10];
		memset(buf, 0xff, 9);
		buf[9] = (uint8_t)last;
		const uint8_t *start = at_end(buf, 10), *p = start;
		uint64_t out = 5;
		int r = varint_get(&p, guard_end, &out);
		CHECK(r == -1 && out == 5, "a 10-byte varint ending in 0x%02x (beyond 64 bits) is rejected", last);
	}

	/* A non-minimal encoding within 10 bytes still means its value. */
	{
		static const uint8_t zero10[10] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
		const uint8_t *start = at_end(zero10, 10), *p = start;
		uint64_t out = 5;
		CHECK(varint_get(&p, guard_end, &out) == 0 && out == 0 && p == start + 10,
		      "a padded 10-byte encoding of 0 decodes to 0");
	}

	/* Random values of every bit length, back to back in one buffer that
	 * ends at the guard page: lengths, values and positions exact. */
	{
		enum { N = 20000 };
		static uint64_t vals[N];
		static uint8_t buf[N * 10];
		uint64_t x = 0x9e3779b97f4a7c15ull;
		size_t len = 0;
		int bad_len = 0;
		for (size_t i = 0; i < N; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			unsigned bits = (unsigned)(i % 65);
			vals[i] = bits == 64 ? x : x & ((1ull << bits) - 1);
			size_t n = varint_put(buf + len, vals[i]);
			bad_len += n != expected_len(vals[i]);
			len += n;
		}
		CHECK(bad_len == 0, "%d random values encode to ceil(bits / 7) bytes", N);
		uint8_t *copy = malloc(len);
		memcpy(copy, buf, len);
		size_t page_room = (size_t)page;
		/* The buffer is larger than a page: decode from a heap copy
		 * with an exact end, then the last page's worth at the guard. */
		const uint8_t *p = copy, *end = copy + len;
		int bad = 0;
		for (size_t i = 0; i < N; i++) {
			uint64_t out;
			if (varint_get(&p, end, &out) || out != vals[i])
				bad++;
		}
		CHECK(bad == 0 && p == end, "%d random values decode back in sequence to the exact end", N);
		free(copy);

		size_t tail_len = 0, first = N;
		for (size_t i = N, acc = 0; i-- > 0;) {
			size_t n = expected_len(vals[i]);
			if (acc + n > page_room)
				break;
			acc += n;
			first = i;
			tail_len = acc;
		}
		const uint8_t *start = at_end(buf + len - tail_len, tail_len);
		p = start;
		bad = 0;
		for (size_t i = first; i < N; i++) {
			uint64_t out;
			if (varint_get(&p, guard_end, &out) || out != vals[i])
				bad++;
		}
		uint64_t out;
		CHECK(bad == 0 && p == guard_end && varint_get(&p, guard_end, &out) == -1,
		      "the last %zu values decode up to the guard page, then the input is exhausted", N - first);
	}

	munmap(map, (size_t)page * 2);
	return harness_exit();
}
