/* libc_workload - a multithreaded C program built without any tracing
 * flag: strings, stdio, malloc, qsort, locale, math.  Its output is
 * deterministic, and it prints how many times it called its own
 * functions (wl_*), so that a trace of it with relocated sites
 * (--sites=all, every relocatable function of the C library traced too)
 * can be checked exactly. */
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 2000

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

__attribute__((noinline)) long wl_strings(int i)
{
	char buf[128], copy[128];
	snprintf(buf, sizeof(buf), "item-%d-%x-%s", i, (unsigned)i * 2654435761u, i % 2 ? "odd" : "even");
	strcpy(copy, buf);
	strcat(copy, "/tail");
	long n = (long)strlen(copy) + (strchr(copy, 'x') ? 1 : 0) + (strstr(copy, "odd") ? 2 : 0);
	return n + strcmp(buf, copy) * 0 + (long)strtol(copy + 5, NULL, 10);
}

__attribute__((noinline)) long wl_memory(int i)
{
	size_t n = (size_t)(i % 97) + 16;
	int *v = malloc(n * sizeof(*v));
	if (!v)
		return -1;
	for (size_t k = 0; k < n; k++)
		v[k] = (int)((k * 7919u + (unsigned)i) % 1000u);
	qsort(v, n, sizeof(*v), cmp_int);
	int *w = realloc(v, 2 * n * sizeof(*w));
	if (!w) {
		free(v);
		return -1;
	}
	memcpy(w + n, w, n * sizeof(*w));
	long s = w[0] + w[n - 1] + w[2 * n - 1];
	free(w);
	return s;
}

__attribute__((noinline)) double wl_math(int i)
{
	double x = (double)i / 100.0;
	return sin(x) + cos(x) * exp(-x / 10.0) + sqrt(x + 1.0) + log1p(x);
}

static void *worker(void *arg)
{
	long id = (long)arg, acc = 0;
	double facc = 0;
	for (int i = 0; i < ROUNDS; i++) {
		acc += wl_strings(i + (int)id);
		acc += wl_memory(i + (int)id);
		facc += wl_math(i);
	}
	long *out = malloc(2 * sizeof(long));
	out[0] = acc;
	out[1] = (long)(facc * 1000.0);
	return out;
}

int main(void)
{
	pthread_t t[THREADS];
	setlocale(LC_ALL, "C");
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++) {
		long *r;
		pthread_join(t[i], (void **)&r);
		printf("thread %d: %ld %ld\n", i, r[0], r[1]);
		free(r);
	}
	char line[64];
	snprintf(line, sizeof(line), "%.3f %s", 1234.5678, "done");
	puts(line);
	printf("calls wl_strings %d wl_memory %d wl_math %d\n", THREADS * ROUNDS, THREADS * ROUNDS,
	       THREADS * ROUNDS);
	return 0;
}
