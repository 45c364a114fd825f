/* args_prog - functions with known arguments, for needle record -A / -R:
 * integers of every width and sign, chars, pointers (NULL too), doubles
 * and floats, in 2 threads.  Prints every value it passes and every value
 * returned, in the form replay shows them, so that a test compares the two
 * exactly. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CALLS 3

__attribute__((noinline)) long a_ints(int8_t a, uint16_t b, int32_t c, uint64_t d, int64_t e, char f)
{
	__asm__ volatile("");
	return (long)a + b + c + (long)d + e + f;
}

__attribute__((noinline)) double a_fp(double x, float y, double z)
{
	__asm__ volatile("");
	return x * y + z;
}

__attribute__((noinline)) const void *a_ptr(const void *p, unsigned long n)
{
	__asm__ volatile("");
	return n ? p : NULL;
}

__attribute__((noinline)) int a_neg(int x)
{
	__asm__ volatile("");
	return -x;
}

static char buf[16];

__attribute__((noinline)) long a_str(const char *s, long n)
{
	__asm__ volatile("" : : "r"(s));
	return n;
}

/* A string another thread rewrites while a_str's is read. */
static char volatile_str[32] = "aaaaaaaaaaaaaaaaaaaa";
static volatile int stop_writer;

static void *writer(void *arg)
{
	(void)arg;
	for (unsigned i = 0; !stop_writer; i++)
		for (int k = 0; k < 20; k++)
			((volatile char *)volatile_str)[k] = (char)('a' + (i + (unsigned)k) % 26);
	return NULL;
}

/* Strings: ordinary, NULL, a bad pointer, longer than --max-string, one
 * that ends right before an unmapped page, and one being rewritten. */
static void strings(void)
{
	char longer[201];
	memset(longer, 'x', 200);
	longer[200] = 0;
	printf("a_str(arg1=\"user:42\", arg2=7) = %ld;\n", a_str("user:42", 7));
	printf("a_str(arg1=NULL, arg2=0) = %ld;\n", a_str(NULL, 0));
	printf("a_str(arg1=(bad ptr 0x8), arg2=1) = %ld;\n", a_str((const char *)8, 1));
	/* Cut at the default --max-string, 98 bytes (--arg-names: whole). */
	printf("a_str(arg1=\"%.98s\"..., arg2=100) = %ld;\n", longer, a_str(longer, 100));
	long page = sysconf(_SC_PAGESIZE);
	char *two = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(two + page, (size_t)page);
	char *edge = two + page - 5;
	memcpy(edge, "edge", 5);
	printf("a_str(arg1=\"edge\", arg2=4) = %ld;\n", a_str(edge, 4));
	pthread_t w;
	pthread_create(&w, NULL, writer, NULL);
	for (int i = 0; i < 1000; i++)
		a_str(volatile_str, 20);
	stop_writer = 1;
	pthread_join(w, NULL);
	printf("rewritten 1000\n");
}

/* Each thread's lines, printed by main in thread order after the joins:
 * the output does not depend on how the threads interleave. */
static char lines[2][4096];
static size_t lines_len[2];
#define LINE(t, ...) \
	(lines_len[t] += (size_t)snprintf(lines[t] + lines_len[t], sizeof(lines[t]) - lines_len[t], __VA_ARGS__))

static void *worker(void *arg)
{
	long t = (long)arg;
	for (long i = 0; i < CALLS; i++) {
		int8_t a = (int8_t)(-100 - i);
		uint16_t b = (uint16_t)(60000 + i);
		int32_t c = (int32_t)(-2000000000 + t);
		uint64_t d = 0xfedcba9876543210ull + (uint64_t)i;
		int64_t e = -(int64_t)(1ll << 40) - i;
		char f = (char)('a' + i);
		long r = a_ints(a, b, c, d, e, f);
		LINE(t, "a_ints(arg1=%d, arg2=%u, arg3=%d, arg4=0x%llx, arg5=%lld, arg6='%c') = %ld;\n", a, b, c,
		       (unsigned long long)d, (long long)e, f, r);
		double x = 1.5 + (double)i, z = -0.25;
		float y = 2.0f + (float)t;
		double fr = a_fp(x, y, z);
		LINE(t, "a_fp(fparg1=%g, fparg2=%g, fparg3=%g) = %g;\n", x, (double)y, z, fr);
		const void *p = a_ptr(i ? buf + i : NULL, (unsigned long)i);
		LINE(t, "a_ptr(arg1=0x%llx, arg2=%lu) = 0x%llx;\n", i ? (unsigned long long)(uintptr_t)(buf + i) : 0ull,
		       (unsigned long)i, (unsigned long long)(uintptr_t)p);
		int nr = a_neg((int)(i * 1000 + t));
		LINE(t, "a_neg(arg1=%d) = %d;\n", (int)(i * 1000 + t), nr);
	}
	return NULL;
}

int main(void)
{
	pthread_t th[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	fputs(lines[0], stdout);
	fputs(lines[1], stdout);
	strings();
	return 0;
}
