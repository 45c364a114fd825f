#!/usr/bin/env bash
# test_args_views - the views that group and filter by recorded values:
# report --by-arg N|NAME (a row per function and value) and replay
# --ret-ne V / --ret-eq V (the calls whose return value differs from, or
# equals, V).  args_views_prog prints what it called (each key, how many
# times, what it returned): every expected row and line is derived from
# that, and compared exactly.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/args_views_prog"

"$NEEDLE" record -o "$T/a.data" -A 'lookup@arg1/d32' -R 'lookup@retval/d32' -A 'kv_get@arg1/s' \
	-A 'spread@arg1/d32' -A 'co_step@arg1/d32' -R 'co_step@retval/d32' -- "$P" >"$T/out" 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
pid=$(awk '$1 == "pid" { print $2 }' "$T/out")
spread=$(awk '$1 == "spread" { print $2 }' "$T/out")
check "the program says what it called" test -n "$pid" -a -n "$spread" -a "$(grep -c '^call lookup ' "$T/out")" = 10

# ---- report --by-arg ----

csv() { "$NEEDLE" report --csv -s name -i "$T/a.data" "$@"; }
csv >"$T/plain.csv"
csv --by-arg 1 >"$T/by1.csv"
check_eq "--by-arg 1: exit 0" "$?" 0
check_eq "--by-arg 1 --csv: a column for the value after function" "$(head -1 "$T/by1.csv")" \
	"function,arg1,calls,total_ns,self_ns,avg_ns,min_ns,max_ns"
# lookup: one row per key, with the calls the program made with it.
awk '$1 == "call" && $2 == "lookup" { print "lookup," $3 "," $4 }' "$T/out" | sort >"$T/want"
awk -F, '$1 == "lookup" { print $1 "," $2 "," $3 }' "$T/by1.csv" | sort >"$T/got"
check_eq "--by-arg 1: lookup, a row per key with its calls ($(wc -l <"$T/want") keys)" \
	"$(diff "$T/want" "$T/got" >/dev/null && echo same || diff "$T/want" "$T/got" | head -4)" same
check_eq "--by-arg 1: the key rows add up to lookup's calls" \
	"$(awk -F, '$1 == "lookup" { n += $3 } END { print n }' "$T/by1.csv")" \
	"$(awk -F, '$1 == "lookup" { print $2 }' "$T/plain.csv")"
check_eq "--by-arg 1: and to lookup's total time" \
	"$(awk -F, '$1 == "lookup" { n += $4 } END { print n }' "$T/by1.csv")" \
	"$(awk -F, '$1 == "lookup" { print $3 }' "$T/plain.csv")"
# Functions without the value keep their row, the same numbers.
for f in main co_entry; do
	check_eq "--by-arg 1: $f keeps its one row, unchanged" "$(grep "^$f,," "$T/by1.csv" | sed "s/^$f,,/$f,/")" \
		"$(grep "^$f," "$T/plain.csv")"
done
"$NEEDLE" report -i "$T/a.data" >"$T/plain.txt"
"$NEEDLE" report -i "$T/a.data" --by-arg 1 >"$T/by1.txt"
check_eq "--by-arg 1: main's line in the table, unchanged" "$(grep ' main$' "$T/by1.txt")" \
	"$(grep ' main$' "$T/plain.txt")"
check_eq "--by-arg 1: the table names rows lookup(arg1=KEY)" \
	"$(awk '$NF ~ /^lookup\(arg1=[0-9]+\)$/ { print $NF, $(NF-1) }' "$T/by1.txt" | sort | tr '\n' ' ')" \
	"$(awk '$1 == "call" && $2 == "lookup" { print "lookup(arg1=" $3 ")", $4 }' "$T/out" | sort | tr '\n' ' ')"
check_eq "--by-arg 1: no lookup row without its key" "$(grep -c ' lookup$' "$T/by1.txt")" 0
check_eq "--by-arg 1 -s calls: the key called most comes first" \
	"$("$NEEDLE" report -i "$T/a.data" --by-arg 1 -s calls | awk 'NR == 3 { print $NF }')" \
	"$(awk '$1 == "call" && $2 == "lookup" && $4 > n { n = $4; k = $3 } END { print "lookup(arg1=" k ")" }' "$T/out")"

# A name instead of a number: the same report.
check_eq "--by-arg arg1: the same table as --by-arg 1" \
	"$("$NEEDLE" report -i "$T/a.data" --by-arg arg1 | md5sum)" "$(md5sum <"$T/by1.txt")"
check_eq "--by-arg arg1 --csv: the same rows" "$(csv --by-arg arg1 | md5sum)" "$(md5sum <"$T/by1.csv")"

# Strings: the value as replay shows it; CSV quotes it.
check_eq "--by-arg 1: kv_get(arg1=\"user:42\") row and its calls" \
	"$(awk '$NF == "kv_get(arg1=\"user:42\")" { print $(NF-1) }' "$T/by1.txt")" \
	"$(awk '$1 == "call" && $2 == "kv_get" && $3 == "\"user:42\"" { print $4 }' "$T/out")"
# (Each CSV line ends with 6 numbers: the calls are the first of them.)
awk '$1 == "call" && $2 == "kv_get" { v = $3; gsub(/"/, "\"\"", v); print "kv_get,\"" v "\"," $4 }' "$T/out" |
	sort >"$T/want"
grep '^kv_get,' "$T/by1.csv" | sed -E 's/(,[0-9]+),[0-9]+,[0-9]+,[0-9]+,[0-9]+,[0-9]+$/\1/' | sort >"$T/got"
check_eq "--by-arg 1 --csv: string values quoted as CSV fields (a comma and a quote in one), with their calls" \
	"$(diff "$T/want" "$T/got" >/dev/null && echo same || diff "$T/want" "$T/got" | head -4)" same

# More values than report keeps rows for: the first 10000 have a row
# each, the rest share one.
check_eq "--by-arg 1: spread, 10000 rows of one call each" \
	"$(awk -F, '$1 == "spread" && $2 != "<other>" && $3 == 1 { n++ } END { print n }' "$T/by1.csv")" 10000
check_eq "--by-arg 1: the values past 10000 in one row, spread(arg1=<other>)" \
	"$(awk '$NF == "spread(arg1=<other>)" { print $(NF-1) }' "$T/by1.txt")" $((spread - 10000))
check_eq "--by-arg 1: the rows of their own are the first values called (0..9999)" \
	"$(awk -F, '$1 == "spread" && $2 != "<other>" { if ($2 > m) m = $2 } END { print m }' "$T/by1.csv")" 9999

# co_step(100) yields to main, which calls co_step(200) at the same depth
# before co_step(100) returns: each exit's time goes to its own entry's row.
read -r t100 min100 max100 <<<"$(awk -F, '$1 == "co_step" && $2 == 100 { print $4, $7, $8 }' "$T/by1.csv")"
read -r t200 min200 max200 <<<"$(awk -F, '$1 == "co_step" && $2 == 200 { print $4, $7, $8 }' "$T/by1.csv")"
check_eq "--by-arg 1: co_step(arg1=100) and (arg1=200): one timed call each" \
	"$t100 $t200" "$min100 $min200"
check_eq "--by-arg 1: their max too" "$t100 $t200" "$max100 $max200"
check "--by-arg 1: across a coroutine switch, co_step(100)'s time (spanning co_step(200)) in its own row ($t100 > $t200 ns)" \
	test "${t100:-0}" -gt "${t200:-0}"

# A name no call has: one warning, the usual report.
"$NEEDLE" report -i "$T/a.data" --by-arg key >"$T/key.txt" 2>"$T/key.err"
check_eq "--by-arg key (no such value): exit 0" "$?" 0
check_eq "--by-arg key: the usual report" "$(md5sum <"$T/key.txt")" "$(md5sum <"$T/plain.txt")"
check_eq "--by-arg key: one warning line" "$(grep -c 'no call .* has a value named key' "$T/key.err") $(wc -l <"$T/key.err")" "1 1"

# The function tracer: counts only, by value too.
"$NEEDLE" record -t function -o "$T/fn.data" -A 'lookup@arg1/d32' -- "$P" >/dev/null 2>&1
check_eq "function tracer --by-arg 1 --csv: counts by key" \
	"$("$NEEDLE" report --csv -i "$T/fn.data" --by-arg 1 | awk -F, 'NR == 1 || $1 == "lookup"' | sort | tr '\n' ' ')" \
	"$( (echo "function,arg1,calls"; awk '$1 == "call" && $2 == "lookup" { print "lookup," $3 "," $4 }' "$T/out") | sort | tr '\n' ' ')"

# ---- replay --ret-ne / --ret-eq ----

"$NEEDLE" replay --arg-names -i "$T/a.data" >"$T/replay"
# The lines expected: each call with a return value that compares as asked
# (op: != or ==, against v), as FUNCTION(arg1=VALUE) = RETURN;
expect() { # OP V
	awk -v op="$1" -v v="$2" '$1 == "call" && $5 != "-" && ((op == "!=") ? $5 != v : $5 == v) {
		for (i = 0; i < $4; i++) print $2 "(arg1=" $3 ") = " $5 ";" }' "$T/out" | sort
}
body() { sed 1d | sed 's/^.*| *//' | sort; }
body_all() { sed 's/^.*| *//' | sort; }
"$NEEDLE" replay --arg-names -i "$T/a.data" --ret-ne 0 >"$T/ne0"
check_eq "--ret-ne 0: exit 0" "$?" 0
check_eq "--ret-ne 0: the header, then one line per call that returned non-zero" \
	"$(sed 1d "$T/ne0" | wc -l)" "$(expect '!=' 0 | wc -l)"
check_eq "--ret-ne 0: those lines, each with its arguments and return value" \
	"$(body <"$T/ne0" | md5sum)" "$(expect '!=' 0 | md5sum)"
check_eq "--ret-ne 0: 30 failed lookups (odd keys) and 2 co_steps" "$(sed 1d "$T/ne0" | wc -l)" 32
check_eq "--ret-ne 0: each line as replay shows a leaf: duration, the program's thread, indented by depth" \
	"$(sed 1d "$T/ne0" | grep -cE "^ +[0-9]+\.[0-9]{3} [mu]?s \[ *$pid\] \|   [a-z_]+\(arg1=[0-9]+\) = -?[0-9]+;$")" 32
check_eq "--ret-ne 0: the lookups' lines are replay's own, in order" \
	"$(grep 'lookup(' "$T/ne0" | md5sum)" "$(grep -F ') = -1;' "$T/replay" | grep 'lookup(' | md5sum)"
check_eq "--ret-ne 0: co_step(arg1=100), returned after a coroutine switch, with its own argument and duration" \
	"$(grep -F 'co_step(arg1=100) = 101;' "$T/ne0" | awk '{ print $1, $2 }')" \
	"$(grep -F '} = 101; /* co_step */' "$T/replay" | awk '{ print $1, $2 }')"
# -t TIME: the calls that took TIME or more, in the tree with their
# callers and their values; every call takes 1ns or more, so every lookup
# is there, a leaf line with its argument and return value, as in the
# whole graph (a line is written once known to be shown: threads'
# lines interleave otherwise, each thread's in its order).
"$NEEDLE" replay --arg-names -i "$T/a.data" -t 1ns >"$T/t1"
by_thread() { grep 'lookup(' | awk -F'[][]' '{ print $2 "\t" $0 }' | sort -s -n -k1,1 | md5sum; }
check_eq "replay -t 1ns: every lookup, with its argument and return value, as in the whole graph" \
	"$(by_thread <"$T/t1")" "$(by_thread <"$T/replay")"
check_eq "replay -t 1ns: co_step, with a coroutine switch and no call of its own inside, one line" \
	"$(grep -c 'co_step(arg1=100) = 101;' "$T/t1")" 1
"$NEEDLE" replay --arg-names -i "$T/a.data" --ret-eq 0 >"$T/eq0"
check_eq "--ret-eq 0: the lookups of even keys, exactly" "$(body <"$T/eq0" | md5sum)" "$(expect '==' 0 | md5sum)"
check_eq "--ret-eq 0: 25 lines" "$(sed 1d "$T/eq0" | wc -l)" 25
check_eq "--ret-eq -1: the failed lookups" "$("$NEEDLE" replay --arg-names -i "$T/a.data" --ret-eq -1 | body | md5sum)" \
	"$(expect '==' -1 | md5sum)"
check_eq "--ret-eq 0x65: co_step(arg1=100) alone" "$("$NEEDLE" replay --arg-names -i "$T/a.data" --ret-eq 0x65 | body)" \
	"co_step(arg1=100) = 101;"
check_eq "--ret-eq 0xffffffff: none (retval/d32 is signed: -1)" \
	"$("$NEEDLE" replay --arg-names -i "$T/a.data" --ret-eq 0xffffffff | sed 1d | wc -l)" 0
check_eq "--ret-ne 0 -D 1: none (the calls are at depth 1)" \
	"$("$NEEDLE" replay --arg-names -i "$T/a.data" --ret-ne 0 -D 1 | sed 1d | wc -l)" 0
check_eq "--ret-ne 0 -D 2 --tid PID: all 32" \
	"$("$NEEDLE" replay --arg-names -i "$T/a.data" --ret-ne 0 -D 2 --tid "$pid" | sed 1d | wc -l)" 32

# An unsigned format: compared as unsigned.
"$NEEDLE" record -o "$T/x.data" -A 'lookup@arg1/d32' -R 'lookup@retval/x32' -- "$P" >/dev/null 2>&1
check_eq "retval/x32 --ret-eq 0xffffffff: the failed lookups" \
	"$("$NEEDLE" replay --arg-names -i "$T/x.data" --ret-eq 0xffffffff | body | md5sum)" \
	"$(expect '==' -1 | grep lookup | sed 's/= -1;/= 0xffffffff;/' | md5sum)"
check_eq "retval/x32 --ret-eq -1: none (a negative V equals no unsigned value)" \
	"$("$NEEDLE" replay --arg-names -i "$T/x.data" --ret-eq -1 | sed 1d | wc -l)" 0

# No return value recorded: nothing to show, and a warning says why.
"$NEEDLE" record -o "$T/noret.data" -A 'lookup@arg1/d32' -- "$P" >/dev/null 2>&1
"$NEEDLE" replay --arg-names -i "$T/noret.data" --ret-ne 0 >"$T/noret" 2>"$T/noret.err"
check_eq "no -R: exit 0, no call shown" "$? $(sed 1d "$T/noret" | wc -l)" "0 0"
check_eq "no -R: one warning line" "$(grep -c 'no call .* has a return value' "$T/noret.err") $(wc -l <"$T/noret.err")" "1 1"

# ---- refused: one line, exit 1, nothing on standard output ----
refused() { # DESCRIPTION PATTERN VIEW ARGS...
	local desc=$1 pat=$2
	shift 2
	"$NEEDLE" "$@" >"$T/rout" 2>"$T/rerr"
	local rc=$?
	check_eq "$desc: exit 1" "$rc" 1
	check_eq "$desc: one line that says why" "$(grep -c -- "$pat" "$T/rerr") $(wc -l <"$T/rerr")" "1 1"
	check_eq "$desc: no output" "$(wc -c <"$T/rout")" 0
}
for a in 0 256 1x -1 ''; do
	refused "--by-arg '$a'" "by-arg needs an argument number from 1 to 255" report -i "$T/a.data" --by-arg "$a"
done
refused "--ret-ne and --ret-eq together" "give one of them, once" replay -i "$T/a.data" --ret-ne 0 --ret-eq 1
refused "--ret-ne twice" "give one of them, once" replay -i "$T/a.data" --ret-ne 0 --ret-ne 1
for v in abc '' 1x 0x - 12.5 0x10000000000000000 -0x8000000000000001; do
	refused "--ret-ne '$v'" "ret-ne needs an integer" replay -i "$T/a.data" --ret-ne "$v"
done
refused "--ret-eq on a function tracer trace (no exits)" "function tracer" replay -i "$T/fn.data" --ret-eq 0
check_eq "--ret-eq -0x8000000000000000 (the smallest): accepted" \
	"$("$NEEDLE" replay --arg-names -i "$T/a.data" --ret-eq -0x8000000000000000 >/dev/null 2>&1; echo $?)" 0
