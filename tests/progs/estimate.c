/* estimate.c - calls for needle record --estimate-return
 * (tests/record/test_estimate_return.sh): nested calls in 3 threads, a
 * recursion 5000 deep (past the first size of the agent's array of open
 * calls), and a count of the calls that found their return address
 * outside this program, printed last: 0 untraced and with the returns
 * left alone, the number of checks when a tracer hooks them.  No call
 * here is a tail call (each does work after its callee returns), so the
 * graph is the one function_graph records. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static long hooked;
static pthread_mutex_t hooked_lock = PTHREAD_MUTEX_INITIALIZER;

/* Is the return address of the function that called this one (its
 * caller's own return address, read there) in this program? */
NOINLINE static void check_return(void *ra)
{
	Dl_info self, at;
	if (!dladdr((void *)check_return, &self) || !dladdr(ra, &at) || at.dli_fbase != self.dli_fbase) {
		pthread_mutex_lock(&hooked_lock);
		hooked++;
		pthread_mutex_unlock(&hooked_lock);
	}
}

NOINLINE long est_leaf(long v)
{
	check_return(__builtin_return_address(0));
	return v * 3 + 1;
}

NOINLINE long est_mid(long v)
{
	long r = est_leaf(v);
	r += est_leaf(r);
	check_return(__builtin_return_address(0));
	return r + 1;
}

NOINLINE long est_top(long v)
{
	long r = est_mid(v) + est_leaf(v);
	return r ^ 7;
}

NOINLINE long est_rec(long n)
{
	if (n == 0)
		return 1;
	long r = est_rec(n - 1);
	__asm__ volatile("" : "+r"(r)); /* a real call, not a loop */
	return r + (n & 3);
}

NOINLINE static void *worker(void *arg)
{
	long s = (long)arg;
	for (long i = 0; i < 1000; i++)
		s += est_top(i);
	return (void *)s;
}

int main(void)
{
	pthread_t t[3];
	long sum = 0;

	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 3; i++) {
		void *r;
		pthread_join(t[i], &r);
		sum += (long)r;
	}
	sum += est_rec(5000);
	printf("%ld\nreturns outside the program: %ld\n", sum, hooked);
	return 0;
}
