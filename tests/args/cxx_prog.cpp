// cxx_prog - C++ functions named as the views show them: a method of a
// class in a namespace, a static member, two overloads of one name.
// Prints each call as replay --auto-args should show it, so that a test
// compares the two exactly and counts calls filtered by demangled names.
#include <cstdio>
#include <cstring>

#define KEEP __attribute__((noinline)) __attribute__((used))

namespace kv {
struct Store {
	long base;
	KEEP long get(int key) const;
	KEEP static int hash(const char *s);
};

long Store::get(int key) const
{
	__asm__ volatile("");
	return base + 2L * key;
}

int Store::hash(const char *s)
{
	__asm__ volatile("");
	return (int)strlen(s) * 31;
}
} // namespace kv

KEEP long scale(long x)
{
	__asm__ volatile("");
	return x * 3;
}

KEEP double scale(double x)
{
	__asm__ volatile("");
	return x * 0.5;
}

int main()
{
	kv::Store st = { 100 };
	for (int i = 0; i < 3; i++) {
		long v = st.get(i);
		printf("kv::Store::get(this=%p, key=%d) = %ld;\n", (void *)&st, i, v);
	}
	int h = kv::Store::hash("needle");
	printf("kv::Store::hash(s=\"needle\") = %d;\n", h);
	for (long i = 1; i <= 2; i++) {
		long l = scale(i);
		printf("scale(x=%ld) = %ld;\n", i, l);
	}
	double d = scale(5.0);
	printf("scale(x=%g) = %g;\n", 5.0, d);
	return 0;
}
