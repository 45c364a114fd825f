#!/usr/bin/env bash
# test_record_daemon - a program that daemonizes (forks, and its parent
# exits): the forked process records into the same buffer, so needle
# record goes on draining until it exits, says so in one line, and exits
# with the status of the program it started.  Ctrl-C (SIGINT) stops the
# recording early and lets go of the processes that go on (their entries NOPs again).
. "$(dirname "$0")/../lib.sh"
D="$PROGS/daemon"

# The daemon holds until the test closes its stdin, after needle record
# said it waits for it: nothing here depends on timing.
mkfifo "$T/in1"
"$NEEDLE" record -o "$T/d.data" -- "$D" 3000 hold <"$T/in1" >"$T/d.out" 2>"$T/d.err" &
rec=$!
exec 3>"$T/in1"
check "daemon: it did its work" wait_for grep -q '^child done' "$T/d.out"
check "daemon: needle record says it records what the program left running" \
	wait_for grep -q 'exited; recording the processes it left running' "$T/d.err"
exec 3>&-
wait $rec
check_eq "daemon: needle record exits with the program's status" "$?" 5
check_eq "daemon: one line says so" "$(grep -c 'recording the processes it left running' "$T/d.err")" 1
check "daemon: the line names the daemon's PID" \
	grep -q "(PID $(sed -n 's/^child done pid=\([0-9]*\).*/\1/p' "$T/d.out"))" "$T/d.err"
check_eq "daemon: parent_work() calls" "$(calls "$T/d.data" parent_work)" 10
check_eq "daemon: every child_work() call of the daemon" "$(calls "$T/d.data" child_work)" 3000
check_eq "daemon: nothing left running in the trace" "$("$NEEDLE" replay -i "$T/d.data" | grep -c 'with these calls open')" 0
# The forked child's thread begins inside main, its parent's open call
# at the fork (uftrace's graph of a fork): its calls one level in, and
# main's closing brace, no line of main's entry and no orphan return.
child=$(sed -n 's/^child done pid=\([0-9]*\).*/\1/p' "$T/d.out")
check_eq "daemon: the child's graph continues its parent's main" \
	"$(replay_threads "$T/d.data" | grep "\[ *$child\]" | sed 's/^[^|]*| //' | sort | uniq -c | sed 's/^ *//')" \
	"3000   child_work();
1 } /* main */"
check_eq "daemon: the child's return from main has no duration (main began in the parent)" \
	"$(replay_threads "$T/d.data" | grep "\[ *$child\] | } /\* main \*/")" \
	"$(printf '%10s [%6u] | } /* main */' '' "$child")"
check_eq "daemon: main called once (the daemon's continuation of it is its parent's call, as uftrace counts)" \
	"$(calls "$T/d.data" main)" 1

# A daemon that stays: SIGINT to needle record stops the recording.
mkfifo "$T/in"
"$NEEDLE" record -o "$T/h.data" -- "$D" 500 hold <"$T/in" >"$T/h.out" 2>"$T/h.err" &
rec=$!
exec 3>"$T/in"
check "held daemon: it did its work" wait_for grep -q '^child done' "$T/h.out"
check "held daemon: needle record says it is recording it" wait_for grep -q 'recording the processes it left running' "$T/h.err"
kill -INT $rec
wait $rec
check_eq "held daemon: stopped by SIGINT, needle record exits with the program's status" "$?" 5
dpid=$(sed -n 's/^child done pid=\([0-9]*\).*/\1/p' "$T/h.out")
check "held daemon: says it let go of the daemon, which goes on ($(grep 'let go' "$T/h.err"))" \
	grep -q "let go of 1 process forked during the recording ($dpid)" "$T/h.err"
check_eq "held daemon: which maps nothing of the recording" "$(grep -c 'needle-buffer\|needle-meta' /proc/"$dpid"/maps)" 0
check_eq "held daemon: its calls so far are in the trace" "$(calls "$T/h.data" child_work)" 500
exec 3>&-
