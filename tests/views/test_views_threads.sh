#!/usr/bin/env bash
# test_views_threads - two threads with the same thread id (a recycled
# tid) are two threads in every view, never one interleaved stream: the
# trace tells them apart by their serial.  Also: a version-1 trace (chunks
# without serials, written by an older needle) still reads the same.
. "$(dirname "$0")/../lib.sh"
MK="$(dirname "$0")/../progs/views_mktrace.py"
DATA="$(dirname "$0")/data"

# Constructed: tid 100 is first a thread named "first" (serial 1), then,
# later, one named "second" (serial 2); both number their chunks from 0,
# and the file holds their chunks interleaved.
cat >"$T/two.spec" <<'EOF'
version 2
clock
process 99 prog
site 1 run
site 2 step
chunk tid=100 serial=1 seq=0 base=1000 comm=first : E1@0 E2@10 X@10
chunk tid=100 serial=2 seq=0 base=5000 comm=second : E1@0 E2@10
chunk tid=100 serial=1 seq=1 base=2000 depth=1 comm=first : E2@0 X@10 X@10
chunk tid=100 serial=2 seq=1 base=6000 depth=2 comm=second : X@10 X@10
end
EOF
python3 "$MK" "$T/two.spec" "$T/two.data"
"$NEEDLE" replay -i "$T/two.data" 2>&1 | grep -v '^#' >"$T/two.replay"
cat >"$T/two.want" <<'EOF'
           [   100] | run() {
  0.010 us [   100] |   step();
  0.010 us [   100] |   step();
  1.020 us [   100] | } /* run */
           [   100] | run() {
  1.000 us [   100] |   step();
  1.020 us [   100] | } /* run */
EOF
check "constructed: replay shows the two lifetimes of tid 100 one after the other" diff -u "$T/two.want" "$T/two.replay"
"$NEEDLE" info -i "$T/two.data" >"$T/two.info" 2>&1
check_eq "constructed: info lists two threads" "$(awk '/^threads:/ {print $2}' "$T/two.info")" 2
check_eq "constructed: info gives each its serial and its own name" \
	"$(awk '/^ *TID/ { rows = 1; next } /^$/ { rows = 0 } rows { print $1, $2, $NF }' "$T/two.info" | tr '\n' ' ')" "100 1 first 100 2 second "
check_eq "constructed: --tid 100 keeps both" "$("$NEEDLE" replay --tid 100 -i "$T/two.data" | grep -c 'run() {')" 2
check_eq "constructed: report counts both" "$("$NEEDLE" report --csv -s name -i "$T/two.data" | cut -d, -f1-3 | tr '\n' ' ')" \
	"function,calls,total_ns run,2,2040 step,3,1020 "
check_eq "constructed: folded keeps each thread's stacks" \
	"$("$NEEDLE" export --format=folded -i "$T/two.data" -o - | cut -d' ' -f1 | sort -u | tr '\n' ' ')" \
	"first-100;run first-100;run;step second-100;run second-100;run;step "
if command -v protoc >/dev/null; then
	"$NEEDLE" export --format=perfetto -i "$T/two.data" -o "$T/two.pf"
	protoc --decode_raw <"$T/two.pf" >"$T/two.pfraw"
	check_eq "constructed: perfetto gives each lifetime a track of its own" \
		"$(grep -c 'second\|first' "$T/two.pfraw")" 2
fi

# Recorded: in a pid namespace of its own, the program gives its second
# thread the first one's id (ns_last_pid); chunks are small, so that each
# thread writes many.
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
	out=$(unshare --pid --fork --mount-proc "$NEEDLE" record --chunk-size=1 -o "$T/reuse.data" -- \
		"$PROGS/views_tidreuse" reuse 2>"$T/reuse.err")
	check_eq "recorded: the second thread got the first one's id" "$out" same
	"$NEEDLE" info -i "$T/reuse.data" >"$T/reuse.info"
	check_eq "recorded: info lists the two threads with one id, and main" \
		"$(awk '/^ *TID/ { rows = 1; next } /^$/ { rows = 0 } rows { print $1 }' "$T/reuse.info" | sort | uniq -c | awk '{print $1}' | sort | tr '\n' ' ')" "1 2 "
	"$NEEDLE" export --format=folded -i "$T/reuse.data" -o "$T/reuse.folded"
	check_eq "recorded: every stack is body, body;outer or body;outer;inner" \
		"$(grep -vcE '^[^;]+;(main|main;set_last_pid|body|body;outer|body;outer;inner) [0-9]+$' "$T/reuse.folded")" 0
	check_eq "recorded: outer called 2,000 times" "$(calls "$T/reuse.data" outer)" 2000
	"$NEEDLE" replay -i "$T/reuse.data" >"$T/reuse.replay"
	check_eq "recorded: every outer returns in its own thread" "$(grep -c '} /\* outer \*/$' "$T/reuse.replay")" 2000
	check_eq "recorded: nothing mismatched" "$(grep -cE 'not recorded|with these calls open|its entry|exit lost' "$T/reuse.replay")" 0
else
	pass "recorded tid reuse: skipped (needs root and unshare --pid)"
fi

# A version-1 trace, recorded by needle before chunks carried serials:
# build/tests/progs/threads 2 200.  Its report is what that needle printed.
check_eq "version 1: report unchanged" "$("$NEEDLE" report --csv -s name -i "$DATA/views_v1.data")" \
"function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns
main,1,245437,245437,245437,245437,245437
step,800,20590,20590,25,10,500
thread_main,2,93735,39463,46867,40201,53534
work,400,54272,33682,135,79,739"
"$NEEDLE" replay -i "$DATA/views_v1.data" >"$T/v1.replay"
check_eq "version 1: replay has its 1778 lines (calls its two threads interleave with are openings and ends)" "$(wc -l <"$T/v1.replay" | tr -d ' ')" 1778
check_eq "version 1: braces balance" "$(grep -c '} /\* ' "$T/v1.replay")" "$(grep -c '() {$' "$T/v1.replay")"
check "version 1: info says so" grep -q 'format version 1' <("$NEEDLE" info -i "$DATA/views_v1.data")
