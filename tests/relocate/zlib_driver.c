/* zlib_driver ROUNDS - compresses and uncompresses ROUNDS deterministic
 * buffers with zlib (built from Debian's source with patchable entries)
 * and prints their checksums.  Per round it calls compress2 and uncompress
 * once each, so the call counts of zlib's entry points are known. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define MAX_LEN 65536

static int small_buffers; /* ZLIB_DRIVER_SMALL */

static void fill(unsigned char *buf, size_t len, unsigned seed)
{
	/* Compressible: runs of a few symbols. */
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)("abcdefgh"[(seed + i / (1 + seed % 7)) % 8]);
}

__attribute__((noinline)) static int round_trip(unsigned seed, unsigned long *crc_out)
{
	static unsigned char in[MAX_LEN], packed[MAX_LEN + 1024], out[MAX_LEN];
	/* ZLIB_DRIVER_SMALL: buffers of 64 to 575 bytes, so that calls, not
	 * the bytes they compress, take the time (the benchmark's view of a
	 * tracer's cost per call). */
	size_t len = small_buffers ? 64 + seed % 512 : 1024 + (seed * 7919) % (MAX_LEN - 1024);
	uLongf packed_len = sizeof(packed), out_len = sizeof(out);

	fill(in, len, seed);
	if (compress2(packed, &packed_len, in, len, 6) != Z_OK)
		return -1;
	if (uncompress(out, &out_len, packed, packed_len) != Z_OK || out_len != len || memcmp(in, out, len))
		return -1;
	*crc_out = crc32(*crc_out, packed, (uInt)packed_len);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	unsigned long crc = crc32(0, NULL, 0);
	struct timespec a, b;

	small_buffers = getenv("ZLIB_DRIVER_SMALL") != NULL;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < rounds; i++) {
		if (round_trip((unsigned)i, &crc)) {
			fprintf(stderr, "zlib_driver: round %d failed\n", i);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	/* For the benchmark: the loop's time, without start-up and exit. */
	if (getenv("ZLIB_DRIVER_TIMING"))
		fprintf(stderr, "loop_ns %.0f\n", (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec));
	printf("%d rounds, crc32 of the compressed data %08lx\n", rounds, crc);
	return 0;
}
