#!/usr/bin/env bash
# test_attach - needle record -p on running processes: exact call counts for
# the interval between two marker calls, a target whose threads sit in
# every kind of blocking call and check what each returned, --ctl after
# attaching, 1,000 threads, every site form, a target that exits or execs
# while recorded, and needle record killed with SIGKILL mid-attach and
# mid-record (the target lives on, and a later attach works).
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
. "$(dirname "$0")/target.sh"

# --- Exact counts: the worker's calls between attach_mark(1) and (2).  The
# buffer holds the whole interval (about 10 MB of events) even if the
# reader gets no CPU meanwhile, as on a loaded machine: a count that
# differs is then needle's, not a full buffer's.
target_start main --dl "$DL_LIB"
"$NEEDLE" record -p "$TPID" --buffer-size=256 -o "$T/a.data" 2>"$T/a.rec" &
NP=$!
check "attach: recording began" wait_for grep -q "recording process $TPID" "$T/a.rec"
target_mark 1
target_round
check_eq "attach: a round of checks while recorded" "$RR" "round 2 ok"
target_mark 2
kill -INT "$NP"
wait "$NP"
rc=$?
check_eq "attach: needle record -p exits 0 after Ctrl-C ($(tail -1 "$T/a.rec"))" "$rc" 0
check "attach: no event lost" sh -c "! grep -q LOST '$T/a.rec'"
check "attach: it says it detached" grep -q "detached from process $TPID; it runs on" "$T/a.rec"
target_round
check_eq "attach: a round of checks after detaching" "$RR" "round 3 ok"
for f in work_a:3 work_b:4; do
	fn=${f%:*}
	want=$(($(mark_count 2 "${f#*:}") - $(mark_count 1 "${f#*:}")))
	check_eq "attach: $fn calls between the marks in the trace = the program's own count ($want)" \
		"$(calls_between "$T/a.data" "$fn")" "$want"
done
"$NEEDLE" info -i "$T/a.data" >"$T/a.info"
check "info: says the trace was attached, and when" grep -q "^attached:      to the running process at 20" "$T/a.info"
check "info: says how it ended" grep -q "^end:           detached; the process ran on" "$T/a.info"
check "info: the target's pid" grep -q "^pid:           $TPID\$" "$T/a.info"
check "info: the target's command line" grep -q "attach_target --marks" "$T/a.info"
check "info: the target's file (its exe image)" grep -q "^# exe image *: .*/attach_target\$" "$T/a.info"
check_eq "info: no resource use of a process needle record did not start" \
	"$(grep -cE '^# (elapsed time|cpu time|max rss|exit status) ' "$T/a.info")" 0
check "report reads the attached trace" sh -c "'$NEEDLE' report -i '$T/a.data' >/dev/null"
check "export (chrome) reads it" "$NEEDLE" export -f chrome -i "$T/a.data" -o "$T/a.json"
check "the blocked traced read, entered before recording began, shows" \
	sh -c "'$NEEDLE' replay -i '$T/a.data' | grep -q blocked_in_traced"

# --- --ctl after attaching.
"$NEEDLE" record -p "$TPID" --ctl -o "$T/c.data" 2>"$T/c.rec" &
NP=$!
wait_for grep -q "recording process $TPID" "$T/c.rec"
check "ctl: status answers in the attached process" sh -c "'$NEEDLE' ctl $TPID status | grep -q '^tracing [0-9]* functions with function_graph'"
check "ctl: filter changes what is traced" sh -c "'$NEEDLE' ctl $TPID filter work_b | grep -q '^tracing 1 functions'"
target_mark 3
kill -TERM "$NP"
wait "$NP"
check_eq "ctl: needle record -p --ctl exits 0 on SIGTERM" "$?" 0
check_eq "ctl: after the filter, no work_a call is recorded after the change" \
	"$("$NEEDLE" replay -i "$T/c.data" | awk '/attach_mark/ { m = 1 } m && /work_a\(\)/ { n++ } END { print n + 0 }')" 0
check "ctl: the control socket is gone after detaching" sh -c "! '$NEEDLE' ctl $TPID status >/dev/null 2>&1"
target_round
check_eq "ctl: a round of checks after detaching" "$RR" "round 4 ok"

# --- SIGKILL of needle record mid-attach and mid-record.
for d in 0 0.002 0.005 0.01 0.02 0.05 0.1 0.3 0.6; do
	"$NEEDLE" record -p "$TPID" -o "$T/k.data" 2>/dev/null &
	NP=$!
	sleep "$d"
	kill -KILL "$NP"
	wait "$NP" 2>/dev/null
	wait_for agent_idle "$TPID"
	RR=dead
	kill -0 "$TPID" && target_round
	check_eq "kill -9 of needle record after ${d}s: the target lives on, its checks pass" "$RR" "round $TROUND ok"
done
rm -f "$T/k.data"
"$NEEDLE" record -p "$TPID" -o "$T/k.data" --duration=0.3 2>"$T/k.rec"
rc=$?
check_eq "after the kills, an attach works ($(tail -1 "$T/k.rec"))" "$rc" 0
target_quit
check_eq "target: exit status 0 after every attach" "$TSTATUS" 0
check_eq "target: no failed check ($(grep -v ok "$T/main.out" | head -3 | tr '\n' ' '))" "$(tail -1 "$T/main.out")" "errors 0"
grep -i "fail\|interrupted" "$T/main.err" | head -5

# --- Interposition in an attached process: a thread that blocks SIGTRAP
# only after libneedle arrived, in a process of more threads than the
# per-batch /proc scan covers, is seen through the rebound GOT slots and
# stopped for every batch (an int3 would kill the process).
target_start late --idle 80 --no-blocker
target_cmd sigusr1
wait_for grep -q "^sigusr1" "$T/late.out"
check_eq "interposition: before attaching, the handler runs with SIGTRAP blocked as asked" \
	"$(grep '^sigusr1' "$T/late.out")" "sigusr1 1 1"
"$NEEDLE" record -p "$TPID" --ctl -o "$T/l.data" 2>"$T/l.rec" &
NP=$!
wait_for grep -q "recording process $TPID" "$T/l.rec"
target_cmd sigusr1
wait_for test "$(grep -c '^sigusr1' "$T/late.out")" = 2
check_eq "interposition: once attached, sigaction is libneedle's (SIGTRAP out of the kernel's mask, the program reads back its own)" \
	"$(grep '^sigusr1' "$T/late.out" | tail -1)" "sigusr1 0 1"
target_cmd blocker
check "late blocker: started" wait_for grep -q "^blocker started" "$T/late.out"
ok=0
for i in $(seq 1 10); do
	"$NEEDLE" ctl "$TPID" filter 'work_*' >/dev/null 2>&1 && "$NEEDLE" ctl "$TPID" filter >/dev/null 2>&1 && ok=$((ok + 1))
done
check_eq "late blocker: 20 live filter changes applied" "$ok" 10
kill -INT "$NP"
wait "$NP"
check_eq "late blocker: recorded and detached" "$?" 0
target_round
check_eq "late blocker: the process lives, its checks pass" "$RR" "round 2 ok"
target_quit
check_eq "late blocker: no failed check" "$(tail -1 "$T/late.out")" "errors 0"

# --- 1,000 threads.
target_start idle --idle 1000
"$NEEDLE" record -p "$TPID" -o "$T/i.data" --duration=0.5 2>"$T/i.rec"
rc=$?
check_eq "1,000 threads: recorded and detached ($(tail -1 "$T/i.rec"))" "$rc" 0
target_round
check_eq "1,000 threads: a round of checks after" "$RR" "round 2 ok"
target_quit
check_eq "1,000 threads: no failed check" "$(tail -1 "$T/idle.out")" "errors 0"

# --- Every site form; the program's output is that of a run left alone.
for form in "" _fentry _nop_mcount _clang _cet; do
	P="$BUILD/tests/attach/ticker$form"
	"$P" 1200 >"$T/plain$form"
	"$P" 1200 >"$T/out$form" &
	TP=$!
	sleep 0.1
	"$NEEDLE" record -p "$TP" -F tick_work -o "$T/f$form.data" --duration=0.3 2>"$T/f$form.rec"
	rc=$?
	check_eq "form ticker$form: recorded ($(tail -1 "$T/f$form.rec"))" "$rc" 0
	wait "$TP"
	check_eq "form ticker$form: exit status 0" "$?" 0
	check "form ticker$form: output identical to a run left alone" cmp -s "$T/plain$form" "$T/out$form"
	n=$(calls "$T/f$form.data" tick_work)
	check "form ticker$form: tick_work calls recorded ($n)" test "$n" -gt 100 2>/dev/null
done

# --- The target exits, or execs, while recorded (3 s: the first attach
# relocates the C library's functions while four threads spin).
P="$BUILD/tests/attach/ticker"
"$P" 1500 >"$T/x.out" &
TP=$!
sleep 0.1
"$NEEDLE" record -p "$TP" -o "$T/x.data" 2>"$T/x.rec"
check_eq "exit: needle record -p ends with the process, status 0" "$?" 0
check "exit: it says so, with its status" grep -q "process $TP exited with status 0" "$T/x.rec"
check "exit: info says the process exited with status 0" \
	sh -c "'$NEEDLE' info -i '$T/x.data' | grep -q '^end:           the process exited with status 0\$'"
"$P" 1500 exec >"$T/e.out" &
TP=$!
sleep 0.1
"$NEEDLE" record -p "$TP" -o "$T/e.data" 2>"$T/e.rec"
check_eq "exec: needle record -p ends when the process execs, status 0" "$?" 0
check "exec: it says the recording ended in the process" grep -q "ended the recording itself" "$T/e.rec"
check "exec: the trace is readable" sh -c "'$NEEDLE' report -i '$T/e.data' >/dev/null"
wait "$TP"
check_eq "exec: the exec'd program exits 0" "$?" 0
