/* fentry_race_lib.c - an object built with gcc -pg -mfentry -fPIC, whose
 * every function starts with the 6-byte `call *__fentry__@GOTPCREL(%rip)`.
 * Its constructor starts two threads that call those functions in a loop
 * and check every result, so that they are running through the sites
 * while needle's dlopen hook discovers the object and rewrites each
 * 6-byte call into "NOP5; NOP1" (an int3 batch, threads not stopped).
 * fr_stop() ends the threads and returns how many results were wrong;
 * a thread sent into the middle of an instruction crashes instead. */
#include <pthread.h>
#include <stdatomic.h>

#define FR_FUNCS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) \
	X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)

#define FR_DEF(n) __attribute__((noinline)) long fr_f##n(long x) { __asm__ volatile(""); return x * (n + 3) + n; }
FR_FUNCS(FR_DEF)

typedef long (*fr_fn)(long);
#define FR_REF(n) fr_f##n,
static fr_fn volatile funcs[] = { FR_FUNCS(FR_REF) };
#define FR_CNT ((long)(sizeof(funcs) / sizeof(funcs[0])))

static atomic_int stop;
static atomic_long wrong, started;
static pthread_t threads[2];
static int created;

static void *spin(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	for (long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		long n = i % FR_CNT;
		if (funcs[n](i) != i * (n + 3) + n)
			atomic_fetch_add(&wrong, 1);
	}
	return NULL;
}

__attribute__((constructor)) static void fr_start(void)
{
	while (created < 2 && !pthread_create(&threads[created], NULL, spin, NULL))
		created++;
	/* They run before dlopen returns, so before the object is patched. */
	while (atomic_load(&started) < created)
		;
}

long fr_stop(void)
{
	atomic_store(&stop, 1);
	for (int i = 0; i < created; i++)
		pthread_join(threads[i], NULL);
	/* A thread that could not be created is a wrong result too. */
	return atomic_load(&wrong) + (2 - created);
}
