/* harness.h - a minimal test harness.  Each check prints one line; the
 * runner (tests/run.sh) counts "PASS:" and "FAIL:" lines across programs
 * and prints the "N passed, N failed" summary. */
#ifndef NEEDLE_TEST_HARNESS_H
#define NEEDLE_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int harness_failures;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (cond) {                                                     \
			printf("PASS: ");                                       \
		} else {                                                        \
			printf("FAIL: %s:%d: (%s) ", __FILE__, __LINE__, #cond); \
			harness_failures++;                                     \
		}                                                               \
		printf(__VA_ARGS__);                                            \
		printf("\n");                                                   \
		fflush(stdout);                                                 \
	} while (0)

#define CHECK_EQ(a, b, ...)                                                              \
	do {                                                                             \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);         \
		CHECK(check_a_ == check_b_, __VA_ARGS__);                               \
		if (check_a_ != check_b_)                                               \
			printf("      got %lld, expected %lld\n", check_a_, check_b_);      \
	} while (0)

static inline int harness_exit(void)
{
	return harness_failures ? 1 : 0;
}

/* Marsaglia's xorshift64: the tests' reproducible random numbers, from a
 * nonzero state of the test's own. */
static inline uint64_t harness_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
