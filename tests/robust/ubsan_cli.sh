#!/usr/bin/env bash
# test_ubsan_cli - the needle command and the reader built with
# UndefinedBehaviorSanitizer (-fno-sanitize-recover: the first finding
# aborts), recording through the UBSan agent, then every view over the
# trace and over damaged copies of it.
. "$(dirname "$0")/../lib.sh"
U="$BUILD/ubsan/needle"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

"$U" record -o "$T/t.data" -- "$PROGS/threads" 3 3000 >"$T/rec.out" 2>"$T/rec.err"
rc=$?
check "UBSan record of threads 3 3000 exits 0 (got $rc)" test "$rc" = 0
check "no UBSan report while recording" bash -c "! grep -q 'runtime error' '$T/rec.err'"
"$U" record --ctl -t function -F 'work' -o "$T/f.data" -- "$PROGS/threads" 2 500 >/dev/null 2>>"$T/rec.err"
check "UBSan record with --ctl, the function tracer and a filter exits 0" test $? = 0

# Live control: the control thread of the UBSan agent and the UBSan ctl.
mkfifo "$T/in"
"$U" record --ctl -F a -o "$T/c.data" -- "$PROGS/phases" <"$T/in" >"$T/ph.out" 2>"$T/ph.err" &
rec=$!
exec 3>"$T/in"
wait_for() {
	for _ in $(seq 1 600); do
		grep -q "$1" "$T/ph.out" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
check "phases: phase 1 under the UBSan agent" wait_for '^phase1'
pid=$(sed -n 's/^phase1 pid=\([0-9]*\).*/\1/p' "$T/ph.out")
"$U" ctl "$pid" filter 'a' 'b' >/dev/null 2>>"$T/ph.err"; r1=$?
"$U" ctl "$pid" bogus >/dev/null 2>&1; r2=$?
echo go >&3
wait_for '^phase2' >/dev/null
"$U" ctl "$pid" tracer function >/dev/null 2>>"$T/ph.err"; r3=$?
"$U" ctl "$pid" depth 1 >/dev/null 2>>"$T/ph.err"; r4=$?
"$U" ctl "$pid" status >/dev/null 2>>"$T/ph.err"; r5=$?
echo go >&3
exec 3>&-
wait $rec
rc=$?
check "UBSan ctl filter/bogus/tracer/depth/status exit 0 1 0 0 0 (got $r1 $r2 $r3 $r4 $r5)" \
	test "$r1 $r2 $r3 $r4 $r5" = "0 1 0 0 0"
check "UBSan record --ctl of phases exits 0 (got $rc)" test "$rc" = 0
check "no UBSan report with live control" bash -c "! grep -q 'runtime error' '$T/ph.err'"

for f in t f c; do
	for v in info replay report "report -s self --csv" "export --format=perfetto -o $T/x.pf" \
		"export --format=chrome -o $T/x.json" "export --format=folded -o $T/x.folded"; do
		"$U" $v -i "$T/$f.data" >"$T/view.out" 2>"$T/view.err"
		rc=$?
		[ "$rc" = 0 ] || { fail "UBSan needle $v on $f.data exits $rc"; sed 's/^/      /' "$T/view.err" | head -20; }
	done
done
pass "every view of the three traces ran under UBSan"
check "UBSan and plain replay print the same" cmp -s <("$U" replay -i "$T/t.data") <("$BUILD/needle" replay -i "$T/t.data")

# Damaged copies: each view must exit 0 or 1 (a message), never abort.
size=$(stat -c %s "$T/t.data")
bad=0
for i in $(seq 1 30); do
	off=$(( (i * 7919 + 13) % size ))
	if [ $((i % 3)) = 0 ]; then
		head -c "$off" "$T/t.data" >"$T/m.data"
	else
		cp "$T/t.data" "$T/m.data"
		printf "\\x$(printf %02x $(( (i * 53 + 1) % 256 )))" | dd of="$T/m.data" bs=1 seek="$off" conv=notrunc 2>/dev/null
	fi
	for v in info replay report "export --format=chrome -o $T/y.json"; do
		"$U" $v -i "$T/m.data" >/dev/null 2>"$T/m.err"
		rc=$?
		if [ "$rc" -gt 1 ]; then
			bad=$((bad + 1))
			echo "      needle $v on a copy damaged at $off: status $rc"; head -5 "$T/m.err" | sed 's/^/      /'
		fi
	done
done
check "30 damaged traces x 4 views under UBSan: no abort ($bad)" test "$bad" = 0
