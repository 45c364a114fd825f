#!/usr/bin/env bash
# test_pg - programs built with gcc -pg and no other flag (uftrace's usual
# build: every function calls mcount after its prologue): the functions
# that call mcount are traced (relocated entries), and only they, as
# uftrace reads such a build: the start files' functions (__gmon_start__,
# frame_dummy, atexit) are no lines, nor are the mcount calls, and a
# library built with -pg is the program's code (its functions nest, they
# are not one library call).  The graph is the one of the same sources
# built with -fpatchable-function-entry=5, at -O0 and -O2, through the
# GOT (PIE) and the PLT (non-PIE), with a nested function (its chain in
# r10, pushed before mcount) and a large frame (-fstack-clash-protection:
# a probe loop before mcount).
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
cd "$T" || exit 1 # a -pg program writes gmon.out where it runs

cat >"$T/lib.c" <<'C'
int lib_c(int x) { return x + 1; }
int lib_b(int x) { return lib_c(x) * 2; }
int lib_a(int x) { return lib_b(x) + 3; }
C
cat >"$T/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int lib_a(int x);
__attribute__((noinline)) int leaf(int x) { return x * 7; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + leaf(x + 1); }
__attribute__((noinline)) int nested(int n)
{
	int k = n;
	int add(int v) { return v + k; }
	return add(1) + add(2);
}
__attribute__((noinline)) int big(int x)
{
	volatile char buf[20000]; /* stack-clash probes before mcount */
	for (int i = 0; i < 20000; i += 4096)
		buf[i] = (char)x;
	return buf[x % 4096];
}
__attribute__((noinline)) int many(int a, int b, int c, int d, int e, int f, int g)
{
	return a + b + c + d + e + f + g + mid(a);
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2, s = 0;
	for (int i = 0; i < n; i++)
		s += mid(i) + lib_a(i) + nested(i) + many(i, 1, 2, 3, 4, 5, 6) + big(i);
	printf("%d\n", s);
	return 0;
}
C
graph() { "$NEEDLE" replay -i "$1" | sed -n 's/^[^|]*| //p'; }
for opt in O0 O2; do
	for pie in pie no-pie; do
		v=$opt-$pie
		pflag=-fPIE
		[ "$pie" = no-pie ] && pflag=-fno-pie
		gcc -$opt -pg -fPIC -shared -o "$T/libpg_$v.so" "$T/lib.c" || fail "$v: the -pg library builds"
		gcc -$opt -fpatchable-function-entry=5 -fPIC -shared -o "$T/libpf_$v.so" "$T/lib.c"
		gcc -$opt -pg -fstack-clash-protection $pflag -"$pie" -o "$T/pg_$v" "$T/prog.c" -L"$T" -lpg_$v -Wl,-rpath,"$T" ||
			fail "$v: the -pg program builds"
		gcc -$opt -fpatchable-function-entry=5 -fstack-clash-protection $pflag -"$pie" -o "$T/pf_$v" "$T/prog.c" -L"$T" -lpf_$v \
			-Wl,-rpath,"$T"
		"$T/pg_$v" 3 >"$T/plain_$v.out" 2>/dev/null
		"$NEEDLE" record -o "$T/pg_$v.data" -- "$T/pg_$v" 3 >"$T/pg_$v.out" 2>"$T/pg_$v.err"
		st=$?; check_eq "$v: recorded, the program's status ($(tail -1 "$T/pg_$v.err"))" "$st" 0
		check "$v: the program's output as untraced" cmp -s "$T/plain_$v.out" "$T/pg_$v.out"
		"$NEEDLE" record -o "$T/pf_$v.data" -- "$T/pf_$v" 3 >/dev/null 2>&1
		graph "$T/pg_$v.data" | grep -v '^ *\(monstartup\|__cxa_atexit\)();$' >"$T/pg_$v.graph"
		graph "$T/pf_$v.data" >"$T/pf_$v.graph"
		check_eq "$v: no mcount line, no start file's function" \
			"$(grep -cE 'mcount|__gmon_start__|frame_dummy|atexit\(\) \{' "$T/pg_$v.graph")" 0
		check "$v: the graph of the -fpatchable-function-entry=5 build ($(wc -l <"$T/pg_$v.graph") lines)" \
			cmp -s "$T/pg_$v.graph" "$T/pf_$v.graph"
		check_eq "$v: the -pg library's functions nest (lib_a { lib_b { lib_c } }), 3 of each" \
			"$(grep -c '^ *lib_b() {$' "$T/pg_$v.graph") $(grep -c '^ *lib_c();$' "$T/pg_$v.graph")" "3 3"
		check_eq "$v: the large frame's function, 3 calls" "$(grep -c '^ *big();$' "$T/pg_$v.graph")" 3
	done
done
