#!/usr/bin/env bash
# test_exit_sites - functions whose exits the compiler prepared: gcc's
# NOP5 before every ret and sibling-call jmp (-minstrument-return=nop5
# -mrecord-return), LLVM XRay's exit and tail-call sleds.  needle switches
# them with its own batches, and a call's exit is taken there instead of
# at a hijacked return.  Checked on both builds, while two threads run:
# output identical to an untraced run, every call counted exactly, a
# sibling call ending its caller before its callee starts, calls skipped by
# a longjmp closed as unwound, the same counts with the return hook
# (NEEDLE_EXIT_SITES=0) and under CET shadow stacks (where only exit sites
# can end a call), and detaching from a running process while its calls
# are in flight.
. "$(dirname "$0")/../lib.sh"

# expected PLAIN FUNCTION: the program's own count of FUNCTION's calls.
expected() {
	awk -v f="$2" '$1 == "calls" { for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }' "$1"
}

# check_counts LABEL DATA PLAIN: every function exactly as the program counted.
check_counts() {
	local f
	for f in e_round e_mid e_leaf e_sib e_sib_ptr e_rec e_jump e_jump_mid e_jump_inner; do
		check_eq "$1: $f called exactly as the program counts" "$(calls "$2" "$f")" "$(expected "$3" "$f")"
	done
}

for build in gcc xray; do
	P="$PROGS/exit_prog_$build"
	"$P" >"$T/plain"
	NEEDLE_DEBUG=1 "$NEEDLE" record -o "$T/$build.data" -- "$P" >"$T/out" 2>"$T/err"
	rc=$?
	check_eq "$build: recorded (exit 0)" "$rc" 0
	check "output identical to a run left alone" cmp -s "$T/plain" "$T/out"
	# Every function of the program has exits the compiler listed.
	n=$(grep -o 'exit_prog_[a-z]*: [0-9]* exit sites' "$T/err" | awk '{print $2}')
	check "$build: exit sites found (${n:-none})" test "${n:-0}" -ge 14
	check_counts "$build" "$T/$build.data" "$T/plain"
	replay_threads "$T/$build.data" --mark-unwound >"$T/replay"
	check_eq "$build: replay reads the trace" "$?" 0
	# Line by line order within a thread: each worker's calls alone.
	: >"$T/seq"
	for tid in $(awk '/e_round\(\) \{/ { gsub(/[][]/, "", $0); for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i; break } }' "$T/replay" | sort -u); do
		"$NEEDLE" replay --tid "$tid" -i "$T/$build.data" >>"$T/seq"
	done
	# A sibling call: the caller's exit site runs before its jmp, so e_sib
	# ends, then e_leaf runs at the same depth.
	check_eq "$build: no call nested in e_sib (a sibling call ends it)" "$(grep -c 'e_sib() {' "$T/replay")" 0
	check_eq "$build: e_sib's e_leaf follows it at the same depth" \
		"$(grep -A1 -E '\| +e_sib\(\);' "$T/seq" | awk '/e_sib\(\)/ { match($0, /\| +/); d = RLENGTH; next }
			/e_leaf\(\)/ { match($0, /\| +/); if (RLENGTH == d) n++ } END { print n + 0 }')" 1000
	check_eq "$build: e_sib_ptr (a jmp through a register) likewise" "$(grep -c 'e_sib_ptr() {' "$T/replay")" 0
	check_eq "$build: e_jump_inner closed as unwound by the longjmp" \
		"$(grep -c '} /\* e_jump_inner (unwound) \*/' "$T/replay")" 1000
	check_eq "$build: e_jump_mid closed as unwound" "$(grep -c '} /\* e_jump_mid (unwound) \*/' "$T/replay")" 1000
	check_eq "$build: e_jump returns normally, after its e_leaf" \
		"$(grep -B1 '} /\* e_jump \*/' "$T/seq" | grep -c 'e_leaf();')" 1000
	check_eq "$build: the recursion nests 7 deep" "$(grep -cE '^ +[0-9.]+ [mu]?s \[ *[0-9]+\] \|                 e_rec\(\);' "$T/replay")" 1000

	# Return values at exit sites: e_leaf's, at its ret, recorded;
	# e_sib's, at its sibling-call jmp, not yet computed: none recorded
	# rather than what rax held.
	"$NEEDLE" record -o "$T/rv.data" -R 'e_leaf@retval/d' -R 'e_sib@retval/d' -R 'e_sib_ptr@retval/d' \
		-- "$P" >/dev/null 2>&1
	replay_threads "$T/rv.data" >"$T/rv"
	check_eq "$build: -R at exit sites: e_leaf's return values, none for the sibling callers" \
		"$(grep -cE 'e_leaf\(\) = -?[0-9]+;' "$T/rv") $(grep -cE 'e_sib(_ptr)?\(\) = ' "$T/rv") $(grep -cE 'e_sib(_ptr)?\(\);' "$T/rv")" \
		"5000 0 2000"

	# The return hook instead: the same calls, the sibling nested.
	NEEDLE_EXIT_SITES=0 "$NEEDLE" record -o "$T/h.data" -- "$P" >"$T/hout" 2>/dev/null
	check "$build, return hook: output identical" cmp -s "$T/plain" "$T/hout"
	check_counts "$build, return hook" "$T/h.data" "$T/plain"
	check_eq "$build, return hook: e_leaf nested in e_sib" "$(grep -c 'e_sib() {' <(replay_threads "$T/h.data"))" 1000

	# CET shadow stacks forbid hijacked returns: with exit sites on every
	# function, exit handlers work all the same.
	NEEDLE_ASSUME_SHSTK=1 "$NEEDLE" record -o "$T/c.data" -- "$P" >"$T/cout" 2>"$T/cerr"
	st=$?
	check_eq "$build, CET: recorded with exits ($(tail -1 "$T/cerr"))" "$st" 0
	check "$build, CET: output identical" cmp -s "$T/plain" "$T/cout"
	check_counts "$build, CET" "$T/c.data" "$T/plain"

	# A running process: calls in flight (e_slow sleeps 20 ms) when the
	# recording attaches and when it detaches; the process goes on.
	"$P" loop >"$T/lout" &
	pid=$!
	sleep 0.1
	ok=0
	for i in 1 2 3 4 5; do
		"$NEEDLE" record -p "$pid" -o "$T/p$i.data" --duration=0.15 2>"$T/p.err" &&
			"$NEEDLE" replay -i "$T/p$i.data" >/dev/null && ok=$((ok + 1))
	done
	check_eq "$build, -p: 5 attach/detach cycles with calls in flight, each trace readable" "$ok" 5
	n=$(calls "$T/p5.data" e_mid)
	check "$build, -p: e_mid calls recorded ($n)" test "${n:-0}" -gt 1 2>/dev/null
	kill -TERM "$pid"
	wait "$pid"
	check_eq "$build, -p: the process ends as it would (exit 0)" "$?" 0
	check_eq "$build, -p: its output intact" "$(cat "$T/lout")" "loop done 1"
done
