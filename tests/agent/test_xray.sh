#!/usr/bin/env bash
# test_xray - a program built with clang -fxray-instrument and nothing
# else: its XRay entry sleds are compiled sites (NEEDLE_FORM_XRAY), switched
# by needle's own batches while its threads run.  Output identical to an
# untraced run, exact call counts and nesting, the same by attaching to it
# running, and no relocation needed.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/xray_prog"

"$P" >"$T/plain"
"$NEEDLE" record --sites=compiled -o "$T/x.data" -- "$P" >"$T/out" 2>"$T/err"
rc=$?
check_eq "traced through XRay's sleds: exit 0 ($(tail -1 "$T/err"))" "$rc" 0
check "output identical to a run left alone" cmp -s "$T/plain" "$T/out"
for f in x_mid x_leaf x_fib; do
	check_eq "$f called exactly as the program counts" "$(calls "$T/x.data" "$f")" \
		"$(awk -v f="$f" '$1 == "calls" { for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }' "$T/plain")"
done
"$NEEDLE" replay -i "$T/x.data" >"$T/replay"
check "x_leaf nested directly under x_mid" grep -qE '^ +[0-9.]+ [mu]?s \[ *[0-9]+\] \|     x_leaf\(\);' "$T/replay"
check_eq "every x_mid closes normally" "$(grep -c '} /\* x_mid \*/' "$T/replay")" 2000
# Every function of xray_prog.c has an entry sled (threshold 1).
n=$(nm "$P" | grep -cE ' [Tt] (x_leaf|x_fib|x_mid|worker|on_term|main)$')
check "info: the program's functions are compiled sites ($(grep -o 'xray_prog: .*' <("$NEEDLE" info -i "$T/x.data")))" \
	grep -qE "xray_prog: $n compiled" <("$NEEDLE" info -i "$T/x.data")

# The default (--sites=all) takes the sleds as compiled sites: nothing of the
# program relocated.
"$NEEDLE" record -F 'x_*' -o "$T/a.data" -- "$P" >"$T/aout" 2>/dev/null
check "--sites=all: output identical" cmp -s "$T/plain" "$T/aout"
check_eq "--sites=all: x_fib exact" "$(calls "$T/a.data" x_fib)" 930000
check "--sites=all: no function of the program relocated" \
	grep -qE "xray_prog: $n compiled" <("$NEEDLE" info -i "$T/a.data")

# A running process: attach, record, detach; it finishes as it would.
"$P" loop >"$T/lout" &
pid=$!
sleep 0.2
"$NEEDLE" record --sites=compiled -p "$pid" -F x_leaf -o "$T/p.data" --duration=0.3 2>"$T/p.err"
rc=$?
check_eq "-p: recorded and detached ($(tail -1 "$T/p.err"))" "$rc" 0
n=$(calls "$T/p.data" x_leaf)
check "-p: x_leaf calls recorded ($n)" test "${n:-0}" -gt 10 2>/dev/null
kill -TERM "$pid"
wait "$pid"
check_eq "-p: the process ends as it would (exit 0)" "$?" 0
check_eq "-p: its output intact" "$(cat "$T/lout")" "loop done 1"
