# lib.sh - helpers for the command-line tests.  Each check prints one
# PASS:/FAIL: line, which tests/run.sh counts.
set -u
BUILD=${NEEDLE_BUILD:?NEEDLE_BUILD must point at the build directory}
NEEDLE="$BUILD/needle"
PROGS="$BUILD/tests/progs"
T=$(mktemp -d)
# The command-line tests check programs built for needle call by call, so
# they record compiled entries only, unless a test says otherwise: the
# relocation and attach tests unset this and run needle's default
# (--sites=all), and test_unwind runs every case both ways.
export NEEDLE_SITES=compiled
trap 'rm -rf "$T"' EXIT

# tracing_ready: the kernel's tracepoints reachable for bpftrace (tracefs
# is not mounted on every machine at boot) and room for its maps; the
# tests that count from outside with bpftrace call it first.
tracing_ready() {
	[ -e /sys/kernel/tracing/events/raw_syscalls ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	ulimit -l 65536 2>/dev/null || ulimit -l unlimited 2>/dev/null
	[ -e /sys/kernel/tracing/events/raw_syscalls ]
}

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }

# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}

# check_eq DESCRIPTION GOT EXPECTED
check_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1"
		echo "      got '$2', expected '$3'"
	fi
}

# calls FILE FUNCTION-REGEX: the call count of the one function whose name
# matches (anchored), from `needle report --csv`.
calls() {
	"$NEEDLE" report --csv -i "$1" | awk -F, -v re="^($2)\$" 'NR > 1 && $1 ~ re { n += $2; found = 1 }
		END { print found ? n : "missing" }'
}

# trace_tids FILE: the thread ids of a trace (needle info's table), in
# increasing order, each once.
trace_tids() {
	"$NEEDLE" info -i "$1" | awk '$1 == "TID" && $2 == "SERIAL" { t = 1; next } t && $1 ~ /^[0-9]+$/ { print $1 }' |
		sort -un
}

# replay_threads FILE [REPLAY OPTIONS...]: each thread's graph on its own
# (replay --tid), one thread after the other in tid order.  In the graph
# of all threads, a call that another thread's event interleaves with is
# an opening and an end, as uftrace shows it, where alone it is one line:
# tests that count one-line calls of concurrent threads read this.
replay_threads() {
	local data=$1 tid
	shift
	for tid in $(trace_tids "$data"); do
		"$NEEDLE" replay "$@" --tid "$tid" -i "$data" || return
	done
}

# trace_sections FILE: the section types in file order (3 module, 4 sites,
# 1 clock, 6 chunk, 2 process, 5 thread, 7 end), a run of one type shown
# once, then "cut" if the file ends inside a section, "crc" at a damaged
# one.
trace_sections() {
	python3 - "$1" <<'PY'
import struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
if d[:8] != b'NEEDLE\x00\x01':
    print('bad-magic'); sys.exit()
off, out = 64, []
while off < len(d):
    if off + 16 > len(d):
        out.append('cut'); break
    t, crc, n = struct.unpack_from('<IIQ', d, off)
    if off + 16 + n > len(d):
        out.append('cut'); break
    if zlib.crc32(d[off + 16:off + 16 + n]) != crc:
        out.append('crc'); break
    if not (out and out[-1] == str(t)):
        out.append(str(t))
    off += 16 + n
print(' '.join(out))
PY
}
wait_for() { # wait_for COMMAND...: until it succeeds (30 s at most)
	for _ in $(seq 1 600); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# ctl_pid PATTERN: the PID of the recorded program whose command line
# matches PATTERN, once its control socket answers (30 s at most).
ctl_pid() {
	local pid
	for _ in $(seq 1 600); do
		pid=$(pgrep -n -f "$1" | head -1)
		if [ -n "$pid" ] && "$NEEDLE" ctl "$pid" status >/dev/null 2>&1; then
			echo "$pid"
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# bad_input DESCRIPTION PATTERN ARGS...: needle record ARGS -- "$P" (the
# test's program) is refused before the program runs: a non-zero exit,
# at most two lines that hold PATTERN, none of the program's output.
bad_input() {
	local desc=$1 pat=$2
	shift 2
	"$NEEDLE" record "$@" -o "$T/bad.data" -- "$P" >"$T/bout" 2>"$T/berr"
	local rc=$?
	check "$desc: refused (exit $rc), one line" test "$rc" -ne 0 -a "$(wc -l <"$T/berr")" -le 2
	check "$desc: says so" grep -q "$pat" "$T/berr"
	check "$desc: the program did not run" test ! -s "$T/bout"
}

# view_refused DESCRIPTION STATUS PATTERN COMMAND...: a view refuses bad
# input: exit STATUS, one line on stderr that holds PATTERN, nothing on
# stdout.
view_refused() {
	local desc=$1 want=$2 pat=$3
	shift 3
	"$@" >"$T/vout" 2>"$T/verr"
	local rc=$?
	check_eq "$desc: exit $want" "$rc" "$want"
	check "$desc: one line ($(head -c 200 "$T/verr"))" test "$(wc -l <"$T/verr")" -eq 1
	check "$desc: says so" grep -q -e "$pat" "$T/verr"
	check "$desc: nothing on standard output" test ! -s "$T/vout"
}

# otel_modules: OpenTelemetry's own OTLP decoder (the npm package
# @opentelemetry/otlp-transformer), installed into the build folder once
# (never committed); sets MODS to its node_modules.  1 (after a FAIL) when
# node or npm is missing.
otel_modules() {
	MODS="$BUILD/npm/node_modules"
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		fail "node and npm are needed (scripts/setup.sh installs nodejs and npm)"
		return 1
	fi
	if [ ! -f "$MODS/@opentelemetry/otlp-transformer/build/src/generated/root.js" ]; then
		mkdir -p "$BUILD/npm"
		npm install --prefix "$BUILD/npm" --no-audit --no-fund --no-save @opentelemetry/otlp-transformer@0.53.0 \
			>"$T/npm.log" 2>&1
	fi
	check "OpenTelemetry's decoder installed ($(tail -1 "$T/npm.log" 2>/dev/null))" \
		test -f "$MODS/@opentelemetry/otlp-transformer/build/src/generated/root.js"
}
