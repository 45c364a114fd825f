#!/usr/bin/env bash
# test_runtimes_attach - needle record -p on a HotSpot and a node HTTP
# server under a closed-loop load on loopback that checks every reply:
# five attaches with the defaults, one --snapshot --trigger, and one --ctl
# session whose filter `needle ctl PID filter '*'` widens from -F write.
# No request may fail, the server must be alive and answering after, the
# JVM must write no hs_err file, and each trace must hold traced calls.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
HERE=$(cd "$(dirname "$0")" && pwd)
LOAD="$HERE/http_load.py"

answers() { # answers PORT: 100 requests, every reply right
	python3 "$LOAD" "$1" 10 100 2 >/dev/null
}

traced_calls() {
	"$NEEDLE" report --csv -i "$1" 2>/dev/null | awk -F, 'NR > 1 { n += $2 } END { print n + 0 }'
}

# server_test NAME CMD...: CMD serves on 127.0.0.1 and writes its port to
# the file named by its last argument, $T/NAME.port.
server_test() {
	local name=$1
	shift
	rm -f "$T/$name.port" "$T/$name.stop"
	(cd "$T" && exec "$@" "$T/$name.port") >"$T/$name.srv.out" 2>"$T/$name.srv.err" &
	local spid=$!
	if ! wait_for test -s "$T/$name.port"; then
		fail "$name: the server started"
		kill "$spid" 2>/dev/null
		return
	fi
	local port
	port=$(cat "$T/$name.port")
	check "$name: answers before any attach" answers "$port"
	# The load: bounded in time and count, stopped once the attaches end.
	python3 "$LOAD" "$port" 150 200000 4 "$T/$name.stop" >"$T/$name.load" 2>&1 &
	local lpid=$!
	for k in 1 2 3 4 5; do
		"$NEEDLE" record -p "$spid" -o "$T/$name.$k.data" --duration=1 2>"$T/$name.$k.rec"
		st=$?
		check_eq "$name: attach $k with the defaults ends 0 ($(tail -1 "$T/$name.$k.rec"))" "$st" 0
		check "$name: attach $k detached, the process runs on" grep -q "detached from process $spid; it runs on" "$T/$name.$k.rec"
		kill -0 "$spid" 2>/dev/null || break
	done
	n=$(traced_calls "$T/$name.1.data")
	check "$name: the first attach's trace holds traced calls ($n)" test "$n" -gt 100
	"$NEEDLE" info -i "$T/$name.1.data" >"$T/$name.info"
	check "$name: info counts the functions recorded entry-only (called from generated code)" \
		grep -q '^entry only:    [1-9][0-9]* functions' "$T/$name.info"

	"$NEEDLE" record -p "$spid" -o "$T/$name.s.data" --snapshot --trigger 'write>1us' --duration=1.5 \
		2>"$T/$name.s.rec"
	st=$?
	check_eq "$name: --snapshot --trigger attach ends 0 ($(tail -1 "$T/$name.s.rec"))" "$st" 0
	check "$name: the trigger took a snapshot" test -s "$T/$name.s.data.1"

	"$NEEDLE" record -p "$spid" -o "$T/$name.c.data" -F write --ctl 2>"$T/$name.c.rec" &
	local npid=$!
	check "$name: --ctl -F write attach began" wait_for grep -q "recording process $spid" "$T/$name.c.rec"
	"$NEEDLE" ctl "$spid" filter '*' >"$T/$name.ctl" 2>&1
	check "$name: needle ctl filter '*' widens the session ($(head -1 "$T/$name.ctl"))" \
		grep -q '^tracing [0-9][0-9][0-9][0-9]* functions' "$T/$name.ctl"
	sleep 1
	kill -INT "$npid"
	wait "$npid"
	st=$?
	check_eq "$name: the --ctl session ends 0 ($(tail -1 "$T/$name.c.rec"))" "$st" 0
	n=$(traced_calls "$T/$name.c.data")
	check "$name: the widened session's trace holds traced calls ($n)" test "$n" -gt 100

	# A C++ pattern that names every V8 function (tens of thousands of
	# mangled names, sent whole to the agent, found by one lookup a site).
	if [ "$name" = node ]; then
		"$NEEDLE" record -p "$spid" -o "$T/$name.v8.data" -F 'v8::*' --duration=1 2>"$T/$name.v8.rec"
		st=$?
		check_eq "node: -p -F 'v8::*' ends 0 ($(tail -1 "$T/$name.v8.rec"))" "$st" 0
		check "node: -p -F 'v8::*': its trace holds v8:: calls" \
			sh -c "'$NEEDLE' report -i '$T/$name.v8.data' | grep -q ' v8::'"
	fi

	touch "$T/$name.stop"
	wait "$lpid"
	local lstatus=$?
	check_eq "$name: no request failed under the attaches ($(head -3 "$T/$name.load" | tr '\n' ' '))" "$lstatus" 0
	check "$name: the load made requests" grep -q '^requests [1-9][0-9]* failed 0$' "$T/$name.load"
	check "$name: the server is alive after" kill -0 "$spid"
	check "$name: and answers after" answers "$port"
	check "$name: no hs_err file (no JVM crash)" sh -c "! ls '$T'/hs_err_pid*.log >/dev/null 2>&1"
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null || true
}

if ! command -v javac >/dev/null || ! command -v java >/dev/null; then
	fail "java or javac is not installed (scripts/setup.sh installs openjdk-17-jdk-headless)"
else
	mkdir -p "$BUILD/tests/servers/classes"
	javac -d "$BUILD/tests/servers/classes" "$HERE/HttpEcho.java"
	check "javac compiled HttpEcho.java" test -f "$BUILD/tests/servers/classes/HttpEcho.class"
	# TCP_NODELAY: replies are not held back by Nagle against the
	# client's delayed ACK, so the load is ten times as dense.
	server_test jvm java -Dsun.net.httpserver.nodelay=true -cp "$BUILD/tests/servers/classes" HttpEcho
fi
if ! command -v node >/dev/null; then
	fail "node is not installed (scripts/setup.sh installs nodejs)"
else
	server_test node node "$HERE/http_echo.js"
fi
