#!/usr/bin/env bash
# test_recv - needle record --host sends the trace to needle recv, which
# stores it under the sender's file name: the same calls as a trace
# written here, the program's output and status untouched, nothing
# written on the sender's side, --run-cmd run on each trace before its
# sender returns, two senders at once, a sender killed (kept, said to be
# cut short), a receiver killed (the sender says the trace was not
# stored, the program runs on), and bad input refused before the program
# runs.
. "$(dirname "$0")/../lib.sh"

R="$T/recvd"
# start_recv NAME [OPTIONS]: a receiver into $R, its port in $port (run
# by $wrap, when set: a command that runs its arguments).
wrap=
start_recv() {
	local name=$1
	shift
	$wrap "$NEEDLE" recv -d "$R" --port 0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
	recv_pid=$!
	port=
	wait_for grep -q 'listening on port [0-9]' "$T/$name.err" &&
		port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$T/$name.err")
}
# counts FILE: every function's calls, as report counts them.
counts() { "$NEEDLE" report --csv -i "$1" | awk -F, 'NR > 1 { print $1, $2 }' | sort; }

# (1) A trace sent and stored, with --run-cmd.
start_recv r1 --run-cmd 'needle_out="../cmd.$NEEDLE_RECV_FILE"; sleep 0.3; '"'$NEEDLE'"' replay -i "$NEEDLE_RECV_FILE" >"$needle_out"'
check "recv listens and says on which port" test -n "$port"
"$PROGS/graph_prog" >"$T/plain.out"
plain_rc=$?
mkdir "$T/here" && cd "$T/here" || exit 1
"$NEEDLE" record --host localhost --port "$port" -o a.data -- "$PROGS/graph_prog" >"$T/a.out" 2>"$T/a.err"
check_eq "sender: exit status is the program's" "$?" "$plain_rc"
check "sender: the program's output is byte-identical" cmp -s "$T/plain.out" "$T/a.out"
check "sender: says where the trace went" grep -q "into a.data at localhost:$port" "$T/a.err"
check_eq "sender: one line on stderr" "$(grep -c . "$T/a.err")" 1
check_eq "sender: nothing written on its side" "$(ls -A "$T/here")" ""
check "receiver: the trace is stored under the sender's name" test -s "$R/a.data"
check_eq "receiver: it is whole, ending with its END section" "$(trace_sections "$R/a.data" | awk '{print $NF}')" 7
check "receiver: says it stored it" grep -q "stored $R/a.data from .* bytes)$" "$T/r1.err"
check "--run-cmd ran on it before the sender returned" test -s "$T/cmd.a.data"
"$NEEDLE" replay -i "$R/a.data" >"$T/a.replay"
check "--run-cmd's replay is the stored trace's" cmp -s "$T/a.replay" "$T/cmd.a.data"
"$NEEDLE" record -o "$T/local.data" -- "$PROGS/graph_prog" >/dev/null 2>&1
check_eq "the calls are those of a trace written here" "$(counts "$R/a.data")" "$(counts "$T/local.data")"
check "the calls are there" grep -q "^leaf [1-9]" <(counts "$R/a.data")
kill "$recv_pid"
wait "$recv_pid"
check_eq "recv ends with status 0 when interrupted" "$?" 0
check_eq "receiver: no partial file left" "$(ls -A "$R" | grep -c '^\.')" 0

# (2) Two senders at once; the default name; a second trace replaces the
# first of the same name only once it is whole.
start_recv r2
"$NEEDLE" record --host 127.0.0.1 --port "$port" -o one.data -- "$PROGS/threads" 4 20000 >"$T/t1.out" 2>"$T/t1.err" &
s1=$!
"$NEEDLE" record --host localhost --port "$port" -- "$PROGS/threads" 2 30000 >"$T/t2.out" 2>"$T/t2.err"
check_eq "second sender: exit 0" "$?" 0
wait "$s1"
check_eq "first sender: exit 0" "$?" 0
check_eq "first sender's trace: every call" "$(calls "$R/one.data" step)" 160000
check_eq "second sender's trace, under needle.data: every call" "$(calls "$R/needle.data" step)" 120000
check_eq "receiver: both said stored" "$(grep -c 'stored .* bytes)$' "$T/r2.err")" 2
# Run as uftrace (a link so named), with no -o: under uftrace's name,
# uftrace.data, which uftrace replay -d DIR/uftrace.data reads.
ln -sf "$NEEDLE" "$T/uftrace"
"$T/uftrace" record --host localhost --port "$port" "$PROGS/threads" 2 30000 >/dev/null 2>"$T/t3.err"
check_eq "as uftrace, no -o: stored as uftrace.data, every call" "$(calls "$R/uftrace.data" step)" 120000
mkdir -p "$T/u" && cp "$R/uftrace.data" "$T/u/"
check_eq "as uftrace, a view with no -i where only uftrace.data is: reads it (as --run-cmd 'uftrace replay' does)" \
	"$(cd "$T/u" && "$T/uftrace" report --csv | awk -F, '$NF == "step" || $1 == "step" { print "found" }' | head -1)" "found"
check "as needle: there is no needle.data there" eval '! (cd "$T/u" && "$NEEDLE" report --csv >/dev/null 2>&1)'
# IPv6, where the machine has a loopback for it (some containers have
# none): the address said in brackets.
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
	"$NEEDLE" record --host ::1 --port "$port" -o six.data -- "$PROGS/graph_prog" >/dev/null 2>"$T/six.err"
	check "IPv6: stored" test -s "$R/six.data"
	check "IPv6: the address said in brackets" grep -q "into six.data at \[::1\]:$port" "$T/six.err"
fi

# (3) A sender killed while it streams: what arrived is kept under its
# name, said to be cut short, and the views read it.
mkfifo "$T/in"
"$NEEDLE" record --host localhost --port "$port" -o cut.data -- "$PROGS/waiter" 50000 <"$T/in" >"$T/k.out" 2>"$T/k.err" &
rec=$!
exec 3>"$T/in"
check "killed sender: the program ran" wait_for grep -q '^ready' "$T/k.out"
has_chunk() { trace_sections "$(ls -d "$R"/.recv-* | head -1)" 2>/dev/null | grep -qw 6; }
check "killed sender: chunks reached the receiver while the program ran" wait_for has_chunk
exec 4>&2 2>/dev/null
kill -KILL "$rec"
wait "$rec"
exec 2>&4 4>&-
exec 3>&-
check "killed sender: the receiver says it was cut short" wait_for grep -q "stored $R/cut.data .*CUT SHORT" "$T/r2.err"
check "killed sender: kept under its name, without END" test "$(trace_sections "$R/cut.data" | awk '{print $NF}')" != 7
got=$(calls "$R/cut.data" work 2>"$T/cut.warn")
check "killed sender: the views read the calls that arrived ($got)" test "$got" -gt 0
check "killed sender: and say the recording did not finish" grep -q "incomplete (the recording did not finish)" "$T/cut.warn"
check_eq "killed sender: no partial file left" "$(ls -A "$R" | grep -c '^\.')" 0

# (4) Not a needle trace: refused, nothing kept, and the receiver serves
# the next sender.
python3 - "$port" <<'PY' >"$T/junk.out"
import socket, struct, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
s.sendall(b'NEEDLE-SEND\n' + struct.pack('<HH', 1, 9) + b'junk.data')
print(s.recv(100).decode().strip())
s.sendall(b'GET / HTTP/1.0\r\n\r\n' * 10)
s.shutdown(socket.SHUT_WR)
print(s.recv(100).decode().strip())
PY
check_eq "junk: ready, then refused" "$(tr '\n' ' ' <"$T/junk.out")" "ready refused: not a needle trace "
check "junk: nothing kept" test ! -e "$R/junk.data"
python3 - "$port" <<'PY' >"$T/name.out"
import socket, struct, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
s.sendall(b'NEEDLE-SEND\n' + struct.pack('<HH', 1, 9) + b'../x.data')
print(s.recv(100).decode().strip())
PY
check "a name with a path: refused" grep -q '^refused: the name is not a plain file name' "$T/name.out"
check "a name with a path: nothing written outside" test ! -e "$T/x.data"
"$NEEDLE" record --host localhost --port "$port" -o after.data -- "$PROGS/graph_prog" >/dev/null 2>&1
check_eq "the next sender is served" "$?" "$plain_rc"
check "the next sender's trace is stored" test -s "$R/after.data"

# (4b) What the receiver keeps is not replaced by what is not a trace:
# a recording that never began (a static program, not traced) leaves
# the trace of that name; a file of that name that is not a trace, or a
# name another sender is sending, is refused before the program runs.
size=$(stat -c %s "$R/after.data")
"$NEEDLE" record --host localhost --port "$port" -o after.data -- /sbin/ldconfig -p >/dev/null 2>"$T/static.err"
check "a recording that never began: the stored trace of its name stays" test "$(stat -c %s "$R/after.data")" = "$size"
check "a recording that never began: the receiver says nothing came" wait_for grep -q "nothing came from .* for after.data" "$T/r2.err"
echo 'all: ; true' >"$R/Makefile"
# refused_name DESCRIPTION PATTERN NAME: a sender of NAME is refused
# before its program runs, in one line.
refused_name() {
	"$NEEDLE" record --host localhost --port "$port" -o "$3" -- "$PROGS/graph_prog" >"$T/rn.out" 2>"$T/rn.err"
	local rc=$?
	check "$1: refused (exit $rc), one line" test "$rc" -ne 0 -a "$(wc -l <"$T/rn.err")" -eq 1
	check "$1: says so" grep -q "$2" "$T/rn.err"
	check "$1: the program did not run" test ! -s "$T/rn.out"
}
refused_name "a file there that is not a trace" "Makefile: it exists here and is not a needle trace" Makefile
check_eq "a file there that is not a trace: left as it was" "$(cat "$R/Makefile")" 'all: ; true'
mkfifo "$T/in3"
"$NEEDLE" record --host localhost --port "$port" -o busy.data -- "$PROGS/waiter" 100 <"$T/in3" >"$T/b.out" 2>"$T/b.err" &
rec=$!
exec 3>"$T/in3"
check "a name being sent: the first sender's program runs" wait_for grep -q '^ready' "$T/b.out"
refused_name "a name being sent" "busy.data: another sender is sending it" busy.data
exec 3>&-
wait "$rec"
check_eq "a name being sent: the first sender's trace is whole" "$(calls "$R/busy.data" work)" 200
kill "$recv_pid"
wait "$recv_pid"

# (4c) A slow --run-cmd: its sender waits, but a signal ends the wait
# (non-zero, said); a receiver started with SIGCHLD ignored still sees
# its --run-cmd end.
ignoring_sigchld() {
	# exec: started with & the function runs in a subshell, whose pid is
	# $!; the receiver must take that pid, or kill leaves it running.
	exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])' "$@"
}
wrap=ignoring_sigchld
start_recv r4 --run-cmd 'sleep 30'
"$NEEDLE" record --host localhost --port "$port" -o slow.data -- "$PROGS/graph_prog" >/dev/null 2>"$T/slow.err" &
rec=$!
check "slow --run-cmd: the trace is stored" wait_for grep -q "stored $R/slow.data" "$T/r4.err"
sleep 0.3
check "slow --run-cmd: its sender waits" kill -0 "$rec"
kill -TERM "$rec"
wait "$rec"
check "slow --run-cmd: a signal ends the sender's wait, non-zero" test $? -ne 0
check "slow --run-cmd: and it says so" grep -q "slow.data at localhost:$port.*interrupted" "$T/slow.err"
kill "$recv_pid"
wait "$recv_pid"
start_recv r6 --run-cmd true
wrap=
timeout 60 "$NEEDLE" record --host localhost --port "$port" -o ign.data -- "$PROGS/graph_prog" >/dev/null 2>&1
check_eq "SIGCHLD ignored by recv's parent: the sender is answered after --run-cmd" "$?" "$plain_rc"
kill "$recv_pid"
wait "$recv_pid"

# (5) The receiver killed while a sender streams: the sender says the
# trace was not stored, exits non-zero, and the program runs to its end.
start_recv r5
mkfifo "$T/in2"
"$NEEDLE" record --host localhost --port "$port" -o gone.data -- "$PROGS/waiter" 20000 <"$T/in2" >"$T/g.out" 2>"$T/g.err" &
rec=$!
exec 3>"$T/in2"
check "receiver killed: the program ran" wait_for grep -q '^ready' "$T/g.out"
exec 4>&2 2>/dev/null # the shell's "Killed" notice
kill -KILL "$recv_pid"
wait "$recv_pid"
exec 2>&4 4>&-
exec 3>&-
wait "$rec"
rc=$?
check "receiver killed: the sender exits non-zero ($rc)" test "$rc" -ne 0
check "receiver killed: it says the trace was not stored" grep -q "gone.data at localhost:$port" "$T/g.err"
check "receiver killed: the program ran to its end" grep -q "^sum " "$T/g.out"

# (6) Bad input, refused before the program runs.
P="$PROGS/graph_prog"
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
bad_input "no receiver" "cannot connect to 127.0.0.1 port $dead" --host 127.0.0.1 --port "$dead"
bad_input "unknown host" "cannot connect to no-such-host.invalid" --host no-such-host.invalid
bad_input "--port without --host" "give the host too" --port 8090
bad_input "--port out of range" "needs a TCP port number" --host localhost --port 70000
bad_input "--host with --snapshot" "snapshot writes files" --host localhost --snapshot
"$NEEDLE" record --host localhost -o "$T/.hidden" -- "$P" >"$T/bout" 2>"$T/berr"
check "a hidden file name: refused" test $? -ne 0 -a ! -s "$T/bout"
check "a hidden file name: says so" grep -q "not one the receiver can store" "$T/berr"
"$NEEDLE" live --host localhost -- "$P" >"$T/bout" 2>"$T/berr"
check "live --host: refused" test $? -ne 0 -a ! -s "$T/bout"
python3 - >"$T/http.port" <<'PY' &
import socket
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept(); c.recv(100); c.sendall(b'HTTP/1.1 400 Bad Request\r\n\r\n'); c.close()
PY
srv=$!
wait_for test -s "$T/http.port"
bad_input "not needle recv" "not needle recv" --host 127.0.0.1 --port "$(cat "$T/http.port")"
wait "$srv"

# (7) recv's own bad input.
start_recv r7
"$NEEDLE" recv -d "$R" --port "$port" >"$T/busy.out" 2>"$T/busy.err"
check_eq "recv on a port in use: exit 1" "$?" 1
check "recv on a port in use: one line says so" test "$(grep -c . "$T/busy.err")" -eq 1 -a -n "$(grep 'cannot listen on port' "$T/busy.err")"
kill "$recv_pid"
wait "$recv_pid"
: >"$T/afile"
"$NEEDLE" recv -d "$T/afile" --port 0 >"$T/file.out" 2>"$T/file.err"
check_eq "recv into a file: exit 1" "$?" 1
check "recv into a file: says so" grep -q "cannot store traces in $T/afile" "$T/file.err"
