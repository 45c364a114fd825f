#!/usr/bin/env bash
# test_snapshot - the flight recorder: needle record --snapshot keeps the
# newest events in per-thread overwrite rings and writes a snapshot only
# when asked.  A request handler slow once among 400,000 fast ones in 4
# threads: a duration trigger writes exactly one snapshot, holding the
# slow call complete, its callees and the fast calls before it; a trigger
# that never fires writes none.  A crash keeps the last calls before it.
# SIGUSR2 and needle ctl ask for snapshots; 1,000 of them taken while 4
# threads write at full speed all pass the reader's checks.  Bad input is
# refused before the program runs.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/snap_prog"
# No spinning program outlives the test, whatever fails.
trap 'pkill -f "$P spin" 2>/dev/null; rm -rf "$T"' EXIT

"$P" >"$T/plain"

# ---- a duration trigger ----
"$NEEDLE" record --snapshot=16 --trigger 'handler>30ms' -o "$T/s.data" -- "$P" >"$T/out" 2>"$T/err"
st=$?
check_eq "trigger: needle record exits as the program ($(tail -1 "$T/err"))" "$st" 0
check "trigger: output identical to a run left alone" cmp -s "$T/plain" "$T/out"
check_eq "trigger: exactly one snapshot" "$(ls "$T" | grep -c '^s\.data')" 1
check "trigger: it is s.data.1 (no end-of-program snapshot with triggers)" test -f "$T/s.data.1"
"$NEEDLE" info -i "$T/s.data.1" >"$T/info"
check_eq "trigger: the file passes the reader's checks" "$?" 0
tid=$(awk '/trigger:/ { for (i = 1; i <= NF; i++) if ($i == "thread") print $(i + 1) }' "$T/info" | tr -d ,)
check "trigger: info names the trigger, the function and the thread ($tid)" \
	grep -qE "trigger: +handler>30ms: handler in thread [0-9]+, a call of 1[0-9][0-9]\.[0-9]+ ms" "$T/info"
"$NEEDLE" replay --tid "$tid" -i "$T/s.data.1" >"$T/r"
check_eq "trigger: replay of the trigger's thread" "$?" 0
check "trigger: slow_part complete, 100 ms, under handler" \
	grep -qE '^ *1[0-9][0-9]\.[0-9]+ ms \[ *[0-9]+\] \| +slow_part\(\);' "$T/r"
check "trigger: the slow handler closes after it" \
	grep -qE '^ *1[0-9][0-9]\.[0-9]+ ms \[ *[0-9]+\] \| +} /\* handler \*/' "$T/r"
before=$(awk '/slow_part\(\)/ { exit } /\| +handler\(\) \{/ { n++ } END { print n + 0 }' "$T/r")
check "trigger: fast calls before it in the window ($before handlers)" test "$before" -ge 1000
check_eq "trigger: its callees nested in order: parse, slow_part, reply" \
	"$(grep -B2 -A2 -E '\| +slow_part\(\);' "$T/r" | sed 's/.*| //' | tr -d ' ' | tr '\n' ' ')" \
	"handler(){ parse(); slow_part(); reply(); }/*handler*/ "
# The events of a thread form one window, oldest dropped first: every
# exit without an entry comes before the thread's first entry at depth 0.
"$NEEDLE" report -i "$T/s.data.1" >/dev/null
check_eq "trigger: report reads it" "$?" 0

# A trigger that never fires: no snapshot at all, and it says so.
"$NEEDLE" record --snapshot=8 --trigger 'handler>5s' -o "$T/n.data" -- "$P" >/dev/null 2>"$T/nerr"
check_eq "no firing trigger: exit 0" "$?" 0
check_eq "no firing trigger: no snapshot written" "$(ls "$T" | grep -c '^n\.data')" 0
check "no firing trigger: said once" grep -q "no trigger fired" "$T/nerr"

# An entry trigger, a little after.
"$NEEDLE" record --snapshot=8 --trigger slow_part --trigger-after=20ms -o "$T/e.data" -- "$P" >/dev/null 2>&1
check "entry trigger: one snapshot" test -f "$T/e.data.1" -a ! -f "$T/e.data.2"
check "entry trigger: it holds slow_part's entry" grep -qE 'slow_part\(\)' <("$NEEDLE" replay -i "$T/e.data.1")
check "entry trigger: info says why" grep -q "the function was entered" <("$NEEDLE" info -i "$T/e.data.1")

check "trigger: calls entered before the window are said to be" \
	grep -q "(entered before the snapshot)" <("$NEEDLE" replay -i "$T/s.data.1")
"$NEEDLE" export --format=perfetto -i "$T/s.data.1" -o "$T/s.pftrace" 2>/dev/null
check_eq "trigger: the Perfetto export reads it" "$?" 0
"$NEEDLE" export --format=chrome -i "$T/s.data.1" -o "$T/s.json" 2>/dev/null
check_eq "trigger: the Chrome export reads it" "$?" 0

# ---- a crash ----
"$NEEDLE" record --snapshot=8 -o "$T/c.data" -- "$P" crash >/dev/null 2>"$T/cerr"
check_eq "crash: needle record exits as the program (SIGSEGV)" "$?" 139
check "crash: the snapshot is written" test -f "$T/c.data"
check "crash: info says the program crashed" grep -q "the program crashed" <("$NEEDLE" info -i "$T/c.data")
"$NEEDLE" replay -i "$T/c.data" >"$T/cr"
check_eq "crash: replay reads it" "$?" 0
ctid=$(grep -E '\| +crash_here\(\) \{' "$T/cr" | sed 's/.*\[ *\([0-9]*\)\].*/\1/')
check_eq "crash: the last call, crash_here, open inside worker: listed after the graph, innermost first" \
	"$(sed -n '/with these calls open/,$p' "$T/cr" | sed -n "/^task: $ctid\$/,/^task/p" | grep -v '^task' | head -2 | sed 's/^\[[0-9]*\] //')" "crash_here
worker"
check "crash: the crashing thread's handler calls before it" \
	test "$("$NEEDLE" replay --tid "$ctid" -i "$T/c.data" | grep -c 'handler() {')" -ge 1000
# With a ring too small for the crashing thread's whole life (1 MiB
# shared by 5 threads; it writes 1.4 MB before the crash), its window begins
# inside worker, whose entry was written over long before: the window's
# first chunk enters it again, so every handler is nested under it, no
# call of worker is counted, and the crash's stack is whole.
"$NEEDLE" record --snapshot=1 -o "$T/c1.data" -- "$P" crash >/dev/null 2>&1
"$NEEDLE" replay -i "$T/c1.data" >"$T/c1r"
ctid=$(grep -E '\| +crash_here\(\) \{' "$T/c1r" | sed 's/.*\[ *\([0-9]*\)\].*/\1/')
"$NEEDLE" replay --tid "$ctid" -i "$T/c1.data" >"$T/crt"
check "small ring: the crashing thread's window holds handlers ($(grep -c 'handler() {' "$T/crt"))" \
	test "$(grep -c 'handler() {' "$T/crt")" -ge 100
check_eq "small ring: every handler in it nested at depth 1, under worker" \
	"$(grep -E '\| +handler\(\) \{' "$T/crt" | grep -cvE '\|   handler\(\) \{')" 0
check "small ring: worker's entry is not a line of the window" test "$(grep -c 'worker() {' "$T/crt")" -eq 0
check_eq "small ring: report counts no call of worker in it (none entered in its window)" \
	"$("$NEEDLE" report --tid "$ctid" -i "$T/c1.data" | grep -cw worker)" 0
check_eq "small ring: the stack at the crash is whole" \
	"$(sed -n '/with these calls open/,$p' "$T/c1r" | sed -n "/^task: $ctid\$/,/^task/p" | grep -v '^task' | tr '\n' ' ')" \
	"[1] crash_here [0] worker "
check "small ring: dump says which exits' calls were entered before the snapshot" \
	grep -qE 'exit .*\(entered before the snapshot\)' <("$NEEDLE" dump -i "$T/c1.data")
# However the threads shared the rings (which decides how much of each
# is kept: 8 runs, since without the entries the stack lost worker in
# about one run of 3).
whole=0
for i in 1 2 3 4 5 6 7 8; do
	"$NEEDLE" record --snapshot=8 -o "$T/c$i.data" -- "$P" crash >/dev/null 2>&1
	"$NEEDLE" replay -i "$T/c$i.data" >"$T/cr$i"
	t=$(grep -E '\| +crash_here\(\) \{' "$T/cr$i" | sed 's/.*\[ *\([0-9]*\)\].*/\1/')
	[ "$(sed -n '/with these calls open/,$p' "$T/cr$i" | sed -n "/^task: $t\$/,/^task/p" | grep -v '^task' |
		head -2 | tr '\n' ' ')" = "[1] crash_here [0] worker " ] && whole=$((whole + 1))
	rm -f "$T/c$i.data" "$T/cr$i"
done
check_eq "crash: the stack at the crash is whole in 8 runs of 8" "$whole" 8

# SIGKILL: what the rings held is kept.
"$NEEDLE" record --snapshot=4 -o "$T/k.data" -- "$P" spin >/dev/null 2>"$T/kerr" &
rec=$!
wait_for grep -q "flight recorder" "$T/kerr"
pid=$(pgrep -P "$rec" | head -1)
sleep 0.2
kill -KILL "$pid"
wait "$rec"
check_eq "SIGKILL: needle record exits 128+9" "$?" 137
check "SIGKILL: the crash snapshot" grep -q "the program crashed" <("$NEEDLE" info -i "$T/k.data")
n=$("$NEEDLE" report --csv -i "$T/k.data" | awk -F, '$1 == "handler" { print $2 }')
check "SIGKILL: handler calls in it ($n)" test "${n:-0}" -gt 1000

# ---- asked for: needle ctl and SIGUSR2, then the end ----
"$NEEDLE" record --snapshot=4 --ctl -o "$T/u.data" -- "$P" spin >"$T/uout" 2>"$T/uerr" &
rec=$!
wait_for grep -q "flight recorder" "$T/uerr"
pid=$(pgrep -P "$rec" | head -1)
"$NEEDLE" ctl "$pid" snapshot >/dev/null
check_eq "ctl: needle ctl PID snapshot answers" "$?" 0
# A snapshot is written in place (output.c): whole once info says so.
whole() { "$NEEDLE" info -i "$1" 2>/dev/null | grep -q '^status: *complete'; }
wait_for whole "$T/u.data.1"
sleep 1.1 # --snapshot-interval defaults to 1 s
kill -USR2 "$rec"
wait_for whole "$T/u.data.2"
check "SIGUSR2: the second snapshot" test -f "$T/u.data.2"
check "ctl: info says needle ctl" grep -q "needle ctl snapshot" <("$NEEDLE" info -i "$T/u.data.1")
check "SIGUSR2: info says SIGUSR2" grep -q "SIGUSR2" <("$NEEDLE" info -i "$T/u.data.2")
kill -TERM "$pid"
wait "$rec"
check_eq "end: the program exits 0 and so does needle record" "$?" 0
check_eq "end: its output" "$(cat "$T/uout")" "spun in 4 threads until SIGTERM"
check "end: the last snapshot in u.data" grep -q "the program ended" <("$NEEDLE" info -i "$T/u.data")
n=$("$NEEDLE" report --csv -i "$T/u.data" | awk -F, '$1 == "handler" { print $2 }')
check "end: handler calls in it ($n)" test "${n:-0}" -gt 1000

# ---- 1,000 snapshots while 4 threads write at full speed ----
mkdir "$T/st"
"$NEEDLE" record --snapshot=1 --chunk-size=4 --snapshot-interval=0 --max-snapshots=1000 -o "$T/st/x" \
	-- "$P" spin >/dev/null 2>"$T/sterr" &
rec=$!
wait_for grep -q "flight recorder" "$T/sterr"
pid=$(pgrep -P "$rec" | head -1)
for i in $(seq 1 1000); do
	kill -USR2 "$rec"
	for _ in $(seq 1 2000); do
		[ -f "$T/st/x.$i" ] && break
		sleep 0.002
	done
done
kill -TERM "$pid"
wait "$rec"
check_eq "stress: 1,000 snapshots written" "$(ls "$T/st" | grep -c '^x\.[0-9]*$')" 1000
bad=0
for f in "$T"/st/x.*; do
	"$NEEDLE" info -i "$f" >/dev/null 2>&1 && "$NEEDLE" replay -i "$f" >/dev/null 2>"$T/st.err" || {
		bad=$((bad + 1))
		[ "$bad" -le 3 ] && echo "      $f: $(head -1 "$T/st.err")"
	}
done
check_eq "stress: every snapshot passes the reader's checks (info, replay)" "$bad" 0
events=$(for f in "$T"/st/x.*; do "$NEEDLE" info -i "$f" | awk '/^events:/ { print $2 }'; done | sort -n | head -1)
check "stress: each holds events (fewest: $events)" test "${events:-0}" -gt 100

# ---- bad input, refused before the program runs ----
bad_input "unknown trigger function" "did you mean handler" --snapshot --trigger 'handlr>1ms'
bad_input "malformed duration" "needs a duration" --snapshot --trigger 'handler>5parsecs'
bad_input "trigger without --snapshot" "need --snapshot" --trigger 'handler>1ms'
bad_input "size too small" "too small" --snapshot=1 --chunk-size=64
bad_input "zero duration" "more than 0" --snapshot --trigger 'handler>0ms'
bad_input "--max-snapshots without --snapshot" "need --snapshot" --max-snapshots=3
bad_input "a reader mode with --snapshot" "no reader" --snapshot --poll=1
bad_input "a buffer over half the memory" "half of this machine" --snapshot=65536
echo x >"$T/bad.data.1"
bad_input "FILE.1 not a needle trace" "bad.data.1 exists and is not a needle trace" --snapshot
rm -f "$T/bad.data.1"
check "nothing left behind by the refusals (no empty FILE)" test ! -e "$T/bad.data"

# ---- a running process (-p): asked for, then the end of the recording ----
"$P" spin >"$T/pout" &
pid=$!
sleep 0.2
"$NEEDLE" record -p "$pid" --snapshot=4 --duration=1.5 -o "$T/p.data" 2>"$T/perr" &
rec=$!
wait_for grep -q "flight recorder" "$T/perr"
sleep 0.2
kill -USR2 "$rec"
wait "$rec"
st=$?
check_eq "-p: needle record ends after --duration ($(tail -1 "$T/perr"))" "$st" 0
check "-p: the asked-for snapshot" test -f "$T/p.data.1"
check "-p: the last snapshot, at the end of the recording" grep -q "the recording ended" <("$NEEDLE" info -i "$T/p.data")
n=$("$NEEDLE" report --csv -i "$T/p.data.1" | awk -F, '$1 == "handler" { print $2 }')
check "-p: handler calls in the first ($n)" test "${n:-0}" -gt 1000
kill -TERM "$pid"
wait "$pid"
check_eq "-p: the process runs on, then ends as it would (exit 0)" "$?" 0
check_eq "-p: its output intact" "$(cat "$T/pout")" "spun in 4 threads until SIGTERM"
