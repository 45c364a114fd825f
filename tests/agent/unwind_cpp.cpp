// unwind_cpp MODE - C++ exceptions through traced frames.  The output must
// be the same traced and untraced; the test checks the trace's nesting.
//
//   traced    thrown in thrower, through middle, caught in catcher (traced)
//   untraced  caught in a function built without a patchable entry
//   rethrow   caught, rethrown, caught again one level up
//   nested    a handler throws a second exception that is caught inside it
//   cancel    a thread cancelled inside traced frames: every destructor runs
#include <cstdio>
#include <cstring>
#include <pthread.h>
#include <stdexcept>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define UNTRACED __attribute__((noinline, patchable_function_entry(0, 0)))

struct Guard {
	int *counter;
	~Guard() { ++*counter; }
};

static int destructors;

NOINLINE int leaf(int x) { return x + 1; }

NOINLINE int thrower(int x)
{
	Guard g{&destructors};
	leaf(x);
	if (x % 2)
		throw std::runtime_error("odd");
	return x;
}

NOINLINE int middle(int x) { return thrower(x) + leaf(x); }

NOINLINE int catcher(int x)
{
	try {
		return middle(x);
	} catch (const std::exception &e) {
		return -leaf(x);
	}
}

UNTRACED int untraced_catcher(int x)
{
	try {
		return middle(x);
	} catch (const std::exception &e) {
		return -1;
	}
}

NOINLINE int rethrower(int x)
{
	try {
		return middle(x);
	} catch (const std::exception &) {
		leaf(x);
		throw;
	}
}

NOINLINE int outer_catcher(int x)
{
	try {
		return rethrower(x);
	} catch (const std::runtime_error &e) {
		return -100;
	}
}

NOINLINE int nested(int x)
{
	try {
		return middle(x);
	} catch (const std::exception &) {
		try {
			return thrower(x + 2);
		} catch (const std::exception &) {
			return -7;
		}
	}
}

static volatile int cancel_ready;

NOINLINE void c_inner()
{
	Guard g{&destructors};
	cancel_ready = 1;
	for (;;)
		pause();
}

NOINLINE void c_outer()
{
	Guard g{&destructors};
	c_inner();
}

static void *cancel_thread(void *)
{
	Guard g{&destructors};
	c_outer();
	return nullptr;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "traced";
	long sum = 0;
	if (!strcmp(mode, "cancel")) {
		pthread_t t;
		void *ret;
		pthread_create(&t, nullptr, cancel_thread, nullptr);
		while (!cancel_ready)
			;
		pthread_cancel(t);
		pthread_join(t, &ret);
		printf("cancel: %s, destructors %d\n", ret == PTHREAD_CANCELED ? "canceled" : "?", destructors);
		return 0;
	}
	for (int i = 0; i < 100; i++) {
		if (!strcmp(mode, "traced"))
			sum += catcher(i);
		else if (!strcmp(mode, "untraced"))
			sum += untraced_catcher(i);
		else if (!strcmp(mode, "rethrow"))
			sum += outer_catcher(i);
		else if (!strcmp(mode, "nested"))
			sum += nested(i);
	}
	printf("%s: sum %ld destructors %d\n", mode, sum, destructors);
	return 0;
}
