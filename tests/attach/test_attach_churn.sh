#!/usr/bin/env bash
# test_attach_churn - needle record -p, again and again, on a process whose
# threads come and go and which spawns and forks children
# (tests/attach/churn_target.c).  A patch batch must not leave an int3
# where code runs with SIGTRAP blocked: a new thread begins in the C
# library (start_thread, with --sites=all a site) with every signal
# blocked; a thread that blocks SIGTRAP makes threads that begin with it
# blocked; a posix_spawn child runs the C library in the process's memory
# with every signal blocked until its exec.  Each of these killed the
# target within a few dozen attaches: a thread made by a sleeper that
# woke before its door closed, or by a creator stopped only once it
# unblocked, was never stopped; a thread that blocks SIGTRAP made one
# between the batch's look and its stop; a spawner asleep in its vfork
# was left behind a door while its child ran.  The batch's gate
# (sigmask_watch.c) is crossed by threads that toggle SIGTRAP, by
# creators that block every signal around pthread_create, and by forks
# whose children block every signal: none may slip past it or hang at
# it.  A SIGEV_THREAD timer's notify function, which glibc runs with every
# signal blocked, is run with SIGTRAP unblocked.  A parent that sleeps in vfork with every signal blocked (its child
# running in its memory) is waited for, not held from outside: up to 2 s,
# then the attach fails and says why.
. "$(dirname "$0")/../lib.sh"
CT="$BUILD/tests/attach/churn_target"

# churn NAME ARGS...: start the target (TPID), wait for its "ready".
churn() {
	local name=$1
	shift
	rm -f "$T/in"
	mkfifo "$T/in"
	"$CT" "$@" <"$T/in" >"$T/out" 2>"$T/err" &
	TPID=$!
	exec 9>"$T/in"
	wait_for grep -q '^ready$' "$T/out" || fail "$name: the target never said ready"
}

# attaches NAME N: N attaches, half with --sites=all (every thread
# stopped for the C library's relocated sites), half with
# --sites=compiled (the int3 protocol, threads running); the last
# records for 0.3 s.  OK: how many succeeded in a row.
attaches() {
	OK=0
	for i in $(seq 1 "$2"); do
		sites=all
		[ $((i % 2)) = 0 ] && sites=compiled
		d=0.03
		[ "$i" = "$2" ] && d=0.3
		if ! timeout 120 "$NEEDLE" record -p "$TPID" --sites=$sites -o "$T/t.data" --duration=$d 2>"$T/rec"; then
			kill -0 "$TPID" 2>/dev/null || break
			fail "$1: attach $i (--sites=$sites) failed: $(tail -1 "$T/rec")"
			break
		fi
		OK=$i
	done
}

# ends NAME [OUTPUT]: end the target; its exit status and output checked.
ends() {
	exec 9>&-
	timeout 60 tail --pid="$TPID" -f /dev/null
	wait "$TPID"
	st=$?
	check_eq "$1: the target exits 0 ($(head -2 "$T/err" | tr '\n' ' '))" "$st" 0
	check_eq "$1: no failed check in it" "$(tr '\n' ' ' <"$T/out")" "${2:-ready errors 0 }"
}

churn threads --plain 4 --blocking 2 --spawners 1
attaches threads 60
check_eq "threads: the target lived through 60 attaches" "$OK" 60
check "threads: the last one recorded churn_work calls" \
	sh -c "'$NEEDLE' replay -i '$T/t.data' -F churn_work | grep -q 'churn_work();'"
ends threads

# Without the per-batch look at every thread's mask (interposition
# vouches for them): a thread made by a creator that blocked every signal
# for the moment must be counted before it runs.
export NEEDLE_MASK_SCAN_MAX=0
churn masks --plain 2 --togglers 1 --fill-creators 1 --forkers 1
attaches masks 40
check_eq "masks: the target lived through 40 attaches" "$OK" 40
check "masks: the last one recorded churn_work calls" \
	sh -c "'$NEEDLE' replay -i '$T/t.data' -F churn_work | grep -q 'churn_work();'"
ends masks
unset NEEDLE_MASK_SCAN_MAX

# A SIGEV_THREAD timer made once libneedle is in the process: glibc
# runs its notify function in a thread it makes itself, with every
# signal blocked, and the function calls churn_work: timer_create's
# interposer unblocks SIGTRAP and the stop signal around the call, and
# the function still sees them blocked.  Without it, the first attach
# with the timer running killed the target.
churn timers --plain 1
timeout 60 "$NEEDLE" record -p "$TPID" --sites=compiled -o "$T/t.data" --duration=0.03 2>"$T/rec" ||
	fail "timers: the first attach failed: $(tail -1 "$T/rec")"
echo timer >&9
wait_for grep -q '^timer made$' "$T/out" || fail "timers: no timer made"
attaches timers 30
check_eq "timers: the target lived through 30 attaches while its timer fired" "$OK" 30
check "timers: the last one recorded churn_work calls" \
	sh -c "'$NEEDLE' replay -i '$T/t.data' -F churn_work | grep -q 'churn_work();'"
ends timers "ready timer made errors 0 "

churn vfork300 --slow-ms 300
ok=0
for i in 1 2 3 4; do
	timeout 60 "$NEEDLE" record -p "$TPID" -o "$T/s.data" --duration=0.03 2>"$T/rec" && ok=$i
done
check_eq "vfork300: a thread asleep in vfork for 300 ms at a time: 4 attaches of 4 recorded ($(tail -1 "$T/rec"))" "$ok" 4
ends vfork300

churn vfork3s --slow-ms 3000
timeout 60 "$NEEDLE" record -p "$TPID" -o "$T/s.data" --duration=0.03 2>"$T/rec"
st=$?
check_eq "vfork3s: a thread asleep in vfork for 3 s: the attach fails" "$st" 1
check "vfork3s: ... saying why" grep -q "has waited 2 s for a child that runs in its memory" "$T/rec"
ends vfork3s
