#!/usr/bin/env bash
# test_attach_blocker - needle record -p on a process with threads that
# block every signal (as jemalloc's background thread and libuv's workers
# do): one spins through a traced function, one sleeps in futex and
# epoll_wait timeouts.  The stop signal cannot reach them and an int3
# would kill them, so needle record holds them with ptrace for each patch
# batch (the C library's relocation, the filters, a live change through
# --ctl).  Each attach records; the spinner's calls are traced; the
# sleeper's calls return exactly what they would untraced (no EINTR); the
# marks made while recorded are counted exactly.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
B="$BUILD/tests/attach/blocker"
[ -x "$B" ] || { fail "$B is missing"; exit 1; }

mkfifo "$T/in"
"$B" <"$T/in" >"$T/out" 2>"$T/err" &
pid=$!
exec 9>"$T/in"
wait_for grep -q '^ready' "$T/out"
check "two threads block every signal" \
	test "$(grep -c 'SigBlk:.*fffffffe7ffbfeff' /proc/"$pid"/task/*/status | awk -F: '{ n += $2 } END { print n }')" -ge 2
marks=0
expect="ready"
mark() {
	marks=$((marks + 1))
	echo mark >&9
	expect+=$'\n'"mark $marks"
	wait_for grep -q "^mark $marks\$" "$T/out"
}
# rec_start NAME ARGS...: needle record -p with ARGS in the background
# ($rec), once it records; rec_stop NAME WHAT: Ctrl-C, and its exit 0.
rec_start() {
	local name=$1
	shift
	"$NEEDLE" record -p "$pid" "$@" -o "$T/$name.data" --duration=60 2>"$T/$name.rec" &
	rec=$!
	wait_for grep -q "recording process" "$T/$name.rec"
}
rec_stop() {
	kill -INT "$rec"
	wait "$rec"
	local st=$?
	check_eq "$2: recorded and detached ($(tail -1 "$T/$1.rec"))" "$st" 0
}
for round in 1 2 3 compiled; do
	opt=()
	[ "$round" = compiled ] && opt=(--sites=compiled)
	rec_start "$round" "${opt[@]}" -F blk_work -F blk_mark
	mark
	mark
	rec_stop "$round" "attach $round"
	check_eq "attach $round: the 2 marks made while recorded" "$(calls "$T/$round.data" blk_mark)" 2
	n=$(calls "$T/$round.data" blk_work)
	check "attach $round: the spinning thread's calls traced ($n)" test "$n" -gt 0 2>/dev/null
	mark
done

# A live change of the filters: one more batch, with the threads running.
rec_start ctl --ctl -F blk_mark
mark
"$NEEDLE" ctl "$pid" filter blk_mark blk_work >"$T/ctl.out" 2>&1
st=$?
check_eq "ctl: the filter widened ($(head -c 200 "$T/ctl.out"))" "$st" 0
mark
rec_stop ctl ctl
check_eq "ctl: both marks" "$(calls "$T/ctl.data" blk_mark)" 2
n=$(calls "$T/ctl.data" blk_work)
check "ctl: the spinning thread traced after the change ($n)" test "$n" -gt 0 2>/dev/null

# needle record killed (SIGKILL) while it records: the agent detaches on
# its own, with nobody left to hold the blocking threads from outside.
# The program answers throughout (marks for 3 s from the kill, each
# within a second) and can be recorded again.  No filter: the C
# library's functions are relocated entries, whose rewrite stops every
# thread, the main one too.  (test_redis measures the stall this used to
# cause where the blocking thread sleeps in a futex for long.)
rec_start kill
mark
kill -KILL "$rec"
wait "$rec" 2>/dev/null
worst=0
end=$(($(date +%s%N) + 3000000000))
while [ "$(date +%s%N)" -lt "$end" ]; do
	t0=$(date +%s%N)
	mark
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$ms" -gt "$worst" ] && worst=$ms
done
check "killed: every mark for 3 s after the kill answered within a second (worst $worst ms)" test "$worst" -lt 1000
rec_start again -F blk_mark
mark
rec_stop again "killed: recorded again afterwards"
check_eq "killed: the mark made while recorded again" "$(calls "$T/again.data" blk_mark)" 1

echo quit >&9
exec 9>&-
wait "$pid"
check_eq "the program exits 0" "$?" 0
check_eq "its output is exactly its own (no error seen by any thread)" "$(cat "$T/out")" "$expect"$'\n'"errors 0 busy 1"
check_eq "nothing on its stderr" "$(cat "$T/err")" ""
