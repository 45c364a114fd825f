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
	"$(awk '/^ *TID/ { rows = 1; next } rows { print $NF }' "$T/names.info" | sort | tr '\n' ' ')" \
	"deep-0 deep-1 deep-2 views_deep "
check_eq "folded: threads are labelled with their own names" \
	"$("$NEEDLE" export --format=folded -i "$T/names.data" -o - | cut -d- -f1,2 | sed 's/-[0-9]*;.*//' | sort -u | tr '\n' ' ')" \
	"deep-0 deep-1 deep-2 views_deep "
