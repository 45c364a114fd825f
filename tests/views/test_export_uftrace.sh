#!/usr/bin/env bash
# test_export_uftrace - needle export --format=uftrace writes a uftrace
# data directory that Debian's uftrace reads: its replay of the export is
# needle's replay line for line (durations and tids left out, as uftrace's
# own suite compares), its graph is needle graph's, its report counts the
# same calls; threads, a forked child that execs, a trace recorded with -p
# from a binary built without flags, a recursion deeper than uftrace's
# depth field; bad output directories refused, nothing left half-written.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/graph_prog"
COLS="$(dirname "$0")/replay_columns.py"

if ! command -v uftrace >/dev/null; then
	fail "uftrace is not installed (scripts/setup.sh installs it)"
	exit 0
fi

# same_replay NAME TRACE DIR: uftrace's replay of DIR is needle's of TRACE.
same_replay() {
	"$NEEDLE" replay -i "$2" >"$T/n.txt" 2>"$T/n.err"
	uftrace replay -d "$3" >"$T/u.txt" 2>"$T/u.err"
	check_eq "$1: uftrace replay reads the export (exit 0)" "$?" 0
	python3 "$COLS" "$T/n.txt" >"$T/n.cols"
	python3 "$COLS" "$T/u.txt" >"$T/u.cols"
	check "$1: a graph to compare ($(wc -l <"$T/n.cols") lines)" test -s "$T/n.cols"
	check_eq "$1: uftrace's replay of the export is needle's, line for line" \
		"$(diff "$T/n.cols" "$T/u.cols" >/dev/null && echo same || diff "$T/n.cols" "$T/u.cols" | head -6)" same
}

# ---- threads ----
"$NEEDLE" record -o "$T/g.data" --libcall=none -- "$P" 3 >/dev/null 2>"$T/err"
st=$?
check_eq "graph_prog recorded ($(tail -1 "$T/err"))" "$st" 0
"$NEEDLE" export -i "$T/g.data" --format=uftrace -o "$T/g.uftrace" 2>"$T/err"
st=$?
check_eq "export --format=uftrace: exit 0 ($(head -1 "$T/err"))" "$st" 0
check "export: the data directory's files" test -f "$T/g.uftrace/info" -a -f "$T/g.uftrace/task.txt" \
	-a -f "$T/g.uftrace/graph_prog.sym"
check_eq "export: a .dat file per thread" "$(ls "$T/g.uftrace" | grep -c '^[0-9]*\.dat$')" 2
check_eq "export: no temporary directory left" "$(ls -d "$T"/g.uftrace.tmp* 2>/dev/null | wc -l)" 0
same_replay "threads" "$T/g.data" "$T/g.uftrace"

# uftrace graph of the export: needle graph's, counts and paths.
strip_graph() { grep -v '^#' | sed -e 's/^[^:]*: //' -e 's/, time .*//' -e 's/ (0x[0-9a-f]*)$//'; }
for f in fan rec main ""; do
	check_eq "uftrace graph ${f:-(whole program)} of the export is needle graph's" \
		"$(uftrace graph -d "$T/g.uftrace" $f | strip_graph)" "$("$NEEDLE" graph -i "$T/g.data" $f | strip_graph)"
done
check_eq "uftrace report of the export: the calls of each function, needle report's" \
	"$(uftrace report -d "$T/g.uftrace" | awk 'NR > 2 { print $NF, $(NF-1) }' | sort)" \
	"$("$NEEDLE" report -i "$T/g.data" | awk 'NR > 2 { print $NF, $(NF-1) }' | sort)"
# The same to the display's last digit, which rounding may tip by one: the
# export's timestamps are whole nanoseconds, each rounded on its own.
ns_of() { awk '$NF == "main" { m = $2 == "s" ? 1e9 : $2 == "ms" ? 1e6 : $2 == "us" ? 1e3 : 1; printf "%.0f %s\n", $1 * m, m }'; }
read -r u_ns unit < <(uftrace report -d "$T/g.uftrace" | ns_of)
read -r n_ns _ < <("$NEEDLE" report -i "$T/g.data" | ns_of)
check "uftrace report of the export: main's total time, needle report's ($u_ns and $n_ns ns, to the last digit of $unit)" \
	awk -v a="${u_ns:-x}" -v b="${n_ns:-y}" -v u="${unit:-0}" 'BEGIN { d = a - b; exit !(a != "x" && b != "y" && (d < 0 ? -d : d) <= u / 1000 + 1) }'
uftrace info -d "$T/g.uftrace" >"$T/info" 2>&1
check_eq "uftrace info of the export: two tasks" "$(awk -F': ' '/number of tasks/ { print $2 }' "$T/info")" 2
check "uftrace info of the export: the exit status" grep -q "exit status *: exited with code: 0" "$T/info"
check "uftrace info of the export: the command line" grep -q "cmdline *: .*graph_prog 3" "$T/info"
check_eq "uftrace dump of the export: every event (entries and exits)" \
	"$(uftrace dump -d "$T/g.uftrace" | grep -c '\[\(entry\|exit \)\]')" \
	"$("$NEEDLE" info -i "$T/g.data" | awk '/^events:/ { print $2 }')"

# ---- a forked child that execs a program: one task per tid ----
NEEDLE_SITES=compiled "$NEEDLE" record -o "$T/f.data" -- "$PROGS/exec_prog" fork >/dev/null 2>"$T/err"
st=$?
check_eq "exec_prog fork recorded ($(tail -1 "$T/err"))" "$st" 0
"$NEEDLE" export -i "$T/f.data" -f uftrace -o "$T/f.uftrace"
check_eq "fork + exec: exported" "$?" 0
check_eq "fork + exec: a task per tid, the child's a FORK line" \
	"$(grep -c '^TASK ' "$T/f.uftrace/task.txt")/$(grep -c '^FORK ' "$T/f.uftrace/task.txt")" 1/1
check_eq "fork + exec: the FORK line's parent is the recorded process" \
	"$(sed -n 's/^FORK .* ppid=\([0-9]*\)$/\1/p' "$T/f.uftrace/task.txt")" \
	"$(sed -n 's/^TASK .* pid=\([0-9]*\)$/\1/p' "$T/f.uftrace/task.txt")"
check_eq "fork + exec: the exec'ed program's symbols apart from the first's" \
	"$(ls "$T/f.uftrace" | grep -c '^exec_prog.*\.sym$')" 2
same_replay "fork + exec" "$T/f.data" "$T/f.uftrace"

# ---- recorded with -p from a binary built without flags ----
"$BUILD/tests/attach/ticker_plain" 400 >"$T/tick.out" &
TP=$!
wait_for test -s "$T/tick.out"
env -u NEEDLE_SITES "$NEEDLE" record -p "$TP" -N tick_work -o "$T/p.data" 2>"$T/p.err" &
NP=$!
check "-p: recording began" wait_for grep -q "recording process $TP" "$T/p.err"
sleep 0.2
kill -INT "$NP"
wait "$NP"
check_eq "-p: needle record exits 0" "$?" 0
wait "$TP"
"$NEEDLE" export -i "$T/p.data" -f uftrace -o "$T/p.uftrace"
check_eq "-p: exported" "$?" 0
same_replay "-p of a binary built without flags" "$T/p.data" "$T/p.uftrace"

# ---- deeper than uftrace's 10-bit depth field: cut at 1,024 levels ----
"$NEEDLE" record -o "$T/d.data" -- "$PROGS/views_deep" 1 2 1100 >/dev/null 2>&1
"$NEEDLE" export -i "$T/d.data" -f uftrace -o "$T/d.uftrace" 2>"$T/d.err"
check_eq "1,100 deep: exported" "$?" 0
# The calls needle's replay shows at depth 1024 or more (two spaces a level).
deep=$("$NEEDLE" replay -i "$T/d.data" | awk '{ s = substr($0, index($0, "|") + 2); match(s, /^ */)
	if (RLENGTH / 2 >= 1024 && s ~ /\(\) \{$|\(\);$/) n++ } END { print n + 0 }')
check "1,100 deep: a warning counts the calls left out ($deep)" \
	grep -q "warning: $deep calls deeper than 1024 levels left out" "$T/d.err"
"$NEEDLE" replay -D 1024 -i "$T/d.data" >"$T/n.txt"
uftrace replay -d "$T/d.uftrace" >"$T/u.txt"
check_eq "1,100 deep: uftrace's replay of the export is needle's replay -D 1024" \
	"$(diff <(python3 "$COLS" "$T/n.txt") <(python3 "$COLS" "$T/u.txt") >/dev/null && echo same || echo differ)" same

# ---- bad output ----
view_refused "export to a directory that exists" 1 "exists: remove it" \
	"$NEEDLE" export -i "$T/g.data" -f uftrace -o "$T/g.uftrace"
check "the existing directory is untouched" test -f "$T/g.uftrace/info"
view_refused "export --format=uftrace to standard output" 2 "is a directory" \
	"$NEEDLE" export -i "$T/g.data" -f uftrace -o -
mkdir "$T/ro" && chmod 555 "$T/ro"
if [ "$(id -u)" != 0 ]; then
	view_refused "export into a directory it cannot write" 1 "cannot create" \
		"$NEEDLE" export -i "$T/g.data" -f uftrace -o "$T/ro/u"
fi
view_refused "export of a missing trace" 1 "nosuch.data" \
	"$NEEDLE" export -i "$T/nosuch.data" -f uftrace -o "$T/x.uftrace"
check "a refused export creates nothing" test ! -e "$T/x.uftrace"
# A damaged trace: no directory, and no temporary one left.
cp "$T/g.data" "$T/bad.data"
size=$(stat -c %s "$T/bad.data")
printf '\xff\xff\xff\xff' | dd of="$T/bad.data" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$NEEDLE" export -i "$T/bad.data" -f uftrace -o "$T/bad.uftrace" >/dev/null 2>&1
check "a damaged trace: refused" test $? -ne 0
check "a damaged trace: no directory passed off as whole" test ! -e "$T/bad.uftrace"
check_eq "a damaged trace: no temporary directory left" "$(ls -d "$T"/bad.uftrace.tmp* 2>/dev/null | wc -l)" 0
