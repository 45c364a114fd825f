#!/usr/bin/env bash
# test_views_report - what report and info say about a trace: a function
# tracer trace is reported as counts (it has no durations), info quotes the
# command line so that a shell reads back the same arguments, and names
# each thread by its own name (the one it set), not the program's.
. "$(dirname "$0")/../lib.sh"

# The function tracer records entries only: no time columns.
"$NEEDLE" record -t function -o "$T/fn.data" -- "$PROGS/threads" 2 100 >/dev/null 2>&1
"$NEEDLE" report -i "$T/fn.data" >"$T/fn.report"
check_eq "function tracer: report has no time column" "$(grep -c ' us \| ms \|Total time' "$T/fn.report")" 0
check_eq "function tracer: report lists calls and names" "$(awk 'NR > 2 {print $2, $1}' "$T/fn.report" | sort | tr '\n' ' ')" \
	"main 1 step 400 thread_main 2 work 200 "
check_eq "function tracer: csv has counts only" "$("$NEEDLE" report --csv -s name -i "$T/fn.data")" \
"function,calls
main,1
step,400
thread_main,2
work,200"
check "function_graph: report still has times" grep -q 'Total time' <("$NEEDLE" report -i "$(dirname "$0")/data/views_v1.data")

# --task: a row per thread (uftrace's report --task), its calls counted.
"$NEEDLE" record -o "$T/tk.data" -- "$PROGS/threads" 2 100 >/dev/null 2>&1
check_eq "--task --csv: main's thread 1 call, each worker 301 (thread_main, 100 work, 200 step)" \
	"$("$NEEDLE" report -i "$T/tk.data" --task --csv | awk -F, 'NR > 1 { print $3 }' | sort -n | tr '\n' ' ')" "1 301 301 "
check_eq "--task: the outermost calls' time is the thread's total (each worker: its one thread_main)" \
	"$("$NEEDLE" report -i "$T/tk.data" --task --csv | awk -F, 'NR > 1 && $3 == 301 { print ($4 == $8) }' | tr -d '\n')" "11"
# -r: the calls that began in the range, counted whole.  The bound lies
# between two work() calls replay -f time shows, the 70th and the next
# later one (each thread calls it 100 times): report counts exactly the
# work calls replay shows before it, and after.
"$NEEDLE" replay -i "$T/tk.data" -f time | awk '/work\(\)/ { print $1 }' | sort -n >"$T/tk.work"
read -r before mid < <(awk '{ t[NR] = $1 } END { for (k = 70; k < NR; k++) if (t[k + 1] - t[k] >= 2e-9) {
	printf "%d %.10f\n", k, (t[k] + t[k + 1]) / 2; exit } }' "$T/tk.work")
check_eq "report -r ~T: the work calls begun by T ($before of 200)" \
	"$("$NEEDLE" report -i "$T/tk.data" -r "~$mid" --csv | awk -F, '$1 == "work" { print $2 }')" "$before"
check_eq "report -r T~: the rest" \
	"$("$NEEDLE" report -i "$T/tk.data" -r "$mid~" --csv | awk -F, '$1 == "work" { print $2 }')" "$((200 - before))"
check_eq "report -r 0~: every call" "$("$NEEDLE" report -i "$T/tk.data" -r 0~ --csv | md5sum)" \
	"$("$NEEDLE" report -i "$T/tk.data" --csv | md5sum)"
view_refused "report -r with no ~" 2 "START~END" "$NEEDLE" report -i "$T/tk.data" -r 5ms
check "report --task -r T~: each thread's total is at least its self time (the outermost calls in the range)" \
	awk -F, 'NR > 1 { if ($4 < $5) bad = 1 } END { exit bad }' <("$NEEDLE" report -i "$T/tk.data" --task -r "$mid~" --csv)
check_eq "report --task -r T~: its calls are report -r T~'s" \
	"$("$NEEDLE" report -i "$T/tk.data" --task -r "$mid~" --csv | awk -F, 'NR > 1 { n += $3 } END { print n }')" \
	"$("$NEEDLE" report -i "$T/tk.data" -r "$mid~" --csv | awk -F, 'NR > 1 { n += $2 } END { print n }')"

# A program killed while its threads ran: their outermost calls never
# returned; each thread's total is still no less than its self time
# (the time of its calls inside, which the trace holds).
"$NEEDLE" record -o "$T/kill.data" -- "$BUILD/tests/attach/ticker" 100000 >/dev/null 2>"$T/kill.err" &
krec=$!
wait_for sh -c "pgrep -f '^$BUILD/tests/attach/ticker 100000' >/dev/null"
sleep 0.3
kill -KILL "$(pgrep -f "^$BUILD/tests/attach/ticker 100000" | head -1)"
wait "$krec"
check_eq "--task, a killed program: 5 threads, each with a total no less than its self time (and not 0)" \
	"$("$NEEDLE" report -i "$T/kill.data" --task --csv | awk -F, 'NR > 1 { n++; if ($4 < $5 || $4 == 0) bad++ } END { print n, bad + 0 }')" "5 0"

check_eq "--task -f tid,func: the tid column, then the calls and the name" \
	"$("$NEEDLE" report -i "$T/tk.data" --task -f tid,func | awk 'NR > 2 { print $2 }' | sort -n | tr '\n' ' ')" "1 301 301 "
check_eq "--task: the tids are the trace's threads" \
	"$("$NEEDLE" report -i "$T/tk.data" --task -f tid | awk 'NR > 2 { print $1 }' | sort | tr '\n' ' ')" \
	"$("$NEEDLE" report -i "$T/tk.data" --task --csv | awk -F, 'NR > 1 { print $1 }' | sort | tr '\n' ' ')"
view_refused "report --task --diff" 2 "a row per thread" "$NEEDLE" report -i "$T/tk.data" --task --diff "$T/tk.data"
view_refused "report -f tid without --task" 2 "unknown field" "$NEEDLE" report -i "$T/tk.data" -f tid

# The command line, quoted: eval of what info prints gives back the
# arguments, spaces, quotes, dollars and control characters included.
args=("x y" "it's" "" 'a$b' $'tab\there' 'back\slash')
"$NEEDLE" record -o "$T/args.data" -- "$PROGS/views_deep" 1 10 3 "${args[@]}" >/dev/null 2>&1
line=$("$NEEDLE" info -i "$T/args.data" | sed -n 's/^command: *//p')
check_eq "info: the command line is one line" "$("$NEEDLE" info -i "$T/args.data" | grep -c '^command:')" 1
eval "set -- $line"
check_eq "info: the command line reads back as 10 arguments" "$#" 10
shift 4
ok=yes
for a in "${args[@]}"; do
	[ "$1" = "$a" ] || ok="no: '$1' for '$a'"
	shift
done
check_eq "info: every argument reads back unchanged" "$ok" yes
check "info: plain arguments are not quoted" grep -q "views_deep 1 10 3 'x y'" <<<"$line"

# Thread names: each thread names itself deep-N after its first call; the
# reader drains only at the end, when the threads are gone, so only the
# chunks can tell their names.
"$NEEDLE" record --poll=60000 --chunk-size=1 -o "$T/names.data" -- "$PROGS/views_deep" 3 200 5 >/dev/null 2>&1
"$NEEDLE" info -i "$T/names.data" >"$T/names.info"
check_eq "info: each thread shows the name it set" \
	"$(awk '/^ *TID/ { rows = 1; next } /^$/ { rows = 0 } rows { print $NF }' "$T/names.info" | sort | tr '\n' ' ')" \
	"deep-0 deep-1 deep-2 views_deep "
check_eq "folded: threads are labelled with their own names" \
	"$("$NEEDLE" export --format=folded -i "$T/names.data" -o - | cut -d- -f1,2 | sed 's/-[0-9]*;.*//' | sort -u | tr '\n' ' ')" \
	"deep-0 deep-1 deep-2 views_deep "

# ---- uftrace's report options, on graph_prog's known calls ----
"$NEEDLE" record -o "$T/g.data" --libcall=none -- "$PROGS/graph_prog" 3 >/dev/null 2>&1
rep() { "$NEEDLE" report -i "$T/g.data" "$@"; }
check_eq "report: the calls just before the function, uftrace's place" \
	"$(rep | awk 'NR > 2 { print $NF ":" $(NF-1) }' | sort | tr '\n' ' ')" \
	"fan:3 leaf:22 main:1 mid:7 other:1 rec:4 worker:1 "
check_eq "report: the default columns, uftrace's" "$(rep | head -1 | tr -s ' ')" \
	" Total time Self time Calls Function"
check_eq "-f call: the calls and the function only" "$(rep -f call -s name | awk 'NR > 2' | tr -s ' ' | tr '\n' '/')" \
	" 3 fan/ 22 leaf/ 1 main/ 7 mid/ 1 other/ 4 rec/ 1 worker/"
check_eq "-f none: the function alone, no header (uftrace's)" "$(rep -f none -s name | tr -d ' ' | tr '\n' ' ')" \
	"fan leaf main mid other rec worker "
check_eq "-f self,total: in that order" "$(rep -f self,total | head -1 | tr -s ' ')" " Self time Total time Function"
check_eq "-f +self-max: the default and one more" "$(rep -f +self-max | head -1 | tr -s ' ')" \
	" Total time Self time Calls Self max Function"
check_eq "--avg-total: uftrace's three columns" "$(rep --avg-total | head -1 | tr -s ' ')" \
	" Total avg Total min Total max Function"
check_eq "--avg-self: the self times'" "$(rep --avg-self | head -1 | tr -s ' ')" " Self avg Self min Self max Function"
# -s with several keys: calls first, ties by name.
check_eq "-s call,func: by calls, ties by name" "$(rep -s call,func | awk 'NR > 2 { print $NF }' | tr '\n' ' ')" \
	"leaf mid rec fan main other worker "
check_eq "-s self-max: the column in decreasing order" \
	"$(rep -s self-max -f self-max | awk 'NR > 2 { v = $1 * ($2 == "s" ? 1e9 : $2 == "ms" ? 1e6 : 1e3)
		if (NR > 3 && v > last) bad++; last = v } END { print bad + 0 }')" 0
check_eq "-F fan: fan's subtree only" "$(rep -F fan -s name | awk 'NR > 2 { print $NF ":" $(NF-1) }' | tr '\n' ' ')" \
	"fan:3 leaf:18 mid:6 "
check_eq "-N fan -N rec: the rest" "$(rep -N fan -N rec -s name | awk 'NR > 2 { print $NF ":" $(NF-1) }' | tr '\n' ' ')" \
	"leaf:1 main:1 mid:1 other:1 worker:1 "
check_eq "-F main -D 2: main and what it calls" "$(rep -F main -D 2 -s name | awk 'NR > 2 { print $NF ":" $(NF-1) }' | tr '\n' ' ')" \
	"fan:2 main:1 other:1 rec:1 "
check_eq "a recursion's total is its outermost calls' (uftrace's, perf's): rec's total is its self time and leaf's" \
	"$(rep --csv -F rec | awk -F, '$1 == "rec" { t = $3 } $1 == "rec" || $1 == "leaf" { s += $4 } END { print (t == s) }')" 1
check_eq "-F fan: fan's total is the full report's" "$(rep -F fan | awk '$NF == "fan" { print $1, $2 }')" \
	"$(rep | awk '$NF == "fan" { print $1, $2 }')"
check_eq "report PROGRAM: the recorded program's name is taken, as uftrace takes it" \
	"$(rep graph_prog | md5sum)" "$(rep | md5sum)"
view_refused "report with another program's name" 2 "unexpected argument 'ls'" "$NEEDLE" report -i "$T/g.data" ls
view_refused "report -s with an unknown key" 2 "unknown sort key 'bogus'" "$NEEDLE" report -i "$T/g.data" -s total,bogus
view_refused "report -f with an unknown field" 2 "unknown field 'bogus'" "$NEEDLE" report -i "$T/g.data" -f bogus
view_refused "report --avg-total --avg-self" 2 "not both" "$NEEDLE" report -i "$T/g.data" --avg-total --avg-self
view_refused "report -D 0" 2 "-D takes a depth" "$NEEDLE" report -i "$T/g.data" -D 0
for d in 0 -1 99999999999999999999; do
	view_refused "replay -D $d" 2 "depth needs a positive number" "$NEEDLE" replay -i "$T/g.data" -D "$d"
done

# ---- report --diff: two runs of graph_prog, rec(3) and rec(6), the second without other() ----
"$NEEDLE" record -o "$T/g6.data" --libcall=none -N other -- "$PROGS/graph_prog" 6 >/dev/null 2>&1
diffrep() { "$NEEDLE" report -i "$T/g.data" --diff "$T/g6.data" "$@"; }
check_eq "--diff: the calls' differences, by function (other and its calls gone in the second)" \
	"$(diffrep -f call -s name | awk '!/^#/ && NR > 7 { print $NF ":" $1 }' | tr '\n' ' ')" \
	"fan:+0 leaf:+2 main:+0 mid:-1 other:-1 rec:+3 worker:+0 "
check_eq "--diff -s call: the largest difference first, ties by name" \
	"$(diffrep -f call -s call | awk '!/^#/ && NR > 7 { print $NF }' | tr '\n' ' ')" \
	"rec leaf mid other fan main worker "
check_eq "--diff --diff-policy full: base, other and difference" \
	"$(diffrep -f call --diff-policy full | awk '$NF == "rec" { print $1, $2, $3 }')" "4 7 +3"
check_eq "--diff: the header names both traces" "$(diffrep | grep -c -e "base: $T/g.data" -e "diff: $T/g6.data")" 2
check_eq "--diff: a total's difference is the second's minus the first's (main, ns)" \
	"$(diffrep -f total --diff-policy full,no-percent | awk '$NF == "main" { print $5, $6 }')" \
	"$(a=$("$NEEDLE" report --csv -i "$T/g.data" | awk -F, '$1 == "main" { print $3 }')
	   b=$("$NEEDLE" report --csv -i "$T/g6.data" | awk -F, '$1 == "main" { print $3 }')
	   d=$((b - a)); s=+; [ $d -lt 0 ] && { s=-; d=$((-d)); }
	   if [ $d -ge 1000000 ]; then printf '%s%.3f ms' $s "$(echo "$d / 1000000" | bc -l)"
	   else printf '%s%d.%03d us' $s $((d / 1000)) $((d % 1000)); fi)"
check_eq "--diff-policy percent: times as a percentage of the base's" \
	"$(diffrep -f self --diff-policy percent | awk '$NF == "other" { print $1 }')" "-100.00%"
view_refused "--diff of a missing trace" 1 "nosuch.data" "$NEEDLE" report -i "$T/g.data" --diff "$T/nosuch.data"
view_refused "--diff-policy with an unknown word" 2 "unknown --diff-policy 'bogus'" \
	"$NEEDLE" report -i "$T/g.data" --diff "$T/g6.data" --diff-policy bogus
view_refused "--diff with --csv" 2 "not with --csv" "$NEEDLE" report -i "$T/g.data" --diff "$T/g6.data" --csv
view_refused "--sort-column 3" 2 "--sort-column takes 0" "$NEEDLE" report -i "$T/g.data" --diff "$T/g6.data" --sort-column 3

# -t TIME: only the calls that lasted that long; --no-libcall.
long=$(rep --csv | awk -F, '$1 == "main" { print int($7 / 1000) }')
check_eq "-t: only calls of at least TIME: main's $long us, and not leaf's" \
	"$(rep -t "${long}us" -s name | awk 'NR > 2 { print $NF }' | grep -c -e '^main$' -e '^leaf$')" 1
check_eq "-t 1s: no call lasted so long" "$(rep -t 1s | awk 'NR > 2' | wc -l)" 0
view_refused "report -t nonsense" 2 "-t takes a duration" "$NEEDLE" report -i "$T/g.data" -t soon
env -u NEEDLE_SITES "$NEEDLE" record -o "$T/l.data" -- "$PROGS/graph_prog" 3 >/dev/null 2>&1
check "with library calls: report lists pthread_create" sh -c "'$NEEDLE' report -i '$T/l.data' | grep -q ' pthread_create$'"
check_eq "--no-libcall: no library function, the program's all there" \
	"$("$NEEDLE" report -i "$T/l.data" --no-libcall -s name | awk 'NR > 2 { print $NF ":" $(NF-1) }' | tr '\n' ' ')" \
	"fan:3 leaf:22 main:1 mid:7 other:1 rec:4 worker:1 "

# info --task: uftrace's task list, threads in the order they began.
pid=$("$NEEDLE" info -i "$T/g.data" | awk '/^pid:/ { print $2 }')
check_eq "info --task: the program's thread first (F: a process's first, S: the session's), then its worker" \
	"$("$NEEDLE" info --task -i "$T/g.data" | awk 'NR > 1 { f = substr($0, 27, 5); gsub(/ /, "", f); print (f == "" ? "-" : f), $NF == "MB" ? $(NF-2) : $NF }' | tr '\n' ' ')" \
	"FS graph_prog - graph_prog "
check_eq "info --task: the program's tid" "$("$NEEDLE" info --task -i "$T/g.data" | sed -n '2s/.*\[ *\([0-9]*\)\].*/\1/p')" "$pid"
env -u NEEDLE_SITES "$NEEDLE" record -o "$T/x.data" -- "$PROGS/exec_prog" fork >/dev/null 2>&1
check_eq "info --task: a forked child that execs: F, then its program's FS" \
	"$("$NEEDLE" info --task -i "$T/x.data" | awk 'NR > 1 { f = substr($0, 27, 5); gsub(/ /, "", f); print f }' | tr '\n' ' ')" \
	"FS F FS "

# A recursion's average is its calls' (every call, not the outermost):
# between its shortest and its longest.
check "report: rec's average between its min and max" sh -c "'$NEEDLE' report --csv -i '$T/g.data' | awk -F, '\$1 == \"rec\" { exit !(\$5 >= \$6 && \$5 <= \$7) }'"
# Columns do not change with what the filters leave.
check_eq "report -t 1s: no row, the same columns" "$(rep -t 1s | head -1 | tr -s ' ')" \
	" Total time Self time Calls Function"
check_eq "report -t 1s --csv: the same header" "$(rep -t 1s --csv | head -1)" \
	"function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns"
check_eq "--diff -t: the filter applies to both traces (no call of 1 s in either)" \
	"$(diffrep -t 1s -f call | awk '!/^#/ && NR > 7' | wc -l)" 0
view_refused "--diff-policy without --diff" 2 "are --diff's" "$NEEDLE" report -i "$T/g.data" --diff-policy full

# --srcline: each function's file and line (DWARF), the ones replay --srcline gives.
"$NEEDLE" record -o "$T/gs.data" --libcall=none -- "$PROGS/graph_prog" 3 >/dev/null 2>&1
check_eq "--srcline: each function's [file:line], as replay --srcline says it" \
	"$("$NEEDLE" report -i "$T/gs.data" --srcline -s name | awk 'NR > 2 { print $(NF-1), $NF }' | tr '\n' ' ')" \
	"$("$NEEDLE" replay -i "$T/gs.data" --srcline | sed -n 's/.*| *\([a-z_]*\)[(].*\/\* \(.*\) \*\/$/\1 [\2]/p' | sort -u | tr '\n' ' ')"
check_eq "--srcline: the header says so" "$("$NEEDLE" report -i "$T/gs.data" --srcline | head -1 | tr -s ' ')" \
	" Total time Self time Calls Function [Source]"
