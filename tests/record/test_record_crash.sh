#!/usr/bin/env bash
# test_record_crash - a program that dies by SIGKILL or SIGSEGV inside
# traced frames: the trace is valid, holds every event written before the
# death, and lists the frames that never returned after the graph.  The
# program's own exit status and signals reach the caller of needle record.
. "$(dirname "$0")/../lib.sh"
CRASH="$PROGS/crash"
N=5000

for mode in kill segv; do
	"$NEEDLE" record -o "$T/$mode.data" -- "$CRASH" "$mode" $N >"$T/$mode.out" 2>"$T/$mode.err"
	status=$?
	want=$([ $mode = kill ] && echo 137 || echo 139)
	check_eq "$mode: needle record exits 128+signal" "$status" "$want"
	check "$mode: says how the program died" grep -q "killed by signal" "$T/$mode.err"
	check "$mode: the trace is valid" "$NEEDLE" info -i "$T/$mode.data" >/dev/null
	check_eq "$mode: every outer() call before the death is recorded" "$(calls "$T/$mode.data" outer)" $N
	check_eq "$mode: every leaf() call before the death is recorded" "$(calls "$T/$mode.data" leaf)" $((2 * N))
	check_eq "$mode: die() was entered" "$(calls "$T/$mode.data" die)" 1
	"$NEEDLE" replay -i "$T/$mode.data" >"$T/$mode.replay"
	check_eq "$mode: die and main listed as open after the graph, innermost first, without closing lines" \
		"$(sed -n '/with these calls open/,$p' "$T/$mode.replay" | grep -E '^\[[0-9]+\] (die|main)$' | sed 's/^\[[0-9]*\] //' | tr '\n' ' ')$(grep -cE '/\* (die|main) ' "$T/$mode.replay")" "die main 0"
	check "$mode: salvaged chunks are reported" grep -q 'salvaged after the program ended' <("$NEEDLE" info -i "$T/$mode.data")
done

"$NEEDLE" record -o "$T/exit.data" -- "$CRASH" exit 10 >/dev/null 2>&1
check_eq "exit status of the program is needle record's" "$?" 3
"$NEEDLE" record -o "$T/term.data" -- "$CRASH" term 10 >/dev/null 2>&1
check_eq "a program killed by SIGTERM gives 143" "$?" 143
plain=$("$CRASH" segv 100 2>/dev/null)
traced=$("$NEEDLE" record -o "$T/s.data" -- "$CRASH" segv 100 2>/dev/null)
check_eq "output before a crash is unchanged" "$traced" "$plain"

# The trace keeps the symbols: replay works after the binary is deleted.
cp "$CRASH" "$T/gone"
"$NEEDLE" record -o "$T/gone.data" -- "$T/gone" exit 7 >/dev/null 2>&1
rm -f "$T/gone"
check "replay names functions of a deleted binary" grep -q 'outer() {' <("$NEEDLE" replay -i "$T/gone.data")
