#!/usr/bin/env bash
# test_views_dump - needle dump, uftrace's dump: every event of every
# thread as a line (time, tid, kind, function, address, depth), the
# recorded values after their event, -F/-N subtrees, -D, --tid, and its
# --chrome / --flame-graph forms; uftrace's own dump of the same trace
# exported in its format prints the same lines.  graph_prog's calls are
# known from its source.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/graph_prog"

"$NEEDLE" record -o "$T/g.data" --libcall=none -A 'mid@arg1/d32' -R 'rec@retval/d32' -- "$P" 3 >/dev/null 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
"$NEEDLE" dump -i "$T/g.data" >"$T/dump" 2>"$T/derr"
st=$?
check_eq "dump: exit 0 ($(head -1 "$T/derr"))" "$st" 0

events=$("$NEEDLE" info -i "$T/g.data" | awk '/^events:/ { print $2 }')
check_eq "dump: a line per event" "$(grep -c '\[\(entry\|exit \)\]' "$T/dump")" "$events"
check_eq "dump: as many entries as exits" "$(grep -c '\[entry\]' "$T/dump")" "$(grep -c '\[exit \]' "$T/dump")"
# Calls per function: leaf 22 (fan 6 x 3, other 1, rec 3), mid 7, fan 3.
for fc in leaf:22 mid:7 fan:3 rec:4 other:1 main:1 worker:1; do
	check_eq "dump: ${fc%:*}'s entries (${fc#*:})" "$(grep -c "\[entry\] ${fc%:*}(" "$T/dump")" "${fc#*:}"
done
check_eq "dump: a section per thread, main's first" \
	"$(grep '^thread ' "$T/dump" | awk '{ print $3 }' | tr '\n' ' ')" "(graph_prog): (graph_prog): "
check_eq "dump: the main thread begins with main at depth 0" \
	"$(awk '/^thread / { n++ } n == 1 && /\[entry\]/ { print $4, $5, $6; exit }' "$T/dump" | sed 's/(.*)//')" \
	"main depth: 0"
check_eq "dump: depths as the nesting: rec's innermost call at depth 4" \
	"$(grep '\[entry\] rec(' "$T/dump" | awk '{ print $NF }' | tr '\n' ' ')" "1 2 3 4 "
check_eq "dump: times never go back within a thread" \
	"$(awk '/^thread / { last = 0 } /\[(entry|exit )\]/ { if ($1 + 0 < last) bad++; last = $1 + 0 } END { print bad + 0 }' "$T/dump")" 0
check_eq "dump: an address is the function's, as graph -f addr gives it" \
	"$(grep -m1 '\[entry\] fan(' "$T/dump" | sed 's/.*fan(\([0-9a-f]*\)).*/\1/')" \
	"$("$NEEDLE" graph -i "$T/g.data" -f addr fan | awk '$NF == "fan" && $3 == "(3)" { print $1 }')"
check_eq "dump: values after their event: mid's arg1, 2 then 3 in each fan" \
	"$(grep -A1 '\[entry\] mid(' "$T/dump" | grep -o 'arg1 = [0-9]*' | head -4 | tr '\n' ' ')" \
	"arg1 = 2 arg1 = 3 arg1 = 2 arg1 = 3 "
check_eq "dump: return values after the exit: rec's, 0 1 2 3 innermost first" \
	"$(grep -A1 '\[exit \] rec(' "$T/dump" | grep -o 'retval = [0-9]*' | tr '\n' ' ')" \
	"retval = 0 retval = 1 retval = 2 retval = 3 "
check_eq "dump --no-args: the same events, no value" \
	"$("$NEEDLE" dump -i "$T/g.data" --no-args | grep -c ' = ')/$("$NEEDLE" dump -i "$T/g.data" --no-args | grep -c '\[e')" \
	"0/$(grep -c '\[e' "$T/dump")"

d() { "$NEEDLE" dump -i "$T/g.data" "$@" | grep '\[entry\]' | awk '{ sub(/\(.*/, "", $4); print $4 }' | sort | uniq -c | awk '{ print $2 ":" $1 }' | tr '\n' ' '; }
check_eq "-F other: other's subtree only" "$(d -F other)" "leaf:1 mid:1 other:1 "
check_eq "-F fan -N mid: fan's subtree without mid's" "$(d -F fan -N mid)" "fan:3 leaf:3 "
check_eq "-F fan -D 2: fan and one level" "$(d -F fan -D 2)" "fan:3 leaf:3 mid:6 "
check_eq "-N fan -N rec -N worker: the rest" "$(d -N fan -N rec -N worker)" "leaf:1 main:1 mid:1 other:1 "
check_eq "-D 1: the outermost calls" "$(d -D 1)" "main:1 worker:1 "
wtid=$(awk '/^thread / { n++; if (n == 2) { print $2; exit } }' "$T/dump")
check_eq "--tid: the worker thread's calls only" "$(d --tid "$wtid")" "fan:1 leaf:6 mid:2 worker:1 "

"$NEEDLE" dump -i "$T/g.data" --chrome >"$T/c.json"
"$NEEDLE" export -i "$T/g.data" -f chrome -o "$T/e.json"
check_eq "--chrome: export's Chrome JSON" "$(cmp "$T/c.json" "$T/e.json" && echo same)" same
# --chrome with filters: the B/E pairs of the calls the text dump shows.
cj() { "$NEEDLE" dump -i "$T/g.data" --chrome "$@" | python3 -c '
import json, sys, collections
c = collections.Counter(e["name"] for e in json.load(sys.stdin)["traceEvents"] if e["ph"] == "B")
print(" ".join("%s:%d" % (k, c[k]) for k in sorted(c)))'; }
check_eq "--chrome -F fan -N mid: the calls dump -F fan -N mid shows" "$(cj -F fan -N mid) " "$(d -F fan -N mid)"
check_eq "--chrome -F fan -D 2" "$(cj -F fan -D 2) " "$(d -F fan -D 2)"
check_eq "--chrome --tid: one thread's calls" "$(cj --tid "$wtid") " "$(d --tid "$wtid")"
check_eq "--chrome: every B has its E" \
	"$("$NEEDLE" dump -i "$T/g.data" --chrome -F fan | grep -c '"ph":"B"')" \
	"$("$NEEDLE" dump -i "$T/g.data" --chrome -F fan | grep -c '"ph":"E"')"
# --flame-graph is uftrace's: threads merged, in samples.  With a 1 ns
# sample no remainder moves, so each stack's samples are export's ns for
# it, summed over the threads export keeps apart.
"$NEEDLE" dump -i "$T/g.data" --flame-graph --sample-time=1ns >"$T/c.folded"
"$NEEDLE" export -i "$T/g.data" -f folded -o "$T/e.folded"
check_eq "--flame-graph --sample-time=1ns: export's folded stacks, threads merged" \
	"$(sort "$T/c.folded")" \
	"$(awk '{ n = $NF; sub(/ [0-9]+$/, ""); sub(/^[^;]*;?/, ""); if ($0 != "") s[$0] += n } END { for (k in s) print k, s[k] }' "$T/e.folded" | sort)"
check "--flame-graph: no thread in a line" eval '! grep -q "^graph_prog" "$T/c.folded"'
check_eq "--flame-graph --sample-time=1s: no stack lasted a whole sample" \
	"$("$NEEDLE" dump -i "$T/g.data" --flame-graph --sample-time=1s | wc -l)" 0
check_eq "--flame-graph (uftrace's default sample, 1us for a short trace) is --sample-time=1us" \
	"$("$NEEDLE" dump -i "$T/g.data" --flame-graph | md5sum)" \
	"$("$NEEDLE" dump -i "$T/g.data" --flame-graph --sample-time=1us | md5sum)"
# Functions of one name (C++ overloads that demangle alike) are one frame:
# a stack is one line, in dump's form and export's.
"$NEEDLE" record -o "$T/cxx.data" -- "$PROGS/cxx_prog" >/dev/null 2>&1
check_eq "--flame-graph: overloads of one name are one frame, every stack one line" \
	"$("$NEEDLE" dump -i "$T/cxx.data" --flame-graph --sample-time=1ns | awk '{ $NF = ""; print }' | sort | uniq -d | wc -l)/$("$NEEDLE" export -i "$T/cxx.data" -f folded -o - | awk '{ $NF = ""; print }' | sort | uniq -d | wc -l)" "0/0"
check "--flame-graph: and cxx_prog has overloads that print alike" \
	test "$("$NEEDLE" report -i "$T/cxx.data" --csv | awk -F, '{ print $1 }' | sort | uniq -d | wc -l)" -gt 0
view_refused "dump --sample-time without --flame-graph" 2 "goes with --flame-graph" "$NEEDLE" dump -i "$T/g.data" --sample-time=1ms
view_refused "dump --sample-time 0" 2 "takes a duration" "$NEEDLE" dump -i "$T/g.data" --flame-graph --sample-time=0

if command -v uftrace >/dev/null; then
	"$NEEDLE" export -i "$T/g.data" -f uftrace -o "$T/g.uftrace" 2>/dev/null
	check_eq "uftrace's dump of the export: the same lines (time, tid, kind, function, address, depth)" \
		"$(diff <(grep '\[\(entry\|exit \)\]' "$T/dump") <(uftrace dump -d "$T/g.uftrace" | grep '\[\(entry\|exit \)\]') \
			>/dev/null && echo same)" same
else
	fail "uftrace is not installed (scripts/setup.sh installs it)"
fi

view_refused "dump -D 0" 2 "-D takes a depth" "$NEEDLE" dump -i "$T/g.data" -D 0
view_refused "dump --flame-graph with a filter" 2 "whole trace" "$NEEDLE" dump -i "$T/g.data" --flame-graph -F main
view_refused "dump of a missing trace" 1 "nosuch.data" "$NEEDLE" dump -i "$T/nosuch.data"
view_refused "dump of a thread not in the trace" 1 "thread 1 is not" "$NEEDLE" dump -i "$T/g.data" --tid 1
view_refused "dump with a bad regular expression" 2 "not a regular expression" "$NEEDLE" dump -i "$T/g.data" -F 'a($'
env -u NEEDLE_SITES "$NEEDLE" record -o "$T/l.data" -- "$P" 3 >/dev/null 2>&1
check "with library calls: dump shows pthread_create" sh -c "'$NEEDLE' dump -i '$T/l.data' | grep -q 'pthread_create('"
check_eq "--no-libcall: none of them, the program's calls all there" \
	"$("$NEEDLE" dump -i "$T/l.data" --no-libcall | grep -c '\[entry\]')" 39

# --graphviz / --mermaid: the call graph by caller path with the calls on
# each edge, from what the filters leave.
check_eq "--graphviz -F main -D 3: main's graph, three levels" \
	"$("$NEEDLE" dump -i "$T/g.data" --graphviz -F main -D 3 | grep -- '->' | tr -s ' ' | sort | tr '\n' '/')" \
	' "fan" -> "leaf" [xlabel = "2"]/ "fan" -> "mid" [xlabel = "4"]/ "graph_prog" -> "main" [xlabel = "1"]/ "main" -> "fan" [xlabel = "2"]/ "main" -> "other" [xlabel = "1"]/ "main" -> "rec" [xlabel = "1"]/ "other" -> "mid" [xlabel = "1"]/ "rec" -> "leaf" [xlabel = "1"]/ "rec" -> "rec" [xlabel = "1"]/'
check "--graphviz: a digraph named for the program" sh -c "'$NEEDLE' dump -i '$T/g.data' --graphviz | grep -q '^digraph \"graph_prog\" {'"
check_eq "--mermaid -F fan -D 2: the flowchart's edges, depth_id nodes" \
	"$("$NEEDLE" dump -i "$T/g.data" --mermaid -F fan -D 2 | grep -- '-->' | tr -s ' ' | tr '\n' '/')" \
	' 0_0["graph_prog"] -->|3| 1_1["fan"];/ 1_1["fan"] -->|6| 2_2["mid"];/ 1_1["fan"] -->|3| 2_3["leaf"];/'

# A forked child: --graphviz merges its calls under the parent's path.
env -u NEEDLE_SITES "$NEEDLE" record -o "$T/f.data" -- "$PROGS/exec_prog" fork >/dev/null 2>&1
"$NEEDLE" dump -i "$T/f.data" --graphviz >"$T/f.dot" 2>"$T/f.err"
st=$?
check_eq "--graphviz of a trace with a fork: exit 0 ($(head -1 "$T/f.err"))" "$st" 0
check "--graphviz of a trace with a fork: the child's fork return under main" grep -q '"main" -> "fork"' "$T/f.dot"
# Its chrome dump under filters: each B of a thread has its E (the calls
# the child inherits are shown, or not, as their ends are).
balance() {
	python3 -c '
import json, sys, collections
st = collections.defaultdict(list); bad = 0
for e in json.load(sys.stdin)["traceEvents"]:
    k = (e.get("pid"), e.get("tid"))
    if e["ph"] == "B": st[k].append(e["name"])
    elif e["ph"] == "E":
        if st[k] and st[k][-1] == e["name"]: st[k].pop()
        else: bad += 1
print(bad + sum(len(v) for v in st.values()))'
}
for o in "" "-D 1" "-D 2" "-F main" "-F fork" "-N fork" "-N main"; do
	check_eq "--chrome $o of a trace with a fork: every B has its E" \
		"$("$NEEDLE" dump -i "$T/f.data" --chrome $o | balance)" 0
done
child=$(trace_tids "$T/f.data" | sed -n 2p)
parent=$(trace_tids "$T/f.data" | sed -n 1p)
# -D counts the child's levels from the outermost call it inherits, in
# the text dump as in --chrome and replay: at -D 1, only depth 0.
check_eq "dump -D 1: the forked child's lines are at depth 0 only" \
	"$("$NEEDLE" dump -i "$T/f.data" -D 1 | grep -c " $child: .*depth: [1-9]")" 0
# -N main: the child goes on inside main, which hides what it does there.
check_eq "dump --chrome -N main: nothing of the child's first life (it runs inside main)" \
	"$("$NEEDLE" dump -i "$T/f.data" --chrome -N main | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["traceEvents"] if e.get("tid") == int(sys.argv[1]) and e["ph"] in "BE"))' "$child")" 0
# The child is a process of its own in the exports, as info --task says.
# (It exec's: two lives of its tid, each names the process.)
check_eq "--chrome: the child's events are its own process's (pid = its tid), named once a life" \
	"$("$NEEDLE" dump -i "$T/f.data" --chrome | python3 -c '
import json, sys
evs = json.load(sys.stdin)["traceEvents"]
print(sorted({e["pid"] for e in evs if e.get("tid") == int(sys.argv[1])}),
      sum(1 for e in evs if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == int(sys.argv[1])))' "$child")" \
	"[$child] 2"
"$NEEDLE" export --format=perfetto -i "$T/f.data" -o "$T/f.pf" 2>/dev/null
protoc --decode_raw <"$T/f.pf" >"$T/f.pfraw"
check_eq "perfetto: a process track for the parent and one for the child" \
	"$(awk '/^    3 \{/ { p = 1; next } p && /^      1: / { print $2; p = 0 }' "$T/f.pfraw" | sort -n | tr '\n' ' ')" \
	"$(printf '%s\n' "$parent" "$child" | sort -n | tr '\n' ' ')"
check_eq "perfetto: the child's thread track is in the child's process" \
	"$(awk -v c="$child" '/^    4 \{/ { t = 1; pid = ""; next } t && /^      1: / { pid = $2 } t && /^      2: / { if ($2 == c) print pid; t = 0 }' "$T/f.pfraw" | sort -u)" "$child"
view_refused "dump with two output forms" 2 "one of --chrome" "$NEEDLE" dump -i "$T/g.data" --chrome --graphviz

# -t TIME: only the calls that lasted TIME or more (and so the calls they
# are in), entries written once their exits say so.  subtrees' slow sleeps
# 3 ms (slow > nap > usleep, under main); every call shown must last 2 ms.
env -u NEEDLE_SITES "$NEEDLE" record -o "$T/sb.data" -- "$PROGS/subtrees" >/dev/null 2>&1
"$NEEDLE" dump -i "$T/sb.data" -t 2ms >"$T/dt"
check_eq "-t 2ms: main, slow, nap and usleep among the entries, in that order" \
	"$(grep '\[entry\]' "$T/dt" | awk '{ sub(/\(.*/, "", $4); print $4 }' | grep -x -e main -e slow -e nap -e usleep | tr '\n' ' ')" \
	"main slow nap usleep "
check_eq "-t 2ms: as many exits as entries" "$(grep -c '\[exit \]' "$T/dt")" "$(grep -c '\[entry\]' "$T/dt")"
python3 - "$T/dt" >"$T/dtcheck" <<'PY'
import sys
stack, bad = [], 0
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) < 4 or f[2] not in ('[entry]', '[exit'):
        continue
    t = int(f[0].replace('.', ''))
    if f[2] == '[entry]':
        stack.append(t)
    elif stack:
        bad += t - stack.pop() < 2000000
print(bad)
PY
check_eq "-t 2ms: every call written lasted 2 ms or more, in entry-before-exit order" "$(cat "$T/dtcheck")" 0
"$NEEDLE" dump -i "$T/sb.data" -t 2ms --chrome >"$T/dtc.json"
check_eq "--chrome -t 2ms: the same calls, each B with its E" \
	"$(python3 -c "
import json, sys
e = [x for x in json.load(open(sys.argv[1]))['traceEvents'] if x['ph'] in 'BE']
b = [x['name'] for x in e if x['ph'] == 'B']
print(len(b) == len(e) - len(b), ' '.join(n for n in b if n in ('main', 'slow', 'nap', 'usleep')))" "$T/dtc.json")" \
	"True main slow nap usleep"
view_refused "dump -t nonsense" 2 "takes a duration" "$NEEDLE" dump -i "$T/sb.data" -t later
view_refused "dump --flame-graph -t" 2 "whole trace" "$NEEDLE" dump -i "$T/sb.data" --flame-graph -t 1ms
