/* usdt_prog N [wait|sema] - USDT probes (<sys/sdt.h>) at known places, each
 * with a semaphore, as the programs that guard costly probe arguments have:
 *   step(i)    fires usdt_test:step with i, N times
 *   guarded(i) fires usdt_test:guarded with i only while a tracer holds its
 *              semaphore (if USDT_TEST_GUARDED_ENABLED()), N times then
 *   a thread   fires usdt_test:worker N times, in work()
 * and prints the sum of step's results.  With "wait", it then prints
 * "ready pid=PID", waits for its stdin to reach end of file, and calls
 * step(i) N times more (a test attaches meanwhile).  With "sema", it
 * prints its semaphores' values at the end (a tracer's count of each). */
#define _SDT_HAS_SEMAPHORES 1
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

unsigned short usdt_test_step_semaphore __attribute__((section(".probes")));
unsigned short usdt_test_guarded_semaphore __attribute__((section(".probes")));
unsigned short usdt_test_worker_semaphore __attribute__((section(".probes")));

static long n;

NOINLINE long step(long i)
{
	STAP_PROBE1(usdt_test, step, i);
	return i * 3;
}

NOINLINE void guarded(long i)
{
	if (__builtin_expect(usdt_test_guarded_semaphore, 0))
		STAP_PROBE1(usdt_test, guarded, i);
}

NOINLINE void work(void)
{
	STAP_PROBE(usdt_test, worker);
}

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < n; i++)
		work();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	long s = 0;

	n = argc > 1 ? atol(argv[1]) : 10;
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	for (long i = 0; i < n; i++) {
		s += step(i);
		guarded(i);
	}
	pthread_join(t, NULL);
	if (argc > 2 && !strcmp(argv[2], "wait")) {
		char buf[256];
		printf("ready pid=%d\n", (int)getpid());
		fflush(stdout);
		while (read(0, buf, sizeof(buf)) > 0)
			;
		for (long i = 0; i < n; i++)
			s += step(i);
	}
	if (argc > 2 && !strcmp(argv[2], "sema"))
		printf("semaphores step=%u guarded=%u worker=%u\n", usdt_test_step_semaphore, usdt_test_guarded_semaphore,
		       usdt_test_worker_semaphore);
	printf("sum %ld\n", s);
	return 0;
}
