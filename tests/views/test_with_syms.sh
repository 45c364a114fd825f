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
