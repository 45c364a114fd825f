#!/usr/bin/env bash
# test_views_scale - the views' work grows with the number of events, not
# with the depth of the stacks, and their memory does not grow with the
# trace.  Work is counted, not timed: with NEEDLE_VIEW_WORK=1 a view prints
# the inner-loop steps it and the reader took.  Two traces with the same
# number of events, one from a recursion 100 deep and one 1,000 deep, must
# cost every view about the same (report --diff and needle script too).
. "$(dirname "$0")/../lib.sh"

# 1 thread: 500 x descend(100) and 50 x descend(1000), 200,000 calls each.
"$NEEDLE" record -o "$T/d100.data" -- "$PROGS/views_deep" 1 500 100 >/dev/null 2>&1
"$NEEDLE" record -o "$T/d1000.data" -- "$PROGS/views_deep" 1 50 1000 >/dev/null 2>&1
e100=$("$NEEDLE" info -i "$T/d100.data" | awk '/^events:/ {print $2}')
e1000=$("$NEEDLE" info -i "$T/d1000.data" | awk '/^events:/ {print $2}')
check_eq "both traces hold the same number of events" "$e100" "$e1000"
check_eq "the deep trace is 1,000 calls deep" \
	"$("$NEEDLE" export --format=folded -i "$T/d1000.data" -o - | awk '{ n = split($1, a, ";"); if (n > m) m = n } END { print m }')" 1003

# work VIEW... FILE: the steps the view reports.
work() {
	local file=${*: -1}
	NEEDLE_VIEW_WORK=1 "$NEEDLE" "${@:1:$#-1}" -i "$file" 2>&1 >/dev/null | awk '/view work:/ {print $4}'
}

for v in "replay" "replay -D 50" "report" "info" "export --format=folded -o -" "export --format=perfetto -o -" \
	"export --format=chrome -o -" "export --format=otlp -o -" "export --format=otlp --json -o -" "graph" "graph descend" \
	"graph leaf" "dump" "dump -F descend -D 50"; do
	w100=$(work $v "$T/d100.data")
	w1000=$(work $v "$T/d1000.data")
	check "$v: reports its work ($w100 steps)" test -n "$w100" -a -n "$w1000"
	# Within 1.5x of each other: a cost per event of O(depth) would make
	# it 10x.
	check "$v: as much work at depth 1000 as at depth 100 ($w1000 vs $w100 steps)" \
		awk -v a="${w100:-0}" -v b="${w1000:-1e18}" 'BEGIN { exit !(a > 0 && b <= 1.5 * a && a <= 1.5 * b) }'
	# And linear in the events: a few steps per event.
	check "$v: a bounded number of steps per event ($w1000 for $e1000 events)" \
		awk -v w="${w1000:-1e18}" -v e="$e1000" 'BEGIN { exit !(w <= 12 * e) }'
done

# pprof's profile lists every distinct call stack in full: a recursion
# 1,000 deep has 2,000 stacks of up to 1,000 frames, so its output (and
# the steps that write it) grows with the stacks, not with the events.
# The steps are the events' plus one per frame written.
w1000=$(work export --format=pprof -o - "$T/d1000.data")
frames=$("$NEEDLE" export --format=folded -i "$T/d1000.data" -o - | awk '{ n += split($1, a, ";") - 1 } END { print n }')
check "export --format=pprof: steps within the events' and the frames written ($w1000 for $e1000 events, $frames frames)" \
	awk -v w="${w1000:-1e18}" -v e="$e1000" -v f="${frames:-0}" 'BEGIN { exit !(w <= 12 * e + 2 * f) }'

# export --format=ctf and --format=uftrace write directories: a new one
# each time.
w100=$(work export --format=ctf -o "$T/d100.ctf" "$T/d100.data")
w1000=$(work export --format=ctf -o "$T/d1000.ctf" "$T/d1000.data")
check "export --format=ctf: as much work at depth 1000 as at depth 100 ($w1000 vs $w100 steps)" \
	awk -v a="${w100:-0}" -v b="${w1000:-1e18}" 'BEGIN { exit !(a > 0 && b <= 1.5 * a && a <= 1.5 * b) }'
check "export --format=ctf: a bounded number of steps per event ($w1000 for $e1000 events)" \
	awk -v w="${w1000:-1e18}" -v e="$e1000" 'BEGIN { exit !(w <= 12 * e) }'

w100=$(work export --format=uftrace -o "$T/d100.uftrace" "$T/d100.data")
w1000=$(work export --format=uftrace -o "$T/d1000.uftrace" "$T/d1000.data")
check "export --format=uftrace: as much work at depth 1000 as at depth 100 ($w1000 vs $w100 steps)" \
	awk -v a="${w100:-0}" -v b="${w1000:-1e18}" 'BEGIN { exit !(a > 0 && b <= 1.5 * a && a <= 1.5 * b) }'
check "export --format=uftrace: a bounded number of steps per event ($w1000 for $e1000 events)" \
	awk -v w="${w1000:-1e18}" -v e="$e1000" 'BEGIN { exit !(w <= 12 * e) }'

# report --diff reads both traces (each says its work); needle script
# runs a Python script over the module's iteration (which says the
# reader's).
printf 'calls = 0\ndef uftrace_entry(ctx):\n    global calls\n    calls += 1\ndef uftrace_exit(ctx):\n    pass\ndef uftrace_end():\n    import resource\n    print(calls, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n' >"$T/count.py"
sum() { awk '{ n += $1 } END { print n + 0 }'; }
for v in "report --diff" "script -S $T/count.py"; do
	if [ "$v" = "report --diff" ]; then
		w100=$(work report --diff "$T/d100.data" "$T/d100.data" | sum)
		w1000=$(work report --diff "$T/d1000.data" "$T/d1000.data" | sum)
		ev=$((2 * e1000))
	else
		w100=$(work $v "$T/d100.data" | sum)
		w1000=$(work $v "$T/d1000.data" | sum)
		ev=$e1000
	fi
	check "$v: as much work at depth 1000 as at depth 100 ($w1000 vs $w100 steps)" \
		awk -v a="${w100:-0}" -v b="${w1000:-1e18}" 'BEGIN { exit !(a > 0 && b <= 1.5 * a && a <= 1.5 * b) }'
	check "$v: a bounded number of steps per event ($w1000 for $ev events)" \
		awk -v w="${w1000:-1e18}" -v e="$ev" 'BEGIN { exit !(w <= 12 * e) }'
done

# Memory: a trace 10 times longer and as deep is read within a small
# address-space limit (the views hold a chunk and a stack per thread).
"$NEEDLE" record -o "$T/long.data" -- "$PROGS/views_deep" 1 500 1000 >/dev/null 2>&1
limit_kb=30000
for v in "replay" "report" "export --format=folded -o -" "export --format=perfetto -o -" "export --format=chrome -o -" \
	"graph" "graph leaf" "dump" "export --format=pprof -o -" "export --format=otlp -o -"; do
	( ulimit -v $limit_kb; "$NEEDLE" $v -i "$T/long.data" >/dev/null 2>"$T/err" )
	check_eq "$v of 2M events, 1,000 deep, within $limit_kb KiB of address space" "$?" 0
done

( ulimit -v $limit_kb; "$NEEDLE" report --diff "$T/long.data" -i "$T/long.data" >/dev/null 2>"$T/err" )
check_eq "report --diff of 2M events against 2M, 1,000 deep, within $limit_kb KiB of address space" "$?" 0
# Python's own memory is not the reader's: the script's peak RSS over
# the long trace is that over a trace 10 times shorter, give or take
# 4 MiB (Python's allocator keeps some of what a loop frees).
read -r c1 r1 <<<"$("$NEEDLE" script -S "$T/count.py" -i "$T/d1000.data")"
read -r c2 r2 <<<"$("$NEEDLE" script -S "$T/count.py" -i "$T/long.data")"
elong=$("$NEEDLE" info -i "$T/long.data" | awk '/^events:/ {print $2}')
check_eq "script: every entry of both traces, half their events (${c1:-?}, ${c2:-?})" "$c1 $c2" \
	"$((e1000 / 2)) $((elong / 2))"
check "script of 2M events: peak RSS that of 200,000 within 4 MiB (${r2:-?} vs ${r1:-?} KiB)" \
	awk -v a="${r1:-0}" -v b="${r2:-1e18}" 'BEGIN { exit !(a > 0 && b <= a + 4096) }'
( ulimit -v $limit_kb; "$NEEDLE" export --format=ctf -o "$T/long.ctf" -i "$T/long.data" >/dev/null 2>"$T/err" )
check_eq "export --format=ctf of 2M events, 1,000 deep, within $limit_kb KiB of address space" "$?" 0
( ulimit -v $limit_kb; "$NEEDLE" export --format=uftrace -o "$T/long.uftrace" -i "$T/long.data" >/dev/null 2>"$T/err" )
check_eq "export --format=uftrace of 2M events, 1,000 deep, within $limit_kb KiB of address space" "$?" 0

# The same with values recorded (-A / -R on every call): the views that
# show, group and filter by them keep the same bounds, the values of the
# calls still open being all they hold.
"$NEEDLE" record -o "$T/v100.data" -A 'descend@arg1/d32' -A 'leaf@arg1' -R 'descend@retval' -R 'leaf@retval' \
	-- "$PROGS/views_deep" 1 500 100 >/dev/null 2>&1
"$NEEDLE" record -o "$T/v1000.data" -A 'descend@arg1/d32' -A 'leaf@arg1' -R 'descend@retval' -R 'leaf@retval' \
	-- "$PROGS/views_deep" 1 50 1000 >/dev/null 2>&1
check_eq "with values: replay shows them (descend(arg1=1000) once per round, 50)" \
	"$("$NEEDLE" replay --arg-names -i "$T/v1000.data" | grep -c 'descend(arg1=1000) {')" 50
for v in "replay" "replay --ret-ne 0" "report --by-arg 1" "export --format=perfetto -o -" "export --format=chrome -o -"; do
	w100=$(work $v "$T/v100.data")
	w1000=$(work $v "$T/v1000.data")
	check "$v, with values: as much work at depth 1000 as at depth 100 ($w1000 vs $w100 steps)" \
		awk -v a="${w100:-0}" -v b="${w1000:-1e18}" 'BEGIN { exit !(a > 0 && b <= 1.5 * a && a <= 1.5 * b) }'
	check "$v, with values: a bounded number of steps per event ($w1000 for $e1000 events)" \
		awk -v w="${w1000:-1e18}" -v e="$e1000" 'BEGIN { exit !(w <= 12 * e) }'
done
"$NEEDLE" record -o "$T/vlong.data" -A 'descend@arg1/d32' -A 'leaf@arg1' -R 'descend@retval' -R 'leaf@retval' \
	-- "$PROGS/views_deep" 1 500 1000 >/dev/null 2>&1
for v in "replay" "replay --ret-ne 0" "report --by-arg 1" "export --format=perfetto -o -" "export --format=chrome -o -"; do
	( ulimit -v $limit_kb; "$NEEDLE" $v -i "$T/vlong.data" >/dev/null 2>"$T/err" )
	check_eq "$v of 2M events with values, 1,000 deep, within $limit_kb KiB of address space" "$?" 0
done
