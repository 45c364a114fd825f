/* tsc.h - the event clock: the time-stamp counter where it is usable
 * (constant and non-stop), CLOCK_MONOTONIC nanoseconds otherwise. */
#ifndef NEEDLE_TSC_H
#define NEEDLE_TSC_H

#include <stdint.h>
#include <time.h>

static inline uint64_t tsc_read(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t monotonic_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* 1 if /proc/cpuinfo says the TSC ticks at a constant rate through sleep
 * states (constant_tsc and nonstop_tsc). */
int tsc_usable(void);

#endif
