// stdstring_prog.cpp - std::string arguments and return values, for
// uftrace's /S format (test_uftrace_values.sh): prints each call as
// replay -D 2 shows it with -A 'take@arg1/S' -R 'give@retval/S' (give's
// ABI tag as uftrace shows it).  A string
// longer than the small-string buffer is on the heap, the others inline.
#include <cstdio>
#include <string>

#define KEEP __attribute__((noinline))

KEEP size_t take(const std::string &s)
{
	__asm__ volatile("");
	return s.size();
}

KEEP std::string give(int n)
{
	__asm__ volatile("");
	return n ? std::string(n, 'x') : std::string();
}

int main()
{
	const char *words[] = { "Hello", "", "a string longer than fifteen bytes" };
	for (const char *w : words) {
		std::string s(w);
		if (take(s) != s.size())
			return 1;
		std::printf("take(\"%s\"s);\n", w);
	}
	for (int n : { 3, 0, 20 }) {
		std::string g = give(n);
		std::printf("give::cxx11() = \"%s\"s;\n", g.c_str());
	}
	return 0;
}
