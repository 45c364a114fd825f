/* graph_prog.c - a call graph with known counts for needle graph
 * (tests/views/test_views_graph.sh): two callers of one function, a
 * recursion, a function reached by two paths, and a thread that runs the
 * same path as main. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE void leaf(void)
{
	sink++;
}

NOINLINE void mid(int n)
{
	for (int i = 0; i < n; i++)
		leaf();
}

NOINLINE void fan(void)
{
	mid(2);
	mid(3);
	leaf();
}

int rec(int n);
/* Through a pointer the compiler cannot see through, so that the
 * recursion stays one (-O2 turns a direct one into a loop). */
static int (*volatile rec_again)(int) = rec;

NOINLINE int rec(int n)
{
	if (n <= 0)
		return 0;
	leaf();
	return rec_again(n - 1) + 1;
}

NOINLINE void other(void)
{
	mid(1);
}

NOINLINE void *worker(void *arg)
{
	(void)arg;
	fan();
	return NULL;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t;

	fan();
	fan();
	other();
	rec(depth);
	if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
		return 1;
	printf("leaf %d\n", sink);
	return 0;
}
