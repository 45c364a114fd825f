/* fuzz_reader SEED_TRACE ITERATIONS - mutate a valid trace file in many
 * ways and run the reader over each: opening, then iterating every event.
 * The reader must either succeed or report an error; built with
 * AddressSanitizer, any out-of-bounds access or leak-free crash fails the
 * run.  Half the mutations fix the section CRCs up afterwards, so that
 * malformed content reaches the decoders instead of stopping at the CRC.
 * Deterministic: the PRNG is seeded with the iteration number. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "harness.h"
#include "format/trace_format.h"
#include "reader/trace_reader.h"

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fix_crcs(uint8_t *buf, size_t len)
{
	size_t off = sizeof(struct trace_file_header);
	while (off + sizeof(struct trace_section_header) <= len) {
		struct trace_section_header sh;
		memcpy(&sh, buf + off, sizeof(sh));
		off += sizeof(sh);
		if (sh.length > len - off)
			return;
		sh.crc32 = (uint32_t)crc32(0, buf + off, (uInt)sh.length);
		memcpy(buf + off - sizeof(sh), &sh, sizeof(sh));
		off += sh.length;
	}
}

static void mutate(uint8_t *buf, size_t *len)
{
	switch (rng() % 6) {
	case 0: /* flip bits */
		for (int i = 0, n = 1 + (int)(rng() % 8); i < n; i++)
			buf[rng() % *len] ^= (uint8_t)(1u << (rng() % 8));
		break;
	case 1: /* random bytes */
		for (int i = 0, n = 1 + (int)(rng() % 16); i < n; i++)
			buf[rng() % *len] = (uint8_t)rng();
		break;
	case 2: /* truncate */
		*len = rng() % *len;
		break;
	case 3: { /* a large 32- or 64-bit value somewhere */
		size_t at = rng() % (*len > 8 ? *len - 8 : 1);
		uint64_t v = rng() % 2 ? ~0ull : (uint64_t)rng() << (rng() % 48);
		memcpy(buf + at, &v, *len - at < 8 ? *len - at : (rng() % 2 ? 4 : 8));
		break;
	}
	case 4: /* duplicate a slice over another place */ {
		size_t a = rng() % *len, b = rng() % *len, n = rng() % 64;
		if (a + n <= *len && b + n <= *len)
			memmove(buf + b, buf + a, n);
		break;
	}
	default: /* zero a run */ {
		size_t a = rng() % *len, n = rng() % 32;
		if (a + n <= *len)
			memset(buf + a, 0, n);
	}
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: fuzz_reader SEED_TRACE ITERATIONS\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	static uint8_t seed[8 << 20], buf[8 << 20];
	size_t seed_len = fread(seed, 1, sizeof(seed), f);
	fclose(f);
	long iterations = atol(argv[2]);
	char path[] = "/tmp/needle-fuzz-XXXXXX";
	int fd = mkstemp(path);
	long opened = 0, damaged = 0, clean = 0;
	char err[512];

	CHECK(fd >= 0 && seed_len > 64, "seed trace read (%zu bytes)", seed_len);
	for (long i = 0; i < iterations; i++) {
		size_t len = seed_len;
		rng_state = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
		memcpy(buf, seed, len);
		for (int m = 0, n = 1 + (int)(rng() % 3); m < n && len; m++)
			mutate(buf, &len);
		if (rng() % 2)
			fix_crcs(buf, len);
		if (ftruncate(fd, 0) || pwrite(fd, buf, len, 0) != (ssize_t)len)
			return 2;
		struct trace *t = trace_open(path, err, sizeof(err));
		if (!t) {
			/* Every refusal must say something. */
			if (!err[0])
				printf("FAIL: iteration %ld: refused without a message\n", i);
			continue;
		}
		opened++;
		struct trace_iter it;
		struct trace_event ev;
		int r = trace_iter_init(&it, t, 0);
		while (r == 0 && (r = trace_iter_next(&it, &ev)) > 0)
			(void)trace_site_name(t, ev.site);
		if (r < 0) {
			damaged++;
			if (!it.err[0])
				printf("FAIL: iteration %ld: damage without a message\n", i);
		} else {
			clean++;
		}
		trace_iter_free(&it);
		trace_close(t);
	}
	unlink(path);
	CHECK(1, "%ld mutated traces: %ld opened (%ld read to the end, %ld found damaged while reading), "
		 "the rest refused with a message", iterations, opened, clean, damaged);
	return harness_exit();
}
