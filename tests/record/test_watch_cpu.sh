#!/usr/bin/env bash
# test_watch_cpu - needle record -W cpu (uftrace's --watch): a recorded
# call notes the CPU its thread runs on when that changed since the
# thread's last recorded event, and replay shows it as uftrace does, a
# comment inside the call.  cpu_hop pins itself to each CPU it may use in
# turn before each call of work() and prints where work() ran: the notes
# must say the same, one per move, none when it stays.  Values recorded
# with -A stay values; -W takes cpu only.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/cpu_hop"
N=12

"$NEEDLE" record -W cpu -F work -A 'work@arg1' -o "$T/w.data" -- "$P" $N >"$T/out" 2>"$T/err"
st=$?; check_eq "record -W cpu: exit 0 ($(head -c 200 "$T/err"))" "$st" 0
check_eq "the program's output: $N lines" "$(wc -l <"$T/out")" $N
"$NEEDLE" replay -i "$T/w.data" | sed 's/^[^|]*| //' >"$T/g"
# What the program saw, as the notes a call gets: one where the CPU
# changed from the previous call's (the first call always: the thread's
# first event).
awk 'NR == 1 || $1 != prev { printf "work(%d) { /* watch:cpu (cpu=%d) */ }\n", NR - 1, $1; prev = $1; next }
	{ printf "work(%d);\n", NR - 1; prev = $1 }' "$T/out" >"$T/want"
grep -v '^#' "$T/g" | tr -s ' ' | sed 's/^ //' | tr '\n' '#' | sed 's/ {#\/\*/ { \/*/g; s/\*\/#}[^#]*#/*\/ }\n/g; s/;#/;\n/g' | sed '/^$/d' >"$T/got"
check_eq "each call's note is the CPU it ran on, at each move and never else" "$(cat "$T/got")" "$(cat "$T/want")"
cpus=$(sort -u "$T/out" | wc -l)
if [ "$cpus" -ge 2 ]; then
	check_eq "the thread moved at every call ($cpus CPUs): $N notes" "$(grep -c 'watch:cpu' "$T/g")" $N
else
	check_eq "one CPU: the first call's note only" "$(grep -c 'watch:cpu' "$T/g")" 1
fi
check "-A's value is shown as before, the note is no value" grep -q '^work(3) {' "$T/g"
check_eq "tree view (-D 2): the same notes" "$("$NEEDLE" replay -D 2 -i "$T/w.data" | grep -c 'watch:cpu')" "$(grep -c 'watch:cpu' "$T/g")"
check_eq "report: work called $N times, the notes change nothing" "$(calls "$T/w.data" work)" $N

"$NEEDLE" record -F work -o "$T/n.data" -- "$P" $N >/dev/null 2>&1
check_eq "without -W: no note" "$("$NEEDLE" replay -i "$T/n.data" | grep -c watch)" 0
check_eq "without -W: every call one line" "$("$NEEDLE" replay -i "$T/n.data" | grep -c 'work();')" $N

bad_input "-W of a point needle does not watch" "watches cpu" -W memory
bad_input "-W with an empty list" "needs a point" -W ,

# The function tracer (entries only): the same notes, after each entry.
"$NEEDLE" record -W cpu -t function -F work -o "$T/f.data" -- "$P" $N >"$T/fout" 2>/dev/null
check_eq "-t function: one note per move, as many as with function_graph" \
	"$("$NEEDLE" replay -i "$T/f.data" | grep -c 'watch:cpu')" "$(awk 'NR == 1 || $1 != p { n++ } { p = $1 } END { print n }' "$T/fout")"

# A forked child's thread: its first event notes its CPU (the parent's
# last note is not its own).
"$NEEDLE" record -W cpu -F work -F main -o "$T/k.data" -- "$P" 1 fork >"$T/kout" 2>/dev/null
child=$(trace_tids "$T/k.data" | tail -1)
check_eq "a forked child: its own note, the CPU it printed" \
	"$("$NEEDLE" replay --tid "$child" -i "$T/k.data" | grep -o 'watch:cpu (cpu=[0-9]*)')" "watch:cpu (cpu=$(cat "$T/kout"))"

# The flight recorder: a thread that never moves keeps its note in the
# snapshot, though the ring overwrote its first event's chunk: each chunk
# notes the CPU again, and replay shows the first of equal notes only.
"$NEEDLE" record -W cpu --snapshot=1 -F work -o "$T/s.data" -- "$P" 400000 stay >"$T/sout" 2>/dev/null
check "snapshot: the first chunk was overwritten (fewer than 400000 calls kept)" \
	test "$(calls "$T/s.data" work)" -lt 400000
check "snapshot: the raw events note the CPU more than once (a note per chunk)" \
	test "$("$NEEDLE" dump -i "$T/s.data" | grep -c 'watch:cpu')" -gt 1
check_eq "snapshot: replay shows one note, the CPU the program ran on" \
	"$("$NEEDLE" replay -i "$T/s.data" | grep -o 'watch:cpu (cpu=[0-9]*)' | sort | uniq -c | awk '{ print $1, $NF }')" \
	"1 (cpu=$(cat "$T/sout"))"
check_eq "snapshot: the tree view (-D 1) shows that one note too" \
	"$("$NEEDLE" replay -D 1 -i "$T/s.data" | grep -c 'watch:cpu')" 1

# The exports carry the notes: chrome's event args "cpu", perfetto's
# debug annotation "cpu" (uint_value), the Python module's ev.cpu; each
# the same CPUs, in the same order, as replay's notes.
want_cpus=$(grep -o 'watch:cpu (cpu=[0-9]*)' "$T/g" | tr -dc '0-9\n')
"$NEEDLE" export --format=chrome -i "$T/w.data" -o "$T/w.json" 2>/dev/null
check_eq "chrome: each note an event's args.cpu" "$(python3 -c '
import json, sys
evs = json.load(open(sys.argv[1]))
evs = evs["traceEvents"] if isinstance(evs, dict) else evs
print("\n".join(str(e["args"]["cpu"]) for e in evs if "cpu" in e.get("args", {})))' "$T/w.json")" "$want_cpus"
"$NEEDLE" export --format=perfetto -i "$T/w.data" -o "$T/w.pftrace" 2>/dev/null
check_eq "perfetto: each note a debug annotation cpu=N" "$(python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
key = b"\x52\x03cpu\x18"  # name (10) "cpu", then uint_value (3)
at = b.find(key)
while at >= 0:
    at += len(key); v = s = 0
    while True:
        c = b[at]; at += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: break
    print(v)
    at = b.find(key, at)' "$T/w.pftrace")" "$want_cpus"
check_eq "python: each note an event's ev.cpu" "$(PYTHONPATH="$BUILD/python" python3 -c '
import needle, sys
print("\n".join(str(e.cpu) for e in needle.open(sys.argv[1]).events() if e.cpu is not None))' "$T/w.data")" "$want_cpus"

# A move inside a call the view hides: the first line shown after it
# notes the CPU.  Recorded whole, cpu_hop moves inside pin()'s
# sched_setaffinity; with -N pin, each work() that runs on another CPU
# than the last note shown says so, and no other line does.
"$NEEDLE" record -W cpu -o "$T/h.data" -- "$P" $N >"$T/hout" 2>/dev/null
"$NEEDLE" replay -N pin -i "$T/h.data" | sed 's/^[^|]*| //' >"$T/hg"
first=$(grep -m1 -o 'cpu=[0-9]*' "$T/hg" | tr -dc '0-9')
check_eq "-N pin: the notes inside work() are its moves, as the program saw them" \
	"$(grep -A1 '^ *work() {' "$T/hg" | grep -o 'cpu=[0-9]*' | tr -dc '0-9\n')" \
	"$(awk -v p="$first" '$1 != p { print $1; p = $1 }' "$T/hout")"
check_eq "-N pin: no note elsewhere but main's first" \
	"$(grep -c 'watch:cpu' "$T/hg")" \
	"$((1 + $(awk -v p="$first" '$1 != p { n++; p = $1 } END { print n + 0 }' "$T/hout")))"
