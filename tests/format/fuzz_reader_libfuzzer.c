/* fuzz_reader_libfuzzer.c - libFuzzer harness for the trace reader, built
 * with clang -fsanitize=fuzzer,address,undefined (tests/robust.mk).
 *
 * Each input is written to a memory file and read through the reader's
 * API (src/reader/trace_reader.h): trace_open, trace_verify, one pass over
 * all threads merged (peeking at each thread's next event as the views
 * do), then one pass per thread.  The reader must accept the file or say
 * what is wrong with it; AddressSanitizer, LeakSanitizer and UBSan catch
 * the rest.
 *
 * Every input is read twice: as it is, and with the CRC of each section
 * recomputed, so that mutations reach the section decoders instead of
 * stopping at the CRC check.  The second reading knows only the outer
 * framing of the file (a file header, then sections of {type, crc32,
 * length} and a payload), never what a section holds: the harness keeps
 * working when a section's contents change.
 *
 * Reproduce a finding: build/tests/fuzz/fuzz_reader_libfuzzer CRASH-FILE */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "format/trace_format.h"
#include "reader/trace_reader.h"

#define MAX_THREAD_PASSES 8

static int mem_fd = -1;
static char mem_path[64];

/* A finding the sanitizers cannot see: the reader broke its own contract. */
static void contract(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_reader: contract broken: %s\n", what);
		abort();
	}
}

static void check_event(struct trace *t, const struct trace_event *ev)
{
	contract(ev->kind >= TEV_ENTRY && ev->kind <= TEV_KERNEL, "event kind out of range");
	contract(trace_site_name(t, ev->site) != NULL, "trace_site_name returned NULL");
	(void)trace_ns(t, ev->ns);
}

/* Iterate (all threads with tid 0): 0 to the end, -1 damaged. */
static int iterate(struct trace *t, uint32_t tid)
{
	struct trace_iter it;
	struct trace_event ev, next;
	int r = trace_iter_init(&it, t, tid);
	long n = 0;

	if (r == 0) {
		while ((r = trace_iter_next(&it, &ev)) > 0) {
			check_event(t, &ev);
			contract(!tid || ev.tid == tid, "an event of another thread in a one-thread pass");
			if (++n % 7 == 0) {
				int p = trace_iter_peek_same_thread(&it, &next);
				contract(p >= -1 && p <= 1, "peek returned something else than -1, 0, 1");
				if (p > 0)
					contract(next.tid == ev.tid, "peek returned another thread's event");
				if (p < 0) {
					r = -1;
					break;
				}
			}
		}
	}
	contract(r == 0 || r == -1, "trace_iter_next returned something else than -1, 0, 1");
	if (r < 0)
		contract(it.err[0] != 0, "damage reported without a message");
	trace_iter_free(&it);
	return r;
}

static void read_once(const uint8_t *data, size_t size)
{
	char err[512];

	if (ftruncate(mem_fd, 0) || (size && pwrite(mem_fd, data, size, 0) != (ssize_t)size))
		abort();
	err[0] = 0;
	struct trace *t = trace_open(mem_path, err, sizeof(err));
	if (!t) {
		contract(err[0] != 0, "trace_open refused without a message");
		return;
	}
	err[0] = 0;
	if (trace_verify(t, err, sizeof(err)))
		contract(err[0] != 0, "trace_verify failed without a message");
	if (iterate(t, 0) == 0)
		for (size_t i = 0; i < t->thread_cnt && i < MAX_THREAD_PASSES; i++) {
			contract(trace_thread_find(t, t->threads[i].tid) != NULL, "a listed thread is not found");
			iterate(t, t->threads[i].tid);
		}
	trace_close(t);
}

/* Recompute each section's CRC in place; returns whether one changed. */
static int fix_crcs(uint8_t *buf, size_t len)
{
	size_t off = sizeof(struct trace_file_header);
	int changed = 0;

	while (off + sizeof(struct trace_section_header) <= len) {
		struct trace_section_header sh;
		memcpy(&sh, buf + off, sizeof(sh));
		off += sizeof(sh);
		if (sh.length > len - off)
			break;
		uint32_t crc = (uint32_t)crc32(0, buf + off, (uInt)sh.length);
		if (crc != sh.crc32) {
			sh.crc32 = crc;
			memcpy(buf + off - sizeof(sh), &sh, sizeof(sh));
			changed = 1;
		}
		off += sh.length;
	}
	return changed;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	mem_fd = memfd_create("needle-fuzz", 0);
	if (mem_fd < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(mem_path, sizeof(mem_path), "/proc/self/fd/%d", mem_fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_once(data, size);
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (fix_crcs(copy, size))
		read_once(copy, size);
	free(copy);
	return 0;
}
