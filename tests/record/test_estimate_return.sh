#!/bin/bash
# needle record --estimate-return (uftrace's): function_graph with no
# return hooked.  The program (tests/progs/estimate.c) counts the calls
# that found their return address outside it: 0 under --estimate-return
# and untraced, 12000 under function_graph, so a hooked return fails the
# test.  Its graph (3 threads of nested calls, a recursion 5000 deep, past
# the agent's first array of open calls) is the one function_graph
# records, thread by thread: none of its calls is a tail call.
. "$(dirname "$0")/../lib.sh"

prog="$PROGS/estimate"
untraced=$("$prog")
check_eq "untraced: no return address outside the program" "$(echo "$untraced" | tail -1)" \
	"returns outside the program: 0"

"$NEEDLE" record --estimate-return -o "$T/e.data" -- "$prog" >"$T/e.out" 2>"$T/e.err"
check_eq "--estimate-return: exit status 0" "$?" 0
check_eq "--estimate-return: the program's output, byte for byte (no return hooked)" "$(cat "$T/e.out")" "$untraced"
"$NEEDLE" record -o "$T/g.data" -- "$prog" >"$T/g.out" 2>"$T/g.err"
check_eq "function_graph hooks the returns (the check can fail): 12000 outside" "$(tail -1 "$T/g.out")" \
	"returns outside the program: 12000"

check_eq "est_top called 3000 times" "$(calls "$T/e.data" est_top)" 3000
check_eq "est_mid called 3000 times" "$(calls "$T/e.data" est_mid)" 3000
check_eq "est_leaf called 9000 times" "$(calls "$T/e.data" est_leaf)" 9000
check_eq "est_rec called 5001 times" "$(calls "$T/e.data" est_rec)" 5001

graph() { replay_threads "$1" | sed 's/^[^|]*| //'; }
graph "$T/e.data" >"$T/e.graph"
graph "$T/g.data" >"$T/g.graph"
check "a graph to compare ($(wc -l <"$T/e.graph") lines)" test "$(wc -l <"$T/e.graph")" -gt 40000
check_eq "the graph function_graph records, thread by thread" \
	"$(diff "$T/g.graph" "$T/e.graph" >/dev/null && echo same || diff "$T/g.graph" "$T/e.graph" | head -4)" same
check_eq "a call ends before its caller's next callee: est_mid's two est_leaf calls" \
	"$(grep -m1 -A8 'est_mid() {' "$T/e.graph" | sed 's/^ *//' | tr '\n' ' ')" \
	"est_mid() { est_leaf() { check_return(); } /* est_leaf */ est_leaf() { check_return(); } /* est_leaf */ check_return(); } /* est_mid */ "
check_eq "the recursion nests 5000 deep" "$(grep -c 'est_rec() {' "$T/e.graph")" 5000
check_eq "main ends at the program's exit" "$(grep -c '} /\* main \*/' "$T/e.graph")" 1
check_eq "every entry has its exit" "$("$NEEDLE" dump -i "$T/e.data" | awk '/ entry /{e++} / exit /{x++} END {print e - x}')" 0
check "needle info says the returns are estimated" sh -c \
	"'$NEEDLE' info -i '$T/e.data' | grep -q 'tracer: *function_graph (--estimate-return'"

# What it cannot do: refused with one line, nothing started.
"$NEEDLE" record --estimate-return -R 'est_leaf@retval' -o "$T/r.data" -- "$prog" >"$T/r.out" 2>"$T/r.err"
check_eq "-R with --estimate-return: refused (exit 2), one line, the program not run" \
	"$?/$(wc -l <"$T/r.err")/$(wc -c <"$T/r.out")" "2/1/0"
check "... saying why" grep -q "never sees" "$T/r.err"
"$NEEDLE" record --estimate-return -t function -o "$T/f.data" -- "$prog" >"$T/f.out" 2>"$T/f.err"
check_eq "-t function with --estimate-return: refused (exit 2)" "$?/$(wc -c <"$T/f.out")" "2/0"
