#!/usr/bin/env bash
# test_direct.sh - the recorder's direct path (recorder_direct.c, reached
# through dispatch_direct.c) records what the full path records: the same
# graph, thread by thread, for programs that take its every branch and
# decline (threads, longjmp, sibling calls and exit sites, the calling
# trampoline's arguments and return values, C++
# exceptions, -F/-N subtrees, -D, -A (integer values: written by the
# direct path) and -R, the flight recorder, relocated
# sites), with
# NEEDLE_DIRECT=0 (every call on the full path) as the reference, and
# NEEDLE_CALLING=0 (the direct path hijacking returns rather than calling
# the function from the calling trampoline) and NEEDLE_GRAPH_ASM=0 (the
# recorder's calls in C rather than in its assembly path,
# agent/graph_trampoline.S) alike.  A function switched between the
# recorder's path and the shared one under load loses no call.  And
# the code that runs with only the general-purpose registers saved has no
# vector or x87 instruction and calls nothing but through a register (the
# handlers) or into itself, in every build of the agent; the recorder's
# assembly path none.
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
	NEEDLE_CALLING=0 "$NEEDLE" record "$@" -o "$T/h.data" -- "$prog" >"$T/h.out" 2>"$T/h.err"
	local rc3=$?
	NEEDLE_GRAPH_ASM=0 "$NEEDLE" record "$@" -o "$T/c.data" -- "$prog" >"$T/c.out" 2>"$T/c.err"
	local rc4=$?
	check_eq "$name: all four recorded" "$rc1 $rc2 $rc3 $rc4" "0 0 0 0"
	graph "$T/d.data" >"$T/d.graph"
	graph "$T/f.data" >"$T/f.graph"
	graph "$T/h.data" >"$T/h.graph"
	graph "$T/c.data" >"$T/c.graph"
	check "$name: a graph to compare ($(wc -l <"$T/d.graph") lines)" test "$(wc -l <"$T/d.graph")" -gt 10
	check_eq "$name: the same graph, thread by thread" \
		"$(diff "$T/f.graph" "$T/d.graph" >/dev/null && echo same || diff "$T/f.graph" "$T/d.graph" | head -4)" same
	check_eq "$name: the same graph with the direct path's returns hijacked (NEEDLE_CALLING=0)" \
		"$(diff "$T/h.graph" "$T/d.graph" >/dev/null && echo same || diff "$T/h.graph" "$T/d.graph" | head -4)" same
	check_eq "$name: the same graph with the recorder's calls in C (NEEDLE_GRAPH_ASM=0)" \
		"$(diff "$T/c.graph" "$T/d.graph" >/dev/null && echo same || diff "$T/c.graph" "$T/d.graph" | head -4)" same
	check "$name: the program's output the same" cmp -s "$T/d.out" "$T/f.out"
	check "$name: the program's output the same (NEEDLE_CALLING=0)" cmp -s "$T/d.out" "$T/h.out"
	check "$name: the program's output the same (NEEDLE_GRAPH_ASM=0)" cmp -s "$T/d.out" "$T/c.out"
}

same "exit_prog (threads, longjmp, sibling calls, NOP5 entries)" "$PROGS/exit_prog_gcc" --sites=compiled
NEEDLE_EXIT_SITES=0 same "exit_prog with its return hook (NEEDLE_EXIT_SITES=0)" "$PROGS/exit_prog_gcc" --sites=compiled
same "threads" "$PROGS/threads"
# The calling trampoline: stack arguments, varargs, structs and x87
# returns, sibling calls and recursion, each function called a known
# number of times (c_rec's recursion is a loop at -O2).
for o in O0 O2; do
	P="$PROGS/calling_$o"
	same "calling-$o" "$P"
	check_eq "calling-$o: the output of an untraced run" "$(cat "$T/d.out")" "$("$P")"
	for f in c_stack c_fstack c_varargs c_big c_pair c_dpair c_ldbl c_i128 c_tail c_tail_to; do
		check_eq "calling-$o: $f called 1000 times" "$(calls "$T/d.data" "$f")" 1000
	done
	check_eq "calling-$o: c_rec's calls" "$(calls "$T/d.data" c_rec)" "$([ $o = O0 ] && echo 4000 || echo 1000)"
done
same "C++ exceptions (unwind_cpp)" "$PROGS/unwind_cpp"
same "-F/-N subtrees" "$PROGS/exit_prog_gcc" -F e_round -N e_jump
same "-D 3" "$PROGS/exit_prog_gcc" -D 3
same "-A/-R on some functions" "$PROGS/exit_prog_gcc" -A 'e_leaf@arg1' -R 'e_rec@retval'
same "the flight recorder" "$PROGS/exit_prog_gcc" --snapshot=16
# Relocated sites (a program built without flags, its C library's
# functions too): the full trampolines take the direct path as well.
same "relocated sites (libc_workload, --sites=all)" "$BUILD/tests/relocate/libc_workload" --sites=all \
	--buffer-size=256 -P 'wl_*'
# The library-call view (uftrace's default): the program's calls into the
# C library are recorded, through the direct path too (a return into
# another object the code map holds is hooked there), and the library's
# calls of its own functions are skipped by the direct entry once the
# full path has seen a return address in that library.
same "library calls (libc_workload, --sites=all)" "$BUILD/tests/relocate/libc_workload" --sites=all \
	--buffer-size=256
for f in qsort realloc wl_memory; do
	check_eq "library calls: $f called 8000 times" "$(calls "$T/d.data" "$f")" 8000
done
check_eq "library calls: free called 8004 times" "$(calls "$T/d.data" free)" 8004

# The recorder's own path (agent/graph_trampoline.S): 4 threads' calls,
# all taken in assembly but each site's first (needle_get_stats, read by
# the program from the libneedle in its process), with exact counts.
# 1.8M calls, 29 MB of events: a buffer the reader never lets fill, on a
# loaded machine too (a loss would change the graph).
same "the recorder's assembly path (graph_asm, 4 threads)" "$PROGS/graph_asm" --sites=compiled --buffer-size=512
check_eq "graph_asm: the output of an untraced run" "$(cat "$T/d.out")" "$("$PROGS/graph_asm")"
check_eq "graph_asm: ga_leaf called 1000000 times" "$(calls "$T/d.data" ga_leaf)" 1000000
check_eq "graph_asm: ga_mid called 200000 times" "$(calls "$T/d.data" ga_mid)" 200000
check_eq "graph_asm: ga_thread called 4 times" "$(calls "$T/d.data" ga_thread)" 4
c_entries=$(sed -n 's/^direct_c_entries //p' "$T/d.err")
check "graph_asm: at most a few calls taken in C, not in assembly ($c_entries of 1.8M)" \
	test -n "$c_entries" -a "${c_entries:-99999}" -le 16
# Tail calls (ga_tail jumps to ga_tail_mid, which jumps to ga_tail_leaf):
# each callee's frame sits on its caller's at the same stack pointer, and
# the assembly path takes them too; the full path dispatches only the
# calls that find their chunk full (one per chunk at most: 1.8M calls of
# 16 bytes fill about 1800 chunks of 16 KiB), not the 400000 tail calls.
for f in ga_tail ga_tail_mid ga_tail_leaf; do
	check_eq "graph_asm: $f called 200000 times" "$(calls "$T/d.data" $f)" 200000
done
check "graph_asm: ga_tail and ga_tail_mid end in tail calls (jmp)" sh -c \
	"objdump -d --no-show-raw-insn '$PROGS/graph_asm' | awk '/<ga_tail>:/,/^\$/' | grep -q 'jmp.*<ga_tail_mid>' &&
	 objdump -d --no-show-raw-insn '$PROGS/graph_asm' | awk '/<ga_tail_mid>:/,/^\$/' | grep -q 'jmp.*<ga_tail_leaf>'"
check_eq "graph_asm: a tail call nests in its caller" \
	"$(grep -m1 -A4 'ga_tail() {' "$T/d.graph" | sed 's/^ *//' | tr '\n' ' ')" \
	"ga_tail() { ga_tail_mid() { ga_tail_leaf(); } /* ga_tail_mid */ } /* ga_tail */ "
full_entries=$(sed -n 's/^full_path_entries //p' "$T/d.err")
check "graph_asm: tail calls not sent to the full path ($full_entries full-path entries of 1.8M calls)" \
	test -n "$full_entries" -a "${full_entries:-999999}" -lt 4000
c_ablation=$(sed -n 's/^direct_c_entries //p' "$T/c.err")
check "graph_asm: NEEDLE_GRAPH_ASM=0 takes them in C ($c_ablation)" test "${c_ablation:-0}" -ge 1000000
# -A values from integer registers: written by the assembly path too.
same "graph_asm with -A values" "$PROGS/graph_asm" --sites=compiled --buffer-size=512 \
	-A 'ga_leaf@arg2' -A 'ga_mid@arg2/x,arg2/u8'
check_eq "graph_asm -A: ga_leaf's values recorded 1000000 times" \
	"$(replay_threads "$T/d.data" | grep -cE 'ga_leaf\([0-9]+\)')" 1000000
c_entries=$(sed -n 's/^direct_c_entries //p' "$T/d.err")
check "graph_asm -A: at most a few calls taken in C ($c_entries of 1.8M)" \
	test -n "$c_entries" -a "${c_entries:-99999}" -le 16

# Switching under load: the program attaches a counting link of its own
# to sw_target and detaches it 1000 times, so that the function goes from
# the recorder's assembly path to the shared (full) path and back, while
# 4 threads call it in windows (the link's count of each window is
# exact: the program checks it) and a fifth calls it across every switch.
# Every call is in the recording, each an entry with its exit.
for mode in asm c; do
	env $([ $mode = c ] && echo NEEDLE_GRAPH_ASM=0) "$NEEDLE" record --sites=compiled --buffer-size=256 \
		-o "$T/sw.data" -- "$PROGS/graph_switch" >"$T/sw.out" 2>"$T/sw.err"
	check_eq "switching ($mode): the program ran" "$?" 0
	check_eq "switching ($mode): every window's count exact" "$(cat "$T/sw.out")" \
		"1000 switches, 0 windows miscounted"
	runner=$(sed -n 's/^runner_calls //p' "$T/sw.err")
	check "switching ($mode): the fifth thread called ($runner)" test "${runner:-0}" -gt 0
	check_eq "switching ($mode): every call recorded, entry and exit" \
		"$(replay_threads "$T/sw.data" | grep -c 'sw_target();')" "$((4 * 2000 * 50 + ${runner:-0}))"
	check_eq "switching ($mode): no event lost" "$(grep -c LOST "$T/sw.err")" 0
done

# The code itself, in every build of the agent there is.
n=0
for o in "$BUILD"/obj/agent/*_direct.o "$BUILD"/obj/agent/*/*_direct.o \
	"$BUILD"/{asan,ubsan,tsan,ablation}/obj/agent/*_direct.o "$BUILD"/{asan,ubsan,tsan,ablation}/obj/agent/*/*_direct.o; do
	[ -e "$o" ] || continue
	n=$((n + 1))
	objdump -d --no-show-raw-insn "$o" >"$T/dis"
	check_eq "$(basename "$(dirname "$(dirname "$(dirname "$o")")")")/$(basename "$o"): no vector or x87 instruction" \
		"$(grep -cE '%[xyz]mm|%st|\bf(ld|st|add|mul)|\bv[a-z]+ ' "$T/dis")" 0
	# Direct calls only into the direct path itself (graph_direct.c's
	# into dispatch_direct.c's), named by their relocations.
	objdump -dr --no-show-raw-insn "$o" |
		awk '/\<call/ && !/call +\*/ { want = 1; next } want { print $NF; want = 0 }' |
		grep -vc '^needle_direct_dispatch_[a-z_]*-0x4$' >"$T/calls"
	check_eq "$(basename "$o"): no call but through a register (the handlers) or into the direct path" \
		"$(cat "$T/calls")" 0
done
check "the direct objects of the default build were checked ($n)" test "$n" -ge 3
# The recorder's assembly: no vector or x87 instruction, no call at all.
objdump -d --no-show-raw-insn "$BUILD/obj/agent/graph_trampoline.o" >"$T/dis"
check "graph_trampoline.o: disassembled" grep -q '<needle_graph_return>:' "$T/dis"
check_eq "graph_trampoline.o: no vector or x87 instruction" \
	"$(grep -cE '%[xyz]mm|%st|\bf(ld|st|add|mul)|\bv[a-z]+ ' "$T/dis")" 0
check_eq "graph_trampoline.o: no call" "$(grep -cE '\bcall' "$T/dis")" 0
