#!/usr/bin/env bash
# test_with_syms - --with-syms (uftrace's): a stripped program's functions
# have no names (func_0xADDR@OBJECT); the views name them from a trace
# recorded before the strip, or from a directory of the unstripped file or
# its .debug file, and needle record does too, so that -F matches them.
# The names are the unstripped recording's, call for call; C++ names are
# demangled as usual; a source that names nothing is refused in one line.
. "$(dirname "$0")/../lib.sh"

cat >"$T/prog.cc" <<'EOF'
#include <cstdio>
static int leaf(int x) { return x + 1; }
namespace ns {
int twice(int x) { return leaf(x) * 2; }
}
static int sum(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += ns::twice(i);
	return s;
}
int main()
{
	std::printf("%d\n", sum(3));
	return 0;
}
EOF
if ! g++ -O0 -fpatchable-function-entry=5 -o "$T/full" "$T/prog.cc" 2>"$T/cc"; then
	fail "g++ builds the test program: $(head -c 200 "$T/cc")"
	exit 0
fi
mkdir "$T/bin" "$T/copies" "$T/debug" "$T/empty"
cp "$T/full" "$T/bin/prog"
cp "$T/full" "$T/copies/prog"
objcopy --only-keep-debug "$T/full" "$T/debug/prog.debug"
echo "not an object" >"$T/copies/README"

"$NEEDLE" record -o "$T/full.data" -- "$T/bin/prog" >"$T/out.full" 2>/dev/null
strip "$T/bin/prog"
check "strip left the program without .symtab" sh -c "! readelf -S '$T/bin/prog' | grep -q '\.symtab'"
"$NEEDLE" record -o "$T/stripped.data" -- "$T/bin/prog" >"$T/out.stripped" 2>/dev/null
check_eq "the stripped program's output is the unstripped one's" "$(cat "$T/out.stripped")" "$(cat "$T/out.full")"
check "a MODULE_BIAS (18) section, after the modules and sites" grep -q '^3 4 13 18 ' <(trace_sections "$T/full.data")

graph() { "$NEEDLE" replay "$@" | sed 's/^[^|]*| //'; }
graph -i "$T/full.data" >"$T/g.full"
graph -i "$T/stripped.data" >"$T/g.stripped"
check_eq "the unstripped graph: main, sum, 3 x ns::twice and leaf" \
	"$(grep -c -e '^main() {' -e '^  sum() {' -e '^    ns::twice() {' -e '^      leaf();' "$T/g.full")" 8
check "stripped: no name, func_0x...@prog" grep -q '^func_0x[0-9a-f]*@prog() {' "$T/g.stripped"
check "stripped: no ns::twice" sh -c "! grep -q twice '$T/g.stripped'"

for src in "$T/full.data" "$T/copies" "$T/debug"; do
	what=${src#"$T"/}
	graph --with-syms "$src" -i "$T/stripped.data" >"$T/g.named"
	check_eq "replay --with-syms $what: the unstripped graph, line for line" "$(cat "$T/g.named")" "$(cat "$T/g.full")"
done
check_eq "report --with-syms: ns::twice called 3 times" \
	"$("$NEEDLE" report --with-syms "$T/full.data" --csv -i "$T/stripped.data" | awk -F, '$1 == "ns::twice" { print $2 }')" 3
check_eq "graph --with-syms ns::twice: its callee leaf, 3 calls" \
	"$("$NEEDLE" graph --with-syms "$T/copies" -i "$T/stripped.data" ns::twice | grep -c '(3) leaf')" 1
check "--demangle=no still shows the symbols" \
	grep -q '_ZN2ns5twiceEi' <("$NEEDLE" replay --demangle=no --with-syms "$T/debug" -i "$T/stripped.data")

# needle record: -F matches the names the source gives.
for src in "$T/full.data" "$T/copies" "$T/debug"; do
	what=${src#"$T"/}
	"$NEEDLE" record -F 'ns::twice' --with-syms "$src" -o "$T/f.data" -- "$T/bin/prog" >"$T/out.f" 2>"$T/err.f"
	rc=$?
	check_eq "record -F ns::twice --with-syms $what: exit 0 ($(head -c 200 "$T/err.f"))" "$rc" 0
	check_eq "record --with-syms $what: the program's output" "$(cat "$T/out.f")" "$(cat "$T/out.full")"
	check_eq "record --with-syms $what: 3 ns::twice calls, each with its leaf, nothing else" \
		"$(graph -i "$T/f.data" | grep -v '^#' | sed 's/^ *//' | tr '\n' ' ')" \
		"ns::twice() { leaf(); } /* ns::twice */ ns::twice() { leaf(); } /* ns::twice */ ns::twice() { leaf(); } /* ns::twice */ "
done

# Sources that name nothing, refused in one line.
view_refused "replay --with-syms of a missing path" 1 "cannot read $T/nope" \
	"$NEEDLE" replay --with-syms "$T/nope" -i "$T/stripped.data"
view_refused "replay --with-syms of a directory without objects" 1 "holds no object with symbols" \
	"$NEEDLE" replay --with-syms "$T/empty" -i "$T/stripped.data"
view_refused "report --with-syms of a file that is no trace" 1 "--with-syms: " \
	"$NEEDLE" report --with-syms "$T/copies/README" -i "$T/stripped.data"
P="$T/bin/prog"
bad_input "record --with-syms of a missing path" "cannot read $T/nope" --with-syms "$T/nope"
bad_input "record --with-syms of an empty directory" "holds no object with symbols" --with-syms "$T/empty"
"$NEEDLE" record -p 1 --with-syms "$T/full.data" -o "$T/p.data" >"$T/pout" 2>"$T/perr"
rc=$?
check "record -p with --with-syms: refused (exit $rc), naming the views' option" \
	sh -c "test $rc -ne 0 && grep -q 'needle replay --with-syms' '$T/perr'"

# Another build of the program (-O2, a function changed): its names are
# other code's.  Nothing names the stripped program from it: the views
# say so in a warning, needle record leaves its functions unnamed (a
# wrong name would patch the middle of an instruction), and the program
# runs as it would.
sed 's/return leaf(x) \* 2;/return leaf(x) * 2 + leaf(x + 1) - leaf(x + 1);/' "$T/prog.cc" >"$T/prog2.cc"
mkdir "$T/other"
g++ -O2 -fno-inline -fpatchable-function-entry=5 -o "$T/other/prog" "$T/prog2.cc"
"$NEEDLE" record -o "$T/other.data" -- "$T/other/prog" >/dev/null 2>&1
for src in "$T/other.data" "$T/other"; do
	what=${src#"$T"/}
	"$NEEDLE" replay --with-syms "$src" -i "$T/stripped.data" >"$T/g.other" 2>"$T/e.other"
	check_eq "another build ($what): replay still exits 0" "$?" 0
	check_eq "another build ($what): the graph keeps no name of it" "$(graph -i "$T/stripped.data")" \
		"$(sed 's/^[^|]*| //' "$T/g.other")"
	check "another build ($what): a warning names the object and its build ids" \
		grep -q "another build of .*prog (their build ids differ)" "$T/e.other"
	"$NEEDLE" record -F 'ns::twice' --with-syms "$src" -o "$T/ob.data" -- "$T/bin/prog" >"$T/out.ob" 2>"$T/err.ob"
	rc=$?
	check "another build ($what): record -F of its name matches nothing, the program never ran ($rc)" \
		sh -c "test $rc -eq 1 && grep -q 'match no function' '$T/err.ob'"
	"$NEEDLE" record --with-syms "$src" -o "$T/ob.data" -- "$T/bin/prog" >"$T/out.ob" 2>"$T/err.ob"
	check_eq "another build ($what): recorded, the program's output as untraced" "$?/$(cat "$T/out.ob")" "0/$(cat "$T/out.full")"
	check "another build ($what): record warns that the names are another build's" \
		grep -q "another build of prog" "$T/err.ob"
done

# A source whose build id is the program's names it under any file name.
mkdir "$T/renamed"
cp "$T/full" "$T/renamed/prog-1.0-unstripped"
check_eq "by build id: a file of another name" "$(graph --with-syms "$T/renamed" -i "$T/stripped.data")" "$(cat "$T/g.full")"
# uftrace's symbol files (OBJECT.sym, "ADDR TYPE NAME").
mkdir "$T/uft"
nm --defined-only "$T/full" | awk '$2 ~ /^[TtWw]$/ { print $1, $2, $3 }' | sort >"$T/uft/prog.sym"
check_eq "uftrace's .sym files" "$(graph --with-syms "$T/uft" -i "$T/stripped.data")" "$(cat "$T/g.full")"
# A FIFO, a device and a subdirectory beside the file: skipped, never
# waited on.
mkfifo "$T/copies/zpipe"
ln -s /dev/zero "$T/copies/zero"
mkdir "$T/copies/sub"
check_eq "a FIFO, a device and a directory in it: skipped" \
	"$(timeout 20 "$NEEDLE" replay --with-syms "$T/copies" -i "$T/stripped.data" | sed 's/^[^|]*| //')" "$(cat "$T/g.full")"
# Started through a link: the names are its target's.
ln -s "$T/bin/prog" "$T/link"
"$NEEDLE" record -F 'ns::twice' --with-syms "$T/copies" -o "$T/l.data" -- "$T/link" >/dev/null 2>"$T/err.l"
check_eq "through a link: -F ns::twice matches ($(head -c 200 "$T/err.l"))" "$(calls "$T/l.data" 'ns::twice')" 3
# report --diff names both traces.
"$NEEDLE" record -o "$T/stripped2.data" -- "$T/bin/prog" >/dev/null 2>&1
check "report --diff --with-syms: both traces named, ns::twice on both sides" \
	grep -q 'ns::twice' <("$NEEDLE" report --with-syms "$T/full.data" -i "$T/stripped.data" --diff "$T/stripped2.data")
check "report --diff --with-syms: no unnamed function left on either side" \
	sh -c "! '$NEEDLE' report --with-syms '$T/full.data' -i '$T/stripped.data' --diff '$T/stripped2.data' | grep -q func_0x"
# A source that names none of the trace's unnamed functions (another
# program's trace): a warning.
"$NEEDLE" record -o "$T/unrelated.data" -- "$PROGS/exitwith" 0 >/dev/null 2>&1
"$NEEDLE" replay --with-syms "$T/unrelated.data" -i "$T/stripped.data" >/dev/null 2>"$T/e.none"
check "a source naming none of them: a warning says so" grep -q "names none of the trace's" "$T/e.none"

# Without build ids (--build-id=none), an object is matched by its file
# name alone, and the names only label: a wrong one (another build's,
# here a cold part's renamed) never makes needle take code entered by a
# jump for a function, so the program runs as untraced (relocated: built
# without flags, -O2).
mkdir "$T/cold" "$T/cold/bin" "$T/cold/wrong" "$T/cold/right"
cat >"$T/cold/cold.c" <<'CC'
#include <stdio.h>
#include <stdlib.h>
volatile int sink;
__attribute__((noinline)) int twice(int x) { return x * 2 + sink; }
__attribute__((noinline)) int thrice(int x) { return x * 3 + sink; }
__attribute__((cold, noinline)) void report(int x, int a) { fprintf(stderr, "rare %d %d\n", x, a); }
__attribute__((noinline)) int work(int x)
{
	int a = x * 7, b = x ^ 3, c = x + sink;
	if (x % 3 == 0) {
		report(x, a);
		a += b * c;
		sink += a;
		printf("r %d %d %d\n", a, b, c);
	}
	return a + b + c;
}
int main(int argc, char **argv)
{
	int (*volatile pick)(int) = argc > 5 ? thrice : twice;
	register int (*fp)(int) asm("rbx") = pick;
	int n = argc > 1 ? atoi(argv[1]) : 6;
	long s = 0;
	for (int i = 0; i < n; i++) {
		s += work(i);
		asm volatile("" : "+r"(fp));
		s += fp(i);
	}
	printf("%ld\n", s);
	return 0;
}
CC
gcc -O2 -Wl,--build-id=none -o "$T/cold/cold" "$T/cold/cold.c"
cp "$T/cold/cold" "$T/cold/bin/cold"
strip "$T/cold/bin/cold"
nm --defined-only "$T/cold/cold" | awk '$2 ~ /^[TtWw]$/ { print $1, $2, $3 }' | sort >"$T/cold/right/cold.sym"
check "the cold program has a cold part to mislabel" grep -q ' work\.cold$' "$T/cold/right/cold.sym"
sed 's/ work\.cold$/ helper_from_other_build/' "$T/cold/right/cold.sym" >"$T/cold/wrong/cold.sym"
"$T/cold/bin/cold" 6 >"$T/cold/plain.out" 2>&1
NEEDLE_SITES=all "$NEEDLE" record --with-syms "$T/cold/wrong" -o "$T/cold/w.data" -- "$T/cold/bin/cold" 6 >"$T/cold/w.out" 2>&1
check_eq "a wrong label without build ids: the program's status is its own" "$?" 0
check_eq "a wrong label without build ids: its output, as untraced" \
	"$(grep -v '^needle:' "$T/cold/w.out")" "$(cat "$T/cold/plain.out")"
NEEDLE_SITES=all "$NEEDLE" record -F work --with-syms "$T/cold/right" -o "$T/cold/r.data" -- "$T/cold/bin/cold" 6 >/dev/null 2>&1
check_eq "the right labels without build ids: -F work, called directly, records its 6 calls" "$(calls "$T/cold/r.data" work)" 6
# CRLF line ends in a .sym file are no part of the names.
mkdir "$T/crlf"
sed 's/$/\r/' "$T/cold/right/cold.sym" >"$T/crlf/cold.sym"
NEEDLE_SITES=all "$NEEDLE" record -F work --with-syms "$T/crlf" -o "$T/cold/c.data" -- "$T/cold/bin/cold" 6 >/dev/null 2>&1
check_eq ".sym with CRLF line ends: -F work matches" "$(calls "$T/cold/c.data" work)" 6

# A library without a build id, loaded through its soname link: the
# source names it under its real file's name.
mkdir -p "$T/so/lib" "$T/so/src"
cat >"$T/so/lib.c" <<'CC'
int lib_api(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * 5 + 3; return s; }
CC
printf '#include <stdio.h>\nint lib_api(int);\nint main(void) { int s = 0; for (int k = 0; k < 4; k++) s += lib_api(k + 2); printf("%%d\\n", s); return 0; }\n' >"$T/so/main.c"
gcc -O1 -fpatchable-function-entry=5 -shared -fPIC -Wl,--build-id=none,-soname,libsofoo.so.1 -o "$T/so/src/libsofoo.so.1.0.0" "$T/so/lib.c"
cp "$T/so/src/libsofoo.so.1.0.0" "$T/so/lib/"
strip "$T/so/lib/libsofoo.so.1.0.0"
ln -s libsofoo.so.1.0.0 "$T/so/lib/libsofoo.so.1"
gcc -O1 -o "$T/so/prog" "$T/so/main.c" -L"$T/so/lib" -l:libsofoo.so.1 -Wl,-rpath,"$T/so/lib"
"$NEEDLE" record -o "$T/so/s.data" -- "$T/so/prog" >/dev/null 2>&1
check_eq "a soname link without build id: replay names the library's function from its real file" \
	"$("$NEEDLE" replay --with-syms "$T/so/src" -i "$T/so/s.data" | grep -c 'lib_api()')" 4
"$NEEDLE" record -F lib_api --with-syms "$T/so/src" -o "$T/so/f.data" -- "$T/so/prog" >/dev/null 2>&1
check_eq "a soname link without build id: record -F lib_api matches its 4 calls" "$(calls "$T/so/f.data" lib_api)" 4

# dump and export name them too.
check_eq "dump --with-syms: 3 entries of ns::twice" \
	"$("$NEEDLE" dump --with-syms "$T/full.data" -i "$T/stripped.data" | grep -c '\[entry\] ns::twice(')" 3
"$NEEDLE" export --with-syms "$T/copies" --format=chrome -o "$T/named.json" -i "$T/stripped.data" 2>/dev/null
check "export --with-syms --format=chrome: the names, no func_0x" \
	sh -c "grep -q 'ns::twice' '$T/named.json' && ! grep -q 'func_0x' '$T/named.json'"
view_refused "export --with-syms of a missing path" 1 "cannot read $T/nope" \
	"$NEEDLE" export --with-syms "$T/nope" --format=chrome -o "$T/x.json" -i "$T/stripped.data"
