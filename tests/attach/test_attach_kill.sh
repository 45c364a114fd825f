#!/usr/bin/env bash
# test_attach_kill - needle record -p killed with SIGKILL after the agent's
# session thread connected to it and before the hello arrived
# (tests/attach/kill_at_hello.c holds it at that moment): the session's
# recvmsg fails (ECONNRESET, the connection was never accepted) and must
# take nothing from it.  The session thread runs on a stack the C library
# cached from the session before, whose hello still lies where this one's
# would be received: taking its descriptor numbers closed and wrote to
# the program's descriptors, and a stale header of another shape made the
# agent walk off its stack (SIGSEGV).  Before each kill, a whole session
# runs, and the target then holds descriptors on the numbers its hello
# came on (checked each round).  A sweep of kill delays meets that moment
# about once in a hundred kills; this meets it nearly every time.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
. "$(dirname "$0")/target.sh"
KH="$BUILD/tests/attach/kill_at_hello"
KILLS=16

# fds PID: "fd target" lines, those present in each of 5 looks 20 ms apart
# (the target's threads open and close descriptors of their own).
fds() {
	for _ in 1 2 3 4 5; do
		for f in /proc/"$1"/fd/*; do echo "${f##*/} $(readlink "$f")"; done
		sleep 0.02
	done | sort | uniq -c | awk '$1 == 5 { $1 = ""; print substr($0, 2) }'
}

target_start main --dl "$DL_LIB"
fds "$TPID" >"$T/fd.0"
hits=0
n=0
held=0
RR="no round yet"
for n in $(seq 1 $KILLS); do
	# A whole session first: its socket and its hello's two descriptors
	# were the lowest numbers free, which the target then holds, so that
	# a hello taken from under the next session names them.
	if ! "$NEEDLE" record -p "$TPID" -o "$T/f.data" --duration=0.05 2>"$T/f.rec"; then
		fail "kill $n: the whole session before it recorded ($(tail -1 "$T/f.rec"))"
		sed 's/^/      /' "$T/f.rec" | tail -5
		sed 's/^/      target: /' "$T/main.err" | tail -3
		RR=$(kill -0 "$TPID" 2>/dev/null && echo alive || echo dead)
		break
	fi
	held=$((held + 3))
	target_cmd "fds 3"
	wait_for grep -q "^fds $held held" "$T/main.out" || break
	r=$("$KH" "$NEEDLE" "$TPID" "$T/k.data" 2>/dev/null)
	[ "$r" = hit ] && hits=$((hits + 1))
	wait_for agent_idle "$TPID"
	RR=dead
	kill -0 "$TPID" 2>/dev/null && target_round
	[ "$RR" = "round $TROUND ok" ] || break
done
check "killed between the connect and the hello: the session was seen waiting for it in most of $n kills ($hits)" \
	test "$hits" -ge $(((n + 1) / 2))
check_eq "killed between the connect and the hello ($hits times): the target lives on, its checks pass" \
	"$RR" "round $TROUND ok"
fds "$TPID" >"$T/fd.1"
check_eq "none of the target's descriptors was closed" "$(grep -vxFf "$T/fd.1" "$T/fd.0")" ""
check_eq "none was left in it but the $held it holds" \
	"$(grep -vxFf "$T/fd.0" "$T/fd.1" | grep -c ' /dev/null$') $(grep -vxFf "$T/fd.0" "$T/fd.1" | grep -vc ' /dev/null$')" "$held 0"

"$NEEDLE" record -p "$TPID" -o "$T/b.data" --duration=0.3 2>"$T/b.rec"
st=$?
check_eq "after the kills, an attach works ($(tail -1 "$T/b.rec"))" "$st" 0
target_round
check_eq "a round of checks after it" "$RR" "round $TROUND ok"
target_quit
check_eq "target: exit status 0" "$TSTATUS" 0
check_eq "target: no failed check ($(grep -v ok "$T/main.out" | head -3 | tr '\n' ' '))" "$(tail -1 "$T/main.out")" "errors 0"
