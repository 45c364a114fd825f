#!/usr/bin/env bash
# test_trigger_fold - a --trigger's function is timed by the recorder
# itself where the recorder's function_graph link traces it (the direct
# path included), and by a link of the trigger's own where it does not:
# -F functions (their cookie holds a depth limit), functions the -P
# filter leaves out, and the function tracer.  Either way the trigger
# fires exactly once for the one slow call among 400,000, also for calls
# the filters do not record (-N, -D, outside -F), and the program's
# output is untouched.  NEEDLE_DEBUG=1 says which way each trigger goes.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/snap_prog"

"$P" >"$T/plain"

# fold_case NAME RECORDER_COUNT LINK_COUNT [ENV=VALUE...] -- RECORD_ARGS...
fold_case() {
	local name=$1 rec=$2 own=$3
	shift 3
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	rm -f "$T"/s.data*
	# 70 ms: far from the slow call's 100 ms, and from what a fast call
	# takes when a loaded machine preempts it (30 ms was seen).
	env NEEDLE_DEBUG=1 "${envs[@]}" "$NEEDLE" record --snapshot=8 "$@" --trigger 'handler>70ms' \
		-o "$T/s.data" -- "$P" >"$T/out" 2>"$T/err"
	st=$?
	check_eq "$name: needle record exits 0 ($(grep -v '^needle' "$T/err" | tail -1))" "$st" 0
	check "$name: output identical to a run left alone" cmp -s "$T/plain" "$T/out"
	check_eq "$name: the trigger's functions, timed by the recorder and by a link" \
		"$(sed -n "s/.*trigger 'handler': \([0-9]*\) functions timed by the recorder, \([0-9]*\) by a link.*/\1 \2/p" "$T/err" | head -1)" \
		"$rec $own"
	check_eq "$name: exactly one snapshot" "$(ls "$T" | grep -c '^s\.data')" 1
	check "$name: it names the slow call of handler (100 ms)" \
		grep -qE "trigger: +handler>70ms: handler in thread [0-9]+, a call of 1[0-9][0-9]\.[0-9]+ ms" \
		<("$NEEDLE" info -i "$T/s.data.1")
}

fold_case "direct path" 1 0 --
fold_case "full path (NEEDLE_DIRECT=0)" 1 0 NEEDLE_DIRECT=0 --
# Calls the filters do not record still have their exits timed.
fold_case "-N handler (not recorded)" 1 0 -- -N handler
check_eq "-N handler: no handler in the snapshot" "$("$NEEDLE" replay -i "$T/s.data.1" | grep -c 'handler')" 0
fold_case "-D 1 (handler below the limit)" 1 0 -- -D 1
check_eq "-D 1: no handler in the snapshot" "$("$NEEDLE" replay -i "$T/s.data.1" | grep -c 'handler')" 0
fold_case "-F slow_part (handler outside every -F subtree)" 1 0 -- -F slow_part
# A -F function keeps a link of its own.
fold_case "-F handler" 0 1 -- -F handler
check "-F handler: its subtree recorded" grep -q "} /\* slow_part \*/" <("$NEEDLE" replay -i "$T/s.data.1")
# Not among the recorder's functions at all.
fold_case "-P parse (handler not patched by the recorder)" 0 1 -- -P parse
fold_case "function tracer" 0 1 -- --tracer function

# An entry trigger on the recorder's function fires in graph_entry.
rm -f "$T"/e.data*
NEEDLE_DEBUG=1 "$NEEDLE" record --snapshot=8 --trigger slow_part --trigger-after=20ms -o "$T/e.data" -- "$P" \
	>/dev/null 2>"$T/eerr"
check "entry trigger: timed by the recorder" grep -q "trigger 'slow_part': 1 functions timed by the recorder, 0" "$T/eerr"
check "entry trigger: one snapshot" test -f "$T/e.data.1" -a ! -f "$T/e.data.2"
check "entry trigger: info says why" grep -q "the function was entered" <("$NEEDLE" info -i "$T/e.data.1")

# A trigger that never fires, on the direct path: no snapshot.
rm -f "$T"/n.data*
"$NEEDLE" record --snapshot=64 --trigger 'handler>5s' -o "$T/n.data" -- "$P" >/dev/null 2>&1
check_eq "never firing: no snapshot" "$(ls "$T" | grep -c '^n\.data')" 0
