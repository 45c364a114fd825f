#!/usr/bin/env bash
# test_ctl - needle ctl changes what a running recording traces: filters
# and tracer, each applied as one patch batch, at points the test chooses
# (the program waits on its stdin between phases).  Malformed commands and
# other users are refused, and the program goes on unharmed.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/phases"

mkfifo "$T/in"
"$NEEDLE" record --ctl -P a -o "$T/ph.data" -- "$P" <"$T/in" >"$T/out" 2>"$T/err" &
rec=$!
exec 3>"$T/in"
wait_for() { # wait_for PATTERN: until the program has printed it
	for _ in $(seq 1 600); do
		grep -q "$1" "$T/out" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
check "phase 1 ran" wait_for '^phase1'
pid=$(sed -n 's/^phase1 pid=\([0-9]*\).*/\1/p' "$T/out")

check_eq "status" "$("$NEEDLE" ctl "$pid" status)" "tracing 1 functions with function_graph"
"$NEEDLE" ctl "$pid" bogus 2>"$T/e1"
check_eq "unknown command: exit 1" "$?" 1
check "unknown command: says so" grep -q "unknown command 'bogus'" "$T/e1"
"$NEEDLE" ctl "$pid" tracer fast 2>"$T/e2"
check_eq "bad tracer: exit 1" "$?" 1
"$NEEDLE" ctl "$pid" depth -3 2>"$T/e3"
check_eq "bad depth: exit 1" "$?" 1
"$NEEDLE" ctl "$pid" filter 'nothing_like_this*' 2>"$T/e4"
check_eq "filter matching nothing: exit 1" "$?" 1
check "filter matching nothing: says so and changes nothing" grep -q "match no function" "$T/e4"
# A raw malformed request: no newline, then the connection closes.
python3 - "$pid" <<'PY' >"$T/raw" 2>&1
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\0needle-" + sys.argv[1])
s.sendall(b"filter a b c")
s.shutdown(socket.SHUT_WR)
print(s.recv(4096).decode().strip())
PY
check "request without a newline: refused" grep -q '^error' "$T/raw"
# Configuration requests (common/ctl_protocol.h) that must be refused,
# each leaving the recording as it was: a field a running recording
# cannot change (ctl), bytes that are not a record_config, and a body
# shorter than its line says.
python3 - "$pid" <<'PY' >"$T/rawcfg" 2>&1
import socket, struct, sys
def ask(data, cut=False):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0needle-" + sys.argv[1])
    s.sendall(data)
    if cut:
        s.shutdown(socket.SHUT_WR)
    print(s.recv(4096).decode().strip())
def config(fields):
    body = b"".join(struct.pack("<HHI", tag, 0, len(v)) + v for tag, v in fields)
    return struct.pack("<IHHII", 0x4746434e, 1, 16, len(body), 0) + body
ctl = config([(3, struct.pack("<q", 1))])
ask(b"config %d\n" % len(ctl) + ctl)
bad = b"x" * 24
ask(b"config %d\n" % len(bad) + bad)
ask(b"config 100\n" + config([]), cut=True)
depth = config([(2, struct.pack("<q", 7))])
ask(b"config %d\n" % len(depth) + depth)
PY
check_eq "config request changing ctl: refused" "$(sed -n 1p "$T/rawcfg")" \
	"error a running recording changes only its filter, notrace, tracer and depth"
check_eq "config request of bytes that are no config: refused" "$(sed -n 2p "$T/rawcfg")" "error malformed configuration"
check_eq "config request cut short: refused" "$(sed -n 3p "$T/rawcfg")" "error configuration cut short"
check_eq "config request of depth 7: applied" "$(sed -n 4p "$T/rawcfg")" "ok tracing 1 functions with function_graph"
check_eq "depth 0 again" "$("$NEEDLE" ctl "$pid" depth 0)" "tracing 1 functions with function_graph"

# Another user is refused (the socket serves only the process owner).
other="$(mktemp -d /tmp/needle-ctl.XXXXXX)"
cp "$NEEDLE" "$other/needle"
chmod 755 "$other" "$other/needle"
setpriv --reuid=65534 --regid=65534 --clear-groups "$other/needle" ctl "$pid" filter b >"$T/o" 2>"$T/e5"
check_eq "another uid: exit 1" "$?" 1
check "another uid: permission denied" grep -q "permission denied" "$T/e5"
rm -rf "$other"

check_eq "filter b" "$("$NEEDLE" ctl "$pid" filter b)" "tracing 1 functions with function_graph"
echo go >&3
check "phase 2 ran" wait_for '^phase2'
check_eq "tracer function" "$("$NEEDLE" ctl "$pid" tracer function)" "tracing 1 functions with function"
echo go >&3
exec 3>&-
wait $rec
check_eq "needle record succeeded" "$?" 0

check_eq "a() traced in phase 1 only" "$(calls "$T/ph.data" a)" 100
check_eq "b() traced in phases 2 and 3" "$(calls "$T/ph.data" b)" 200
# The function tracer in phase 3: b's entries, with a time and no exit.
"$NEEDLE" replay -i "$T/ph.data" >"$T/ph.replay"
check_eq "phase 3: 100 entries of b() without exits" "$(grep -cE '^ *@[0-9.]+ \[ *[0-9]+\] \| b\(\);$' "$T/ph.replay")" 100
check_eq "phase 2: 100 calls of b() with durations" "$(grep -cE '^ *[0-9.]+ [mu]?s \[ *[0-9]+\] \| +b\(\);$' "$T/ph.replay")" 100
check_eq "nothing left running" "$(grep -c 'with these calls open' "$T/ph.replay")" 0
plain=$(printf 'x\nx\n' | "$P")
check_eq "the program's output is unchanged" "$(sed 's/pid=[0-9]*//' "$T/out")" "$(echo "$plain" | sed 's/pid=[0-9]*//')"
