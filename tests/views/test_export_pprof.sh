#!/usr/bin/env bash
# test_export_pprof - needle export --format=pprof writes a gzipped
# profile.proto that Debian's `go tool pprof` reads: -top agrees with
# needle report to the count and the nanosecond (flat self-time = report's
# self, cum = report's total, calls = report's calls, a recursion counted
# once), -traces gives every call stack of each thread with its calls,
# the mapping carries the program's build-id, a function its source line.
# graph_prog's calls are known from its source.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/graph_prog"

if ! command -v go >/dev/null; then
	fail "go is not installed (scripts/setup.sh installs golang-go for go tool pprof)"
	exit 0
fi
export HOME=${HOME:-$T} GOCACHE="$T/gocache" GOFLAGS=-mod=mod
pp() { go tool pprof "$@" 2>"$T/pp.err"; }

"$NEEDLE" record -o "$T/g.data" --libcall=none -- "$P" 3 >/dev/null 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
"$NEEDLE" export -i "$T/g.data" --format=pprof -o "$T/g.pb.gz" 2>"$T/err"
st=$?
check_eq "export --format=pprof: exit 0 ($(head -1 "$T/err"))" "$st" 0
check "the profile is gzipped" sh -c "gzip -t '$T/g.pb.gz'"
"$NEEDLE" report --csv -i "$T/g.data" | awk -F, 'NR > 1 { print $1, $2, $3, $4 }' | sort >"$T/report"

# pprof -top, every function, in nanoseconds: flat and cum of self-time.
pp -top -unit=ns -nodefraction=0 -edgefraction=0 -nodecount=1000 "$T/g.pb.gz" >"$T/top"
st=$?
check_eq "go tool pprof reads it (exit 0; $(head -1 "$T/pp.err"))" "$st" 0
check "pprof: the default sample type is self-time" grep -q '^Type: self-time' "$T/top"
awk '$1 ~ /^[0-9]+ns$/ && $4 ~ /^[0-9]+ns$/ { sub(/ns/, "", $1); sub(/ns/, "", $4); print $NF, $4, $1 }' "$T/top" | sort >"$T/top.ns"
check_eq "pprof -top: cum = report's total and flat = report's self, per function, to the nanosecond" \
	"$(awk '{ print $1, $3, $4 }' "$T/report")" "$(cat "$T/top.ns")"
pp -top -sample_index=calls -nodefraction=0 -nodecount=1000 "$T/g.pb.gz" >"$T/calls"
check_eq "pprof -top -sample_index=calls: flat = report's calls" \
	"$(awk '{ print $1, $2 }' "$T/report")" \
	"$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /%$/ { print $NF, $1 }' "$T/calls" | sort)"
check_eq "pprof: rec's cum counts its outermost call, as report's total (recursion 4 deep)" \
	"$(awk '$1 == "rec" { print $2 }' "$T/top.ns")" "$(awk '$1 == "rec" { print $3 }' "$T/report")"
pp -top -sample_index=wall-time -unit=ns -nodefraction=0 -nodecount=1000 "$T/g.pb.gz" >"$T/wall"
check_eq "pprof: wall-time's flat for leaf (a function that calls nothing) is its total" \
	"$(awk '$NF == "leaf" { sub(/ns/, "", $1); print $1 }' "$T/wall")" "$(awk '$1 == "leaf" { print $3 }' "$T/report")"

# -traces: a sample per call stack of each thread, with the calls that
# ended there (from the source: main's fans call mid 4 times, whose
# leaf calls are 10, ...).
pp -traces -sample_index=calls "$T/g.pb.gz" >"$T/traces"
python3 - "$T/traces" >"$T/stacks" <<'PY'
import re, sys
blocks = open(sys.argv[1]).read().split('-----------+-------------------------------------------------------')
for b in blocks[1:]:
    lines = [l for l in b.split('\n') if l.strip()]
    frames, count = [], None
    for l in lines:
        if ':' in l.split('|')[0] and ('thread:' in l or 'tid:' in l):
            continue
        m = re.match(r'\s*(\d+)\s+(\S+)$', l)
        if m and count is None:
            count, frames = int(m.group(1)), [m.group(2)]
        elif count is not None:
            frames.append(l.strip())
    if count is not None:
        print('%d %s' % (count, ' < '.join(frames)))
PY
for s in "10 leaf < mid < fan < main" "2 leaf < fan < main" "5 leaf < mid < fan < worker" "1 leaf < fan < worker" \
	"1 leaf < mid < other < main" "1 leaf < rec < rec < rec < main" "1 rec < rec < rec < rec < main" "4 mid < fan < main"; do
	check "pprof -traces: the stack $s" grep -qx "$s" "$T/stacks"
done
check_eq "pprof -traces: the calls of all stacks add up to 39" "$(awk '{ n += $1 } END { print n }' "$T/stacks")" 39
check "pprof -traces: samples carry their thread" grep -q 'tid:' "$T/traces"

# The mapping's build-id is the program's; a function's line its source's.
want=$(readelf -n "$P" | awk '/Build ID/ { print $3 }')
check_eq "pprof: the program's build-id in its mapping" "$(awk '/^Build ID:/ { print $3 }' "$T/top")" "$want"
line=$(grep -n '^NOINLINE void fan' "$(dirname "$0")/../progs/graph_prog.c" | cut -d: -f1)
check "pprof -lines: fan's source file and line" sh -c "go tool pprof -top -lines -nodefraction=0 '$T/g.pb.gz' 2>/dev/null | grep -q 'fan .*graph_prog.c:$line'"

# Bad input.
view_refused "export --format=pprof of a missing trace" 1 "nosuch.data" \
	"$NEEDLE" export -i "$T/nosuch.data" -f pprof -o "$T/x.pb.gz"
check "a refused export writes no file" test ! -e "$T/x.pb.gz"
