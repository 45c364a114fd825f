/* exit_prog [loop] - the functions whose exits a compiler prepared: built
 * twice, with gcc's exit NOP5s (-pg -mfentry -mnop-mcount
 * -minstrument-return=nop5 -mrecord-return) and with LLVM XRay's exit and
 * tail-call sleds (clang -fxray-instrument).  Two threads each run
 * e_round ROUNDS times: a plain nested call, two sibling calls (one
 * direct, one through a pointer: a jmp where a ret would be), a
 * recursion, and a longjmp out of two traced calls.  Prints what it
 * computed and how many calls of each function it made, so that a trace
 * can be checked exactly.  With "loop", runs e_slow (a traced call that
 * sleeps 20 ms) until SIGTERM, so that a detach finds calls in flight. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ROUNDS 500
#define DEPTH 6

static volatile sig_atomic_t stop;
static __thread jmp_buf jump_back;

__attribute__((noinline)) long e_leaf(long x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

__attribute__((noinline)) long e_mid(long x)
{
	return e_leaf(x) + e_leaf(x + 1);
}

/* A sibling call: the compiler ends e_sib with "jmp e_leaf". */
__attribute__((noinline)) long e_sib(long x)
{
	return e_leaf(x + 2);
}

static long (*volatile leaf_ptr)(long) = e_leaf;

/* A sibling call through a register. */
__attribute__((noinline)) long e_sib_ptr(long x)
{
	return leaf_ptr(x + 3);
}

static long (*volatile rec_ptr)(long);

__attribute__((noinline)) long e_rec(long n)
{
	return n ? rec_ptr(n - 1) + 1 : 0;
}

__attribute__((noinline)) void e_jump_inner(long x)
{
	if (x >= 0)
		longjmp(jump_back, 1);
	__asm__ volatile("");
}

__attribute__((noinline)) void e_jump_mid(long x)
{
	e_jump_inner(x);
	__asm__ volatile("");
}

/* setjmp in a function of its own (the traced one around it returns
 * normally); the longjmp skips e_jump_mid's and e_jump_inner's returns. */
__attribute__((noinline)) long e_jump(long x)
{
	if (!setjmp(jump_back))
		e_jump_mid(x);
	return e_leaf(x);
}

__attribute__((noinline)) long e_round(long i)
{
	return e_mid(i) + e_sib(i) + e_sib_ptr(i) + rec_ptr(DEPTH) + e_jump(i);
}

__attribute__((noinline)) void e_slow(void)
{
	struct timespec d = { 0, 20 * 1000 * 1000 };
	nanosleep(&d, NULL);
}

static void *worker(void *arg)
{
	long *sum = arg;
	for (long i = 0; i < ROUNDS; i++)
		*sum += e_round(i);
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	rec_ptr = e_rec;
	if (argc > 1 && !strcmp(argv[1], "loop")) {
		signal(SIGTERM, on_term);
		long n = 0;
		while (!stop) {
			e_slow();
			n += e_mid(n) > 0;
		}
		printf("loop done %d\n", n > 0);
		return 0;
	}
	pthread_t t[2];
	long sums[2] = { 0, 0 };
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, &sums[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("sums %ld %ld\n", sums[0], sums[1]);
	long r = 2 * ROUNDS;
	/* e_leaf: 2 in e_mid, 1 in e_sib, 1 in e_sib_ptr, 1 in e_jump. */
	printf("calls e_round %ld e_mid %ld e_leaf %ld e_sib %ld e_sib_ptr %ld e_rec %ld e_jump %ld "
	       "e_jump_mid %ld e_jump_inner %ld\n",
	       r, r, 5 * r, r, r, (DEPTH + 1) * r, r, r, r);
	return 0;
}
