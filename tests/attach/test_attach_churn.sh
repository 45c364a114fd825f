#!/usr/bin/env bash
# test_attach_churn - needle record -p, again and again, on a process whose
# threads come and go and which spawns children (tests/attach/churn_target.c).
# A patch batch must not leave an int3 where code runs with SIGTRAP
# blocked: a new thread begins in the C library (start_thread, with
# --sites=all a site) with every signal blocked; a thread that blocks
# SIGTRAP makes threads that begin with it blocked; a posix_spawn child
# runs the C library in the process's memory with every signal blocked
# until its exec.  Each of these killed the target within a few dozen
# attaches: a thread made by a sleeper that woke before its door closed,
# or by a creator stopped only once it unblocked, was never stopped; a
# thread that blocks SIGTRAP made one between the batch's look and its
# stop; a spawner asleep in its vfork was left behind a door while its
# child ran.
. "$(dirname "$0")/../lib.sh"
CT="$BUILD/tests/attach/churn_target"
ATTACHES=${ATTACHES:-60}

mkfifo "$T/in"
"$CT" 4 2 1 <"$T/in" >"$T/out" 2>"$T/err" &
TPID=$!
exec 9>"$T/in"
wait_for grep -q '^ready$' "$T/out"

ok=0
for i in $(seq 1 "$ATTACHES"); do
	# Both batch kinds: every thread stopped (relocated sites of the C
	# library), and the int3 protocol with the threads running (the
	# program's own sites only).
	sites=all
	[ $((i % 2)) = 0 ] && sites=compiled
	if ! "$NEEDLE" record -p "$TPID" --sites=$sites -o "$T/t.data" --duration=0.03 2>"$T/rec"; then
		kill -0 "$TPID" 2>/dev/null || break
		fail "attach $i (--sites=$sites) failed: $(tail -1 "$T/rec")"
		break
	fi
	ok=$i
done
check_eq "the target lived through $ATTACHES attaches, half with --sites=all" "$ok" "$ATTACHES"
check "the last one recorded churn_work calls" sh -c "'$NEEDLE' replay -i '$T/t.data' -F churn_work | grep -q 'churn_work();'"
exec 9>&-
wait "$TPID"
st=$?; check_eq "target: exit status 0 ($(head -2 "$T/err" | tr "\n" " "))" "$st" 0
check_eq "target: no failed check" "$(cat "$T/out")" "ready
errors 0"
