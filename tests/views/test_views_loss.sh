#!/usr/bin/env bash
# test_views_loss - nesting after buffer losses.  When events are dropped,
# the calls that returned during the loss must not stay open: every view
# cuts the thread's open calls back to the depth the program had when the
# recording resumed, and shows the calls cut as "exit lost".  A recording
# with a tiny buffer never looks deeper than the program ever was, braces
# balance, and the per-thread losses add up to the total; a constructed
# trace checks the exact output.
. "$(dirname "$0")/../lib.sh"
MK="$(dirname "$0")/../progs/views_mktrace.py"

# maxdepth: the deepest indentation of a replay (0 = outermost call).
maxdepth() {
	awk '!/^#/ { i = index($0, "] | "); s = substr($0, i + 4); match(s, /^ */)
		d = RLENGTH / 2; if (d > m) m = d } END { print m + 0 }'
}

# 4 threads x 20,000 recursions 30 deep, a 1 MiB buffer read every 10 ms:
# most events are lost, at many points.  The program's deepest nesting is
# thread_main > descend x 30 > leaf: depth 31 counted from 0.
"$NEEDLE" record --poll=10 --buffer-size=1 --chunk-size=4 -o "$T/loss.data" -- \
	"$PROGS/views_deep" 4 20000 30 >/dev/null 2>"$T/rec.err"
lost=$("$NEEDLE" info -i "$T/loss.data" | awk '/^lost events:/ {print $3}')
check "events were lost (the premise of this test)" test "${lost:-0}" -gt 0
"$NEEDLE" replay -i "$T/loss.data" >"$T/loss.replay"
d=$(maxdepth <"$T/loss.replay")
check "replay is never deeper than the program (deepest: $d, the program's: 31)" test "$d" -le 31
check "calls that returned during a loss are closed as exit lost" grep -qE '\} /\* (descend|leaf|thread_main): exit lost \*/' "$T/loss.replay"
check_eq "every opened call is closed, or listed as open after the graph" \
	"$(( $(grep -c '} /\* ' "$T/loss.replay") + $(sed -n '/with these calls open/,$p' "$T/loss.replay" | grep -cE '^\[[0-9]+\] ') ))" \
	"$(grep -c '() {$' "$T/loss.replay")"
check_eq "no call is closed by an outer return" "$(grep -c 'return not recorded' "$T/loss.replay")" 0
"$NEEDLE" export --format=folded -i "$T/loss.data" -o "$T/loss.folded"
check_eq "folded stacks are never deeper than the program" \
	"$(awk '{ n = split($1, a, ";"); if (n > m) m = n } END { print (m <= 33) ? "ok" : m }' "$T/loss.folded")" ok
"$NEEDLE" export --format=chrome -i "$T/loss.data" -o "$T/loss.json"
check_eq "chrome export: a B and an E per call" \
	"$(python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['traceEvents']; b=sum(x['ph']=='B' for x in e); print('balanced' if b == sum(x['ph']=='E' for x in e) and b > 0 else 'unbalanced')" "$T/loss.json")" balanced
"$NEEDLE" info -i "$T/loss.data" >"$T/loss.info"
check_eq "info: the per-thread LOST column adds up to the total" \
	"$(awk '/^ *TID/ { rows = 1; next } /^$/ { rows = 0 } rows { n += $4 } END { print n + 0 }' "$T/loss.info")" "$lost"
"$NEEDLE" report -i "$T/loss.data" >"$T/loss.report"
check "report says that events were lost" grep -qx "# $lost events lost: times of calls around the loss are incomplete" "$T/loss.report"
check_eq "report: every recorded leaf() entry is counted" "$(calls "$T/loss.data" leaf 2>/dev/null)" \
	"$(grep -cE '\| *leaf\(\)' "$T/loss.replay")"

# The exact output: thread 7 opens main > f > g > g; 9 events are lost;
# when it takes its next chunk 2 calls are open (main, f): both g returned
# during the loss.
cat >"$T/cut.spec" <<'EOF'
version 2
clock
site 1 main
site 2 f
site 3 g
chunk tid=7 serial=1 seq=0 base=1000 depth=0 comm=w : E1@0 E2@10 E3@10 E3@10
chunk tid=7 serial=1 seq=1 base=2000 depth=2 lost=9 comm=w : E3@0 X@5 X@5 X@100
end
EOF
python3 "$MK" "$T/cut.spec" "$T/cut.data"
"$NEEDLE" replay -i "$T/cut.data" 2>&1 | grep -v '^#' >"$T/cut.replay"
cat >"$T/cut.want" <<'EOF'
           [     7] | main() {
           [     7] |   f() {
           [     7] |     g() {
           [     7] |       g() {
           [     7] |       } /* g: exit lost */
           [     7] |     } /* g: exit lost */
           [     7] |     /* LOST 9 events */
  0.005 us [     7] |     g();
  1.000 us [     7] |   } /* f */
  1.110 us [     7] | } /* main */
EOF
check "constructed trace: the calls cut are closed as exit lost, then the loss" diff -u "$T/cut.want" "$T/cut.replay"
"$NEEDLE" report --csv -s name -i "$T/cut.data" >"$T/cut.csv" 2>/dev/null
check_eq "constructed trace: report leaves the durations of exit-lost calls out" "$(cat "$T/cut.csv")" \
"function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns
f,1,1000,985,1000,1000,1000
g,3,5,5,5,5,5
main,1,1110,110,1110,1110,1110"
check_eq "constructed trace: folded nests the call after the loss under f" \
	"$("$NEEDLE" export --format=folded -i "$T/cut.data" -o - | grep -c '^w-7;main;f;g ')" 1

# The chunk after a loss can begin with an exit: the program took the
# chunk to write that exit, after counting the call as returned, so the
# call is one more than open_depth says.  g (inner) returned during the
# loss; g (outer) returns first thing in the next chunk.
cat >"$T/exit.spec" <<'EOF2'
version 2
clock
site 1 main
site 2 f
site 3 g
chunk tid=7 serial=1 seq=0 base=1000 depth=0 comm=w : E1@0 E2@10 E3@10 E3@10
chunk tid=7 serial=1 seq=1 base=2000 depth=2 lost=1 comm=w : X@0 X@10 X@10
end
EOF2
python3 "$MK" "$T/exit.spec" "$T/exit.data"
"$NEEDLE" replay -i "$T/exit.data" 2>&1 | grep -v '^#' >"$T/exit.replay"
cat >"$T/exit.want" <<'EOF2'
           [     7] | main() {
           [     7] |   f() {
           [     7] |     g() {
           [     7] |       g() {
           [     7] |       } /* g: exit lost */
           [     7] |       /* LOST 1 events */
  0.980 us [     7] |     } /* g */
  1.000 us [     7] |   } /* f */
  1.020 us [     7] | } /* main */
EOF2
check "constructed trace: an exit first after the loss closes its own call" diff -u "$T/exit.want" "$T/exit.replay"
