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

// Not trivially copyable: passed by invisible reference, its address in
// the first integer register (gcc 12 does not say so in DWARF).
struct Tracked {
	long v;
	Tracked(long x) : v(x) {}
	Tracked(const Tracked &o) : v(o.v) {}
	~Tracked() { __asm__ volatile(""); }
};

KEEP long take(Tracked t, long k)
{
	long r = t.v + k;
	printf("take(t=%p, k=%ld) = %ld;\n", (void *)&t, k, r);
	return r;
}

// Each long enough that needle can move its first instructions (g++'s
// builds have no patchable entries).
static volatile long last_scaled;

KEEP long scale(long x)
{
	__asm__ volatile("");
	last_scaled = x;
	return x * 3;
}

KEEP double scale(double x)
{
	__asm__ volatile("");
	last_scaled = (long)x;
	return x * 0.5;
}

// A function template's instance: demangled with its return type
// ("long twice<long>(long)"), matched without it and shown without its
// template arguments too ("twice", uftrace's simple form).
template <typename T> KEEP T twice(T v)
{
	__asm__ volatile("");
	last_scaled = (long)v;
	return v + v;
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
	take(Tracked(-5), 7);
	long t = twice<long>(4);
	printf("twice(v=%ld) = %ld;\n", 4L, t);
	return 0;
}
