#!/usr/bin/env bash
# test_tui - needle tui, driven through tmux as a user would drive it
# (send-keys) and read off the screen (capture-pane): the call graph of
# each thread, folding and unfolding, the report, a function's call graph,
# search, help, --tid, and its refusals; calls that never ended, a report
# asked for while the trace is still being read, damaged and cut traces,
# narrow terminals and deep stacks.  graph_prog's calls are known from its
# source, so every count and every line of a screen is exact; only the
# time columns, which vary, are cut off (checked for their form once).
# Its work grows with the events, not with the depth of the stacks.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/graph_prog"

# A tmux server of the test's own, whatever the user runs.
export TMUX_TMPDIR="$T"
S=tui
trap 'tmux kill-server 2>/dev/null; rm -rf "$T"' EXIT

"$NEEDLE" record -o "$T/g.data" --libcall=none -- "$P" 3 >"$T/out" 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0

# start ARGS...: needle tui in a 100x30 terminal; its exit status goes to
# $T/rc when it ends.
start() {
	rm -f "$T/rc"
	tmux new-session -d -s "$S" -x 100 -y 30 "cd '$T' && '$NEEDLE' tui $*; echo \$? >'$T/rc'"
}
# The screen as text, its time columns cut (the cursor's mark, then the
# calls and the function from column 25), thread ids as TID, no blank
# lines.
screen() {
	tmux capture-pane -p -t "$S" | awk '{ l[NR] = $0; if ($0 ~ /[^ ]/) last = NR }
		END { for (i = 1; i <= last; i++) print (i <= 2 || i == last) ? l[i] : substr(l[i], 1, 1) substr(l[i], 25) }' |
		sed -E 's/\[[0-9]+\]/[TID]/; s/ +$//' | grep -v '^$'
}
raw() { tmux capture-pane -p -t "$S"; }
# shows TEXT [TENTHS]: until the screen shows it (10 s at most, or
# TENTHS tenths of a second).
shows() {
	for _ in $(seq "${2:-100}"); do
		raw | grep -qF -- "$1" && return 0
		sleep 0.1
	done
	return 1
}
# keys KEY...: one at a time, each until the screen changes (1.5 s at
# most: a key may change nothing), then until it is still, so that a
# check reads what the keys made of it however slow the machine.
keys() {
	local k before
	for k in "$@"; do
		before=$(raw 2>/dev/null)
		tmux send-keys -t "$S" "$k"
		for _ in $(seq 30); do
			sleep 0.05
			[ "$(raw 2>/dev/null)" != "$before" ] && break
		done
	done
	local a b
	a=$(raw 2>/dev/null)
	for _ in $(seq 50); do
		sleep 0.1
		b=$(raw 2>/dev/null)
		[ "$a" = "$b" ] && break
		a=$b
	done
}
ended() {
	for _ in $(seq 50); do
		[ -s "$T/rc" ] && return 0
		sleep 0.1
	done
	return 1
}

start -i g.data
check "the whole trace is read: the status line says how much" shows "78 events, 2 threads"
check_eq "the graph: each thread's calls merged by path, in call order, every count exact" "$(screen)" \
"needle tui: g.data: graph
 TOTAL TIME   SELF TIME      CALLS  FUNCTION
>         0  - [TID] graph_prog
          1    - main
          2      - fan
          4        - mid
         10            leaf
          2          leaf
          1      - other
          1        - mid
          1            leaf
          1      - rec
          1          leaf
          1        - rec
          1            leaf
          1          - rec
          1              leaf
          1              rec
          0  - [TID] graph_prog
          1    - worker
          1      - fan
          2        - mid
          5            leaf
          1          leaf
78 events, 2 threads  (h: help, q: quit)"
check "the time columns: a call's total and self time" \
	grep -qE '^ +[0-9]+\.[0-9]{3} (ns|us|ms|s) +[0-9]+\.[0-9]{3} (ns|us|ms|s) +1    - main$' <(raw)
check "a thread's line has no time of its own" grep -qE '^> +- +- +0  - \[[0-9]+\] graph_prog$' <(raw)

keys j Enter
check_eq "enter on main folds it: its calls are gone, the cursor on it" "$(screen | sed -n '3,6p')" \
"          0  - [TID] graph_prog
>         1    + main
          0  - [TID] graph_prog
          1    - worker"
keys Enter
check_eq "enter again unfolds it" "$(screen | sed -n '4,5p')" \
">         1    - main
          2      - fan"
keys c
check_eq "c folds the calls under main" "$(screen | sed -n '3,8p')" \
"          0  - [TID] graph_prog
>         1    - main
          2      + fan
          1      + other
          1      + rec
          0  - [TID] graph_prog"
keys j Right
check_eq "right unfolds fan (c folded its calls only, not theirs)" "$(screen | sed -n '5,9p')" \
">         2      - fan
          4        - mid
         10            leaf
          2          leaf
          1      + other"
keys Left Left
check_eq "left folds fan, left again goes to its caller" "$(screen | sed -n '4,6p')" \
">         1    - main
          2      + fan
          1      + other"
keys e
check_eq "e unfolds everything under main again" "$(screen | wc -l)" 25

# The report: every function once, its calls; main first (it holds the
# others' time).
keys R
check "R: the report" shows "g.data: report"
check_eq "R: the report's first line is main, under the cursor" "$(screen | sed -n 3p)" ">         1  main"
check_eq "R: each function's calls, recursion counted per call" "$(screen | sed -n '3,$p' | grep -v 'events' | sed 's/^>/ /' | sort -k2)" \
"          3  fan
         22  leaf
          1  main
          7  mid
          1  other
          4  rec
          1  worker"
keys s
check "s: sorted by self time" shows "report, sorted by self"
keys s s
check_eq "s s: sorted by name, each function's calls" "$(screen | sed -n '3,$p' | grep -v events | sed 's/^>/ /')" \
"          3  fan
         22  leaf
          1  main
          7  mid
          1  other
          4  rec
          1  worker"
keys s
check "s: back to total time" shows "report, sorted by total"
# Search in the report too; escape leaves the search as it was.
keys / l e a Enter
check_eq "/lea in the report: the cursor on leaf" "$(screen | grep '^>')" ">        22  leaf"
keys Home / z Escape
check_eq "escape: nothing searched, the cursor stays on main" "$(screen | grep '^>')" ">         1  main"
keys n
check_eq "n: the last search, lea, finds leaf again" "$(screen | grep '^>')" ">        22  leaf"
keys Home
# The cursor to fan, then its call graph.
n=$(screen | sed -n '3,$p' | grep -n ' fan$' | cut -d: -f1)
for _ in $(seq $((n - 1))); do keys j; done
keys Enter
check "enter on a report line: that function's call graph" shows "call graph of fan"
check_eq "the call graph of fan: its callers inverted, its calls merged" "$(screen)" \
"needle tui: g.data: call graph of fan
 TOTAL TIME   SELF TIME      CALLS  FUNCTION
>         3  - callers (backtraces, innermost first)
          1      worker
          2      main
          3  - callees (its calls merged)
          3    - fan
          6      - mid
         15          leaf
          3        leaf
78 events, 2 threads  (h: help, q: quit)"

# Search, from the graph.
keys g
keys / r e c Enter
check_eq "/rec: the cursor on the first rec" "$(screen | grep '^>')" ">         1      - rec"
keys n
check_eq "n: the next rec, one deeper" "$(screen | grep '^>')" ">         1        - rec"
keys N
check_eq "N: back to the first" "$(screen | grep '^>')" ">         1      - rec"
keys Home / z z z Enter
check "a search that matches nothing says so" shows "no function matches 'zzz'"
keys G
check "G on a thread's line: no function there, said" shows "no function here"
keys j G
check "G on main: main's call graph" shows "call graph of main"
check_eq "main's callees: everything it called, merged" "$(screen | sed -n '5,$p' | grep -v events)" \
"          1    - main
          2      - fan
          4        - mid
         10            leaf
          2          leaf
          1      - other
          1        - mid
          1            leaf
          1      - rec
          1          leaf
          1        - rec
          1            leaf
          1          - rec
          1              leaf
          1              rec"
keys h
check "h: the keys" shows "needle tui: keys"
keys x
check "any key leaves the help" shows "call graph of main"
keys q
check "q: needle tui ends" ended
check_eq "q: exit status 0" "$(cat "$T/rc" 2>/dev/null)" 0

# --tid: one thread.
wtid=$("$NEEDLE" replay -i "$T/g.data" | grep -m1 'worker() {' | sed 's/.*\[ *\([0-9]*\)\].*/\1/')
start -i g.data --tid "$wtid"
check "--tid: read" shows "events, "
check_eq "--tid $wtid: its calls only" "$(screen | sed -n '3,$p' | grep -v events)" \
">         0  - [TID] graph_prog
          1    - worker
          1      - fan
          2        - mid
          5            leaf
          1          leaf"
keys q
ended

# Calls still running when the program died have no time: '-', as
# report shows them.
"$NEEDLE" record -o "$T/cr.data" -- "$PROGS/crash" segv 3 >/dev/null 2>&1
start -i cr.data
check "crash: read" shows "events, 1 thread  "
check "crash: main's line" grep -qE '^ +- +- +1    - main$' <(raw)
check "crash: die's line, inside it" grep -qE '^ +- +- +1        die$' <(raw)
check "crash: outer's calls ended: timed" grep -qE '^ +[0-9.]+ [nu]s +[0-9.]+ [nu]s +3      - outer$' <(raw)
keys q
ended

# A report (and a call graph) asked for while the trace is still being
# read is built again from all of it when reading ends, the cursor kept.
"$NEEDLE" record -o "$T/d.data" -- "$PROGS/views_deep" 1 500 100 >/dev/null 2>&1
want=$("$NEEDLE" report -i "$T/d.data" | awk '$NF == "descend" { print $(NF - 1) }')
rm -f "$T/rc"
tmux new-session -d -s "$S" -x 100 -y 30 "cd '$T' && NEEDLE_TUI_BATCH=2 '$NEEDLE' tui -i d.data; echo \$? >'$T/rc'"
check "slow reading: the first screen while still loading" shows "loading: "
tmux send-keys -t "$S" R
check "slow reading: the report while still loading" shows "d.data: report"
check "slow reading: ... which is still loading" grep -q "^loading: " <(raw)
check "slow reading: read to the end" shows "events, 2 threads" 900
check_eq "slow reading: once read, the report counts all of descend's calls ($want)" \
	"$(raw | awk '$NF == "descend" { print $(NF - 1) }')" "$want"
keys q
ended

# A damaged trace: what precedes the damage, and a status line that says
# so for good; a cut one says the recording did not finish.  Narrow
# terminals cut lines (none wraps onto the next); deep calls keep their
# name in sight.
cp "$T/d.data" "$T/dd.data"
# Four bytes flipped inside the events of the middle CHUNK section (type
# 6; sections: u32 type, u32 crc, u64 length, payload; a 56-byte chunk
# header), found by walking the sections from the 64-byte file header.
python3 - "$T/dd.data" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
off, chunks = 64, []
while off + 16 <= len(b):
    typ, crc, length = struct.unpack_from('<IIQ', b, off)
    if typ == 6 and length > 64:
        chunks.append(off + 16)
    off += 16 + length
at = chunks[len(chunks) // 2] + 60
b[at:at + 4] = b'\xff\xff\xff\xff'
open(sys.argv[1], 'wb').write(b)
PY
start -i dd.data
check "damaged: said on the status line" shows "damaged: chunk at offset"
keys j
check "damaged: still said after a key" grep -q "^damaged: .*fails its CRC check" <(raw)
keys q
ended
cp "$T/d.data" "$T/dt.data"
truncate -s $(($(stat -c %s "$T/d.data") * 2 / 3)) "$T/dt.data"
start -i dt.data
check "cut: the status line says the recording did not finish" shows "(the recording did not finish)"
keys q
ended
start -i d.data
shows "events, " >/dev/null
keys End
check "deep calls: the depth, then the name, in sight (100 columns)" grep -qE '\[depth 10[0-9]\] (leaf|descend)$' <(raw)
keys q
ended
rm -f "$T/rc"
tmux new-session -d -s "$S" -x 40 -y 30 "cd '$T' && '$NEEDLE' tui -i g.data; echo \$? >'$T/rc'"
shows "78 events" >/dev/null
check_eq "40 columns: every line cut, none wrapped (25 lines)" "$(raw | grep -c .)" 25
check_eq "40 columns: no depth said of an outermost line" "$(raw | grep -c 'depth 0')" 0
keys R
check "40 columns: the report's first line ends in main's calls and name" grep -qE '^>.* 1  main$' <(raw | sed -n 3p)
keys q
ended

# Refusals, in one line, before the terminal is touched.
"$NEEDLE" tui -i "$T/nothere.data" </dev/null >"$T/o1" 2>"$T/e1"
rc=$?
check "a missing trace: refused (exit $rc)" test "$rc" -ne 0
check_eq "a missing trace: one line" "$(wc -l <"$T/e1")" 1
"$NEEDLE" tui -i "$T/g.data" </dev/null >"$T/o2" 2>"$T/e2"
check_eq "no terminal: exit 2" "$?" 2
check "no terminal: says to use the text views" grep -q "needs a terminal" "$T/e2"
"$NEEDLE" tui --bogus >/dev/null 2>&1
check_eq "an unknown option: exit 2" "$?" 2

# Work linear in the events, not the depth: 200,000 calls 100 deep and
# 1,000 deep cost the same (NEEDLE_VIEW_WORK counts the reader's and the
# tree's steps; printed when it ends).
for d in 100 1000; do
	"$NEEDLE" record -o "$T/d$d.data" -- "$PROGS/views_deep" 1 $((50000 / d)) "$d" >/dev/null 2>&1
done
for d in 100 1000; do
	rm -f "$T/w$d"
	tmux new-session -d -s "w$d" -x 100 -y 30 "NEEDLE_VIEW_WORK=1 '$NEEDLE' tui -i '$T/d$d.data' 2>'$T/w$d'"
	S="w$d"
	shows "events, 1 threads" || true
	keys q
	for _ in $(seq 50); do grep -q "view work" "$T/w$d" 2>/dev/null && break; sleep 0.1; done
done
S=tui
w100=$(awk '/view work:/ {print $4}' "$T/w100")
w1000=$(awk '/view work:/ {print $4}' "$T/w1000")
e1000=$("$NEEDLE" info -i "$T/d1000.data" | awk '/^events:/ {print $2}')
check "its work is counted ($w100, $w1000 steps)" test -n "$w100" -a -n "$w1000"
check "as much work at depth 1000 as at depth 100 ($w1000 vs $w100)" \
	awk -v a="${w100:-0}" -v b="${w1000:-1e18}" 'BEGIN { exit !(a > 0 && b <= 1.5 * a && a <= 1.5 * b) }'
check "a bounded number of steps per event ($w1000 for $e1000 events)" \
	awk -v w="${w1000:-1e18}" -v e="${e1000:-0}" 'BEGIN { exit !(e > 0 && w <= 12 * e) }'

