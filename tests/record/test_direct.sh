#!/usr/bin/env bash
# test_direct.sh - the recorder's direct path (recorder_direct.c, reached
# through dispatch_direct.c) records what the full path records: the same
# graph, thread by thread, for programs that take its every branch and
# decline (threads, longjmp, sibling calls and exit sites, C++
# exceptions, -F/-N subtrees, -D, -A (integer values: written by the
# direct path) and -R, the flight recorder, relocated
# sites), with
# NEEDLE_DIRECT=0 (every call on the full path) as the reference.  And
# the code that runs with only the general-purpose registers saved has no
# vector or x87 instruction and calls nothing but through a register (the
# handlers), in every build of the agent.
. "$(dirname "$0")/../lib.sh"

# graph FILE [OPTS]: each thread's calls with neither durations nor tids.
graph() {
	local f=$1
	shift
	replay_threads "$f" "$@" | sed 's/^[^|]*| //'
}

# same NAME PROG [RECORD OPTS]: the two recordings' graphs are equal.
same() {
	local name=$1 prog=$2
	shift 2
	"$NEEDLE" record "$@" -o "$T/d.data" -- "$prog" >"$T/d.out" 2>"$T/d.err"
	local rc1=$?
	NEEDLE_DIRECT=0 "$NEEDLE" record "$@" -o "$T/f.data" -- "$prog" >"$T/f.out" 2>"$T/f.err"
	local rc2=$?
	check_eq "$name: both recorded" "$rc1 $rc2" "0 0"
	graph "$T/d.data" >"$T/d.graph"
	graph "$T/f.data" >"$T/f.graph"
	check "$name: a graph to compare ($(wc -l <"$T/d.graph") lines)" test "$(wc -l <"$T/d.graph")" -gt 10
	check_eq "$name: the same graph, thread by thread" \
		"$(diff "$T/f.graph" "$T/d.graph" >/dev/null && echo same || diff "$T/f.graph" "$T/d.graph" | head -4)" same
	check "$name: the program's output the same" cmp -s "$T/d.out" "$T/f.out"
}

same "exit_prog (threads, longjmp, sibling calls, NOP5 entries)" "$PROGS/exit_prog_gcc" --sites=compiled
NEEDLE_EXIT_SITES=0 same "exit_prog with its return hook (NEEDLE_EXIT_SITES=0)" "$PROGS/exit_prog_gcc" --sites=compiled
same "threads" "$PROGS/threads"
same "C++ exceptions (unwind_cpp)" "$PROGS/unwind_cpp"
same "-F/-N subtrees" "$PROGS/exit_prog_gcc" -F e_round -N e_jump
same "-D 3" "$PROGS/exit_prog_gcc" -D 3
same "-A/-R on some functions" "$PROGS/exit_prog_gcc" -A 'e_leaf@arg1' -R 'e_rec@retval'
same "the flight recorder" "$PROGS/exit_prog_gcc" --snapshot=16
# Relocated sites (a program built without flags, its C library's
# functions too): the full trampolines take the direct path as well.
same "relocated sites (libc_workload, --sites=all)" "$BUILD/tests/relocate/libc_workload" --sites=all \
	--buffer-size=256 -P 'wl_*'

# The code itself, in every build of the agent there is.
n=0
for o in "$BUILD"/obj/agent/*/*_direct.o "$BUILD"/{asan,ubsan,tsan,ablation}/obj/agent/*/*_direct.o; do
	[ -e "$o" ] || continue
	n=$((n + 1))
	objdump -d --no-show-raw-insn "$o" >"$T/dis"
	check_eq "$(basename "$(dirname "$(dirname "$(dirname "$o")")")")/$(basename "$o"): no vector or x87 instruction" \
		"$(grep -cE '%[xyz]mm|%st|\bf(ld|st|add|mul)|\bv[a-z]+ ' "$T/dis")" 0
	check_eq "$(basename "$o"): no call but through a register (the handlers)" \
		"$(grep -E '\bcall' "$T/dis" | grep -vcE 'call +\*')" 0
done
check "the direct objects of the default build were checked ($n)" test "$n" -ge 2
