#!/usr/bin/env bash
# test_record_ctl - reaching a recording with needle ctl: record --ctl
# prints the program's PID; the PID of needle record itself leads to its
# program; the socket outlives a program that closes every descriptor;
# when a process cannot be reached, ctl says why (no such process, not
# recorded, recorded without --ctl, a forked child); root may control
# another user's recording, other users may not.
. "$(dirname "$0")/../lib.sh"
W="$PROGS/waiter"
pid_of() { sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$1" | head -1; }

# --ctl prints the PID to control; ctl also takes needle record's PID.
mkfifo "$T/in"
"$NEEDLE" record --ctl -P work -o "$T/w.data" -- "$W" 100 <"$T/in" >"$T/w.out" 2>"$T/w.err" &
rec=$!
exec 3>"$T/in"
check "waiter ran" wait_for grep -q '^ready' "$T/w.out"
pid=$(pid_of "$T/w.out")
check "record --ctl prints the program's PID" \
	wait_for grep -q "^needle: recording PID $pid; control it with: needle ctl $pid COMMAND" "$T/w.err"
check_eq "ctl with the program's PID" "$("$NEEDLE" ctl "$pid" status)" "tracing 1 functions with function_graph"
got=$("$NEEDLE" ctl "$rec" status 2>"$T/e1")
check_eq "ctl with needle record's PID reaches its program" "$got" "tracing 1 functions with function_graph"
check "and says which PID it controlled" grep -q "PID $rec is needle record; controlling its program, PID $pid" "$T/e1"
exec 3>&-
wait $rec
check_eq "that recording ends well" "$?" 0

# Why a process cannot be reached.
sh -c 'exit 0' &
gone=$!
wait $gone
"$NEEDLE" ctl "$gone" status 2>"$T/e2"
check_eq "no such process: exit 1" "$?" 1
check "no such process: says so" grep -q "no process with PID $gone" "$T/e2"

sleep 600 &
sl=$!
wait_for grep -qx sleep /proc/$sl/comm # exec'd, no longer the forked shell
"$NEEDLE" ctl "$sl" status 2>"$T/e3"
check_eq "a process needle did not start: exit 1" "$?" 1
check "a process needle did not start: says so" grep -q "process $sl (sleep) is not recorded by needle" "$T/e3"
kill $sl
wait $sl 2>/dev/null

mkfifo "$T/in2"
"$NEEDLE" record -o "$T/n.data" -- "$W" 100 <"$T/in2" >"$T/n.out" 2>/dev/null &
rec=$!
exec 3>"$T/in2"
check "waiter without --ctl ran" wait_for grep -q '^ready' "$T/n.out"
pid=$(pid_of "$T/n.out")
"$NEEDLE" ctl "$pid" status 2>"$T/e4"
check_eq "recorded without --ctl: exit 1" "$?" 1
check "recorded without --ctl: says so" grep -q "process $pid (waiter) is recorded without --ctl" "$T/e4"
"$NEEDLE" ctl "$rec" status 2>"$T/e5"
check "needle record without --ctl: says so" grep -q "process $pid (waiter) is recorded without --ctl" "$T/e5"
exec 3>&-
wait $rec

# A program that closes every descriptor from 3 up, as daemons do: the
# control socket is opened again, and ctl keeps working.
mkfifo "$T/in3"
"$NEEDLE" record --ctl -o "$T/c.data" -- "$PROGS/closer" <"$T/in3" >"$T/c.out" 2>"$T/c.err" &
rec=$!
exec 3>"$T/in3"
check "closer closed its descriptors" wait_for grep -q '^closed' "$T/c.out"
pid=$(pid_of "$T/c.out")
for i in 1 2 3; do
	check_eq "after the program closed its descriptors: ctl $i" "$("$NEEDLE" ctl "$pid" status 2>&1)" \
		"tracing 2 functions with function_graph"
done
echo x >&3
exec 3>&-
wait $rec
check_eq "closer: recording ends well" "$?" 0
check_eq "closer: its call is recorded" "$(calls "$T/c.data" a)" 1

# A forked child is not the process the socket belongs to.
mkfifo "$T/in4"
"$NEEDLE" record --ctl -o "$T/d.data" -- "$PROGS/daemon" 10 hold <"$T/in4" >"$T/d.out" 2>"$T/d.err" &
rec=$!
exec 3>"$T/in4"
check "daemon ran" wait_for grep -q '^child done' "$T/d.out"
child=$(pid_of "$T/d.out")
parent=$(sed -n 's/^needle: recording PID \([0-9]*\);.*/\1/p' "$T/d.err")
"$NEEDLE" ctl "$child" status 2>"$T/e6"
check_eq "forked child: exit 1" "$?" 1
check "forked child: says whose child it is" \
	grep -q "process $child (daemon) was forked from PID $parent, the process needle record started: only that one has a control socket" "$T/e6"
exec 3>&-
wait $rec

# Root controls another user's recording; another unprivileged user may not.
if [ "$(id -u)" = 0 ]; then
	pub=$(mktemp -d /tmp/needle-ctl.XXXXXX)
	cp "$NEEDLE" "$BUILD/libneedle.so" "$W" "$pub/"
	mkdir "$pub/w"
	chmod 755 "$pub"
	chmod 777 "$pub/w"
	mkfifo -m 666 "$pub/w/in"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$pub/needle" record --ctl -P work -o "$pub/w/u.data" \
		-- "$pub/waiter" 100 <"$pub/w/in" >"$pub/w/out" 2>"$pub/w/err" &
	rec=$!
	exec 3>"$pub/w/in"
	check "nobody's waiter ran" wait_for grep -q '^ready' "$pub/w/out"
	pid=$(pid_of "$pub/w/out")
	check_eq "root controls a recording of uid 65534" "$("$NEEDLE" ctl "$pid" status 2>&1)" \
		"tracing 1 functions with function_graph"
	setpriv --reuid=65533 --regid=65533 --clear-groups "$pub/needle" ctl "$pid" status >/dev/null 2>"$T/e7"
	check_eq "uid 65533 is refused: exit 1" "$?" 1
	check "uid 65533 is refused: permission denied" grep -q "permission denied" "$T/e7"
	exec 3>&-
	wait $rec
	check_eq "nobody's recording ends well" "$?" 0
	rm -rf "$pub"
fi
