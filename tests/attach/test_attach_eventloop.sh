#!/usr/bin/env bash
# test_attach_eventloop - needle record -p on a process whose only thread
# sleeps in an event loop's wait, as servers idle: epoll_wait with and
# without a timeout, epoll_pwait, sigsuspend, sigtimedwait.  A ptrace stop
# ends the epoll and sigtimedwait calls with EINTR (the kernel never
# restarts them), so the borrowed thread's call is made again before it
# is released.  The program prints what every wait returned: its output
# must be exactly that of the lines it was sent, with no EINTR, across two
# attaches each; the calls made while recorded are counted exactly.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
EL="$BUILD/tests/attach/eventloop"
[ -x "$EL" ] || { fail "$EL is missing"; exit 1; }

for mode in epoll epoll_timeout epoll_pwait sigsuspend sigtimedwait; do
	mkfifo "$T/$mode.in"
	"$EL" "$mode" <"$T/$mode.in" >"$T/$mode.out" 2>"$T/$mode.err" &
	pid=$!
	exec 9>"$T/$mode.in"
	expect=
	n=0
	send() {
		n=$((n + 1))
		echo "line$n" >&9
		if [ "${mode#sig}" != "$mode" ]; then expect+="signal $n"$'\n'; else expect+="tick $n: line$n"$'\n'; fi
		wait_for grep -q "^\(signal $n\|tick $n:\)" "$T/$mode.out"
	}
	send
	for round in 1 2; do
		# Idle when attached: no line is on its way.
		"$NEEDLE" record -p "$pid" -F loop_tick -o "$T/$mode.$round.data" --duration=60 2>"$T/$mode.$round.rec" &
		rec=$!
		wait_for grep -q "recording process" "$T/$mode.$round.rec"
		send
		send
		send
		kill -INT "$rec"
		wait "$rec"
		rc=$?
		check_eq "$mode, attach $round: recorded and detached ($(tail -1 "$T/$mode.$round.rec"))" "$rc" 0
		check_eq "$mode, attach $round: the 3 calls made while recorded" "$(calls "$T/$mode.$round.data" loop_tick)" 3
		send
	done
	exec 9>&-
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	check_eq "$mode: every wait returned what it was woken for (no EINTR)" "$(cat "$T/$mode.out")" "${expect%$'\n'}"
	check_eq "$mode: nothing on its stderr" "$(cat "$T/$mode.err")" ""
done
