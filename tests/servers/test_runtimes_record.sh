#!/usr/bin/env bash
# test_runtimes_record - needle record -- PROG on runtimes that walk,
# copy or switch their own stacks and code: node (V8) and java (HotSpot).
# Each run ends with the program's own status and stdout/stderr byte for
# byte as untraced (needle's own "needle: " lines aside), and the trace
# holds traced calls.  V8's embedded builtins are refused, all of them,
# under their own reason; calls from generated code are recorded
# entry-only and counted.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
HERE=$(cd "$(dirname "$0")" && pwd)

# run NAME CMD...: untraced, then traced with needle record's defaults
# plus $REC_OPTS; compares status, stdout and stderr.
run() {
	local name=$1
	shift
	(cd "$T" && "$@") >"$T/$name.u.out" 2>"$T/$name.u.err"
	local ustatus=$?
	# shellcheck disable=SC2086
	(cd "$T" && "$NEEDLE" record -o "$T/$name.data" ${REC_OPTS:-} -- "$@") >"$T/$name.t.out" 2>"$T/$name.t.err"
	local tstatus=$?
	RUN_STATUS=$tstatus
	check_eq "$name: exit status as untraced ($ustatus)" "$tstatus" "$ustatus"
	check "$name: stdout byte for byte as untraced" cmp -s "$T/$name.u.out" "$T/$name.t.out"
	grep -v '^needle: ' "$T/$name.t.err" >"$T/$name.t.err2"
	check "$name: stderr byte for byte as untraced ($(grep '^needle: ' "$T/$name.t.err" | tail -1))" \
		cmp -s "$T/$name.u.err" "$T/$name.t.err2"
	check "$name: no needle fatal error" sh -c "! grep -q 'fatal' '$T/$name.t.err'"
}

# traced_calls FILE: the calls and entries in the trace, from report.
traced_calls() {
	"$NEEDLE" report --csv -i "$1" 2>/dev/null | awk -F, 'NR > 1 { n += $2 } END { print n + 0 }'
}

if ! command -v node >/dev/null; then
	fail "node is not installed (scripts/setup.sh installs nodejs)"
else
	JS='let s = 0; for (let i = 0; i < 200000; i++) s += String(i).length;
	    console.log("sum", s); console.error("to stderr"); process.exitCode = 3;'
	for k in 1 2 3; do
		run "node$k" node -e "$JS"
	done
	check_eq "node: traced, the program's own status, 3" "$RUN_STATUS" 3
	# -F with C++ patterns that name every function of node's: each is
	# sent as the mangled names it matches (megabytes), found by one
	# lookup a site; '*' matches every name as spelled, and is sent alone.
	for pat in 'node::*' 'v8::*' '*'; do
		(cd "$T" && "$NEEDLE" record -o "$T/nodef.data" -F "$pat" -- node -e "$JS") >"$T/nodef.out" 2>"$T/nodef.err"
		st=$?
		check_eq "node -F '$pat': the program's own status, 3 ($(grep '^needle: ' "$T/nodef.err" | tail -1))" "$st" 3
		check "node -F '$pat': stdout as untraced" cmp -s "$T/node1.u.out" "$T/nodef.out"
		n=$(traced_calls "$T/nodef.data")
		check "node -F '$pat': the trace holds traced calls ($n)" test "$n" -gt 100
	done
	n=$(traced_calls "$T/node1.data")
	check "node: the trace holds traced calls ($n)" test "$n" -gt 1000
	"$NEEDLE" info -i "$T/node1.data" >"$T/node.info"
	# Every symbol mksnapshot names Builtins_* lies in the blob: all are refused.
	# (A node without symbols, Debian's stripped libnode, has no names to
	# find them by: said, and the other checks still tell.)
	want=$(nm "$(readlink -f "$(command -v node)")" 2>/dev/null | grep -c ' Builtins_')
	got=$(grep "^  $(readlink -f "$(command -v node)"):" "$T/node.info" | grep -o 'V8 embedded builtin [0-9]*' | grep -o '[0-9]*$')
	if [ "$want" -gt 0 ]; then
		check_eq "node: every V8 embedded builtin refused, as many as node's Builtins_ symbols" "${got:-none}" "$want"
	else
		echo "note: $(command -v node) has no Builtins_ symbols: its V8 builtins cannot be told apart"
	fi
	check "node: info counts functions recorded entry-only (called from generated code)" \
		grep -q '^entry only:    [1-9][0-9]* functions' "$T/node.info"
	check "node: replay reads the trace" sh -c "'$NEEDLE' replay -i '$T/node1.data' >/dev/null"
	# Entries only: no return hooked, but relocated entries inside
	# V8's copied builtins would jump nowhere.
	for k in 1 2 3; do
		REC_OPTS="-t function" run "node-function$k" node -e "$JS"
	done
	n=$(traced_calls "$T/node-function1.data")
	check "node -t function: the trace holds traced entries ($n)" test "$n" -gt 1000
fi

if ! command -v javac >/dev/null || ! command -v java >/dev/null; then
	fail "java or javac is not installed (scripts/setup.sh installs openjdk-17-jdk-headless)"
else
	mkdir -p "$BUILD/tests/servers/classes"
	javac -d "$BUILD/tests/servers/classes" "$HERE/Hello.java"
	check "javac compiled Hello.java" test -f "$BUILD/tests/servers/classes/Hello.class"
	for k in 1 2; do
		run "java-version$k" java -version
	done
	n=$(traced_calls "$T/java-version1.data")
	check "java -version: the trace holds traced calls ($n)" test "$n" -gt 100
	for k in 1 2 3; do
		run "java-hello$k" java -cp "$BUILD/tests/servers/classes" Hello
	done
	check_eq "java Hello: traced, the program's own status, 7" "$RUN_STATUS" 7
	n=$(traced_calls "$T/java-hello1.data")
	check "java Hello: the trace holds traced calls ($n)" test "$n" -gt 100
	check "java: no hs_err file (no JVM crash)" sh -c "! ls '$T'/hs_err_pid*.log >/dev/null 2>&1"
fi
