#!/usr/bin/env bash
# test_views_graph - needle graph, uftrace's call graph: a function's
# calls merged by name path with their counts, the backtraces that led to
# it, the whole program's graph, -D, --tid, the columns and their times.
# graph_prog's calls are known from its source: every count is exact.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/graph_prog"

"$NEEDLE" record -o "$T/g.data" --libcall=none -- "$P" 3 >"$T/out" 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
check_eq "the program ran: 22 calls of leaf" "$(cat "$T/out")" "leaf 22"

g() { "$NEEDLE" graph -i "$T/g.data" "$@"; }
# As uftrace's suite compares a graph: a backtrace's time and the frames'
# addresses left out.
norm() { sed -e 's/^\( backtrace #[0-9]*: hit [0-9]*\), time .*/\1/' -e 's/^\(   \[[0-9]*\] [^ ]*\) (0x[0-9a-f]*)$/\1/'; }

check_eq "graph fan: its three calls merged, after the backtraces from worker (1) and from main (2)" \
	"$(g -f none fan | norm)" \
"# Function Call Graph for 'fan'
=============== BACKTRACE ===============
 backtrace #0: hit 1
   [0] worker
   [1] fan

 backtrace #1: hit 2
   [0] main
   [1] fan

========== FUNCTION CALL GRAPH ==========
(3) fan
 +-(6) mid
 | (15) leaf
 | 
 +-(3) leaf"

check_eq "graph rec: the recursion is a path of its own, three deep" "$(g -f none rec | norm)" \
"# Function Call Graph for 'rec'
=============== BACKTRACE ===============
 backtrace #0: hit 1
   [0] main
   [1] rec

========== FUNCTION CALL GRAPH ==========
(1) rec
 +-(1) leaf
 | 
 +-(1) rec
    +-(1) leaf
    | 
    +-(1) rec
       +-(1) leaf
       | 
       +-(1) rec"

check_eq "graph leaf: one backtrace per distinct path, newest first, with its hits" \
	"$(g -f none leaf | norm | awk '/^ backtrace/ { printf "%s:", $4 } /^   \[/ { printf " %s", $2 } /^$/ { print "" }')" \
"1: worker fan leaf
5: worker fan mid leaf
1: main rec rec rec leaf
1: main rec rec leaf
1: main rec leaf
1: main other mid leaf
2: main fan leaf
10: main fan mid leaf"

check_eq "graph without a function: the program's, threads' outermost calls under its name" \
	"$(g -f none | norm)" \
"# Function Call Graph for 'graph_prog'
========== FUNCTION CALL GRAPH ==========
(1) graph_prog
 +-(1) main
 |  +-(2) fan
 |  |  +-(4) mid
 |  |  | (10) leaf
 |  |  | 
 |  |  +-(2) leaf
 |  | 
 |  +-(1) other
 |  | (1) mid
 |  | (1) leaf
 |  | 
 |  +-(1) rec
 |     +-(1) leaf
 |     | 
 |     +-(1) rec
 |        +-(1) leaf
 |        | 
 |        +-(1) rec
 |           +-(1) leaf
 |           | 
 |           +-(1) rec
 | 
 +-(1) worker
   (1) fan
    +-(2) mid
    | (5) leaf
    | 
    +-(1) leaf"

check_eq "-D 2: FUNC and one level below" "$(g -f none -D 2 fan | sed -n '/CALL GRAPH/,$p')" \
"========== FUNCTION CALL GRAPH ==========
(3) fan
 +-(6) mid
 | 
 +-(3) leaf"

wtid=$("$NEEDLE" replay -i "$T/g.data" | sed -n 's/^[^[]*\[ *\([0-9]*\)\] | worker() {$/\1/p' | head -1)
check "the worker thread's tid ($wtid)" test -n "$wtid"
check_eq "--tid: that thread's calls only" "$(g -f none --tid "$wtid" fan | norm | sed -n '/BACKTRACE/,$p')" \
"=============== BACKTRACE ===============
 backtrace #0: hit 1
   [0] worker
   [1] fan

========== FUNCTION CALL GRAPH ==========
(1) fan
 +-(2) mid
 | (5) leaf
 | 
 +-(1) leaf"

# The columns: a node's total is the sum of its calls' durations (report's
# total for a function reached by one path), self is total minus the
# children's, and the addresses are the functions'.
check_eq "-f total: main's total time is report's" "$(g main | awk '$NF == "main" { print $1, $2 }')" \
	"$("$NEEDLE" report -i "$T/g.data" | awk '$NF == "main" { print $1, $2 }')"
check_eq "-f total: worker's total time is report's" "$(g worker | awk '$NF == "worker" { print $1, $2 }')" \
	"$("$NEEDLE" report -i "$T/g.data" | awk '$NF == "worker" { print $1, $2 }')"
check_eq "-f self: worker's self time is report's" "$(g -f self worker | awk '$NF == "worker" { print $1, $2 }')" \
	"$("$NEEDLE" report -i "$T/g.data" | awk '$NF == "worker" { print $3, $4 }')"
check_eq "-f total,self,addr: the header" "$(g -f total,self,addr fan | grep '^# T')" \
	"# TOTAL TIME   SELF TIME     ADDRESS     FUNCTION"
addr=$(g -f addr fan | awk '$NF == "fan" && $3 == "(3)" { print $1 }')
check_eq "-f addr: the function's address, as the backtrace gives it" \
	"$(g fan | awk '$2 == "fan" { print $3; exit }')" "(0x$addr)"

# Bad input: one line, non-zero.
view_refused "graph of a function not in the trace" 1 "no call of 'nosuch'" "$NEEDLE" graph -i "$T/g.data" nosuch
view_refused "graph -f with an unknown field" 2 "unknown field 'bogus'" "$NEEDLE" graph -i "$T/g.data" -f bogus
view_refused "graph -D 0" 2 "-D takes a depth" "$NEEDLE" graph -i "$T/g.data" -D 0 fan
view_refused "graph of a missing file" 1 "nosuch.data" "$NEEDLE" graph -i "$T/nosuch.data"
view_refused "graph with two functions" 2 "unexpected argument 'b'" "$NEEDLE" graph -i "$T/g.data" a b
view_refused "graph with a bad regular expression" 2 "not a regular expression" "$NEEDLE" graph -i "$T/g.data" 'a($'
line=$(grep -n '^NOINLINE void fan' "$(dirname "$0")/../progs/graph_prog.c" | cut -d: -f1)
check_eq "--srcline: a callee's source file and line" \
	"$(g --srcline main | awk '$5 == "fan" { print $6 }' | sed 's|.*/||')" "graph_prog.c:$line]"
check_eq "--srcline: the function graphed heads its graph without one, as uftrace draws it" \
	"$(g --srcline fan | sed -n '/CALL GRAPH/,$p' | awk '$3 == ":" && $5 == "fan" { print NF }')" 5

# A program exec'ed in the trace is a session of its own (uftrace's):
# exec_prog forks, the child execs exec_prog abc (main > a > b > c).
"$NEEDLE" record -o "$T/x.data" -- "$PROGS/exec_prog" fork >/dev/null 2>&1
g2() { "$NEEDLE" graph -i "$T/x.data" -f none "$@"; }
check_eq "exec: a graph of main per program, the exec'ed one's first" \
	"$(g2 main | grep -c "^# Function Call Graph for 'main'")" 2
check_eq "exec: the exec'ed program's main calls a > b > c" \
	"$(g2 main | awk '/CALL GRAPH/ { n++ } n == 1' | grep -o '(1) [abc]$' | tr '\n' ' ')" "(1) a (1) b (1) c "
check_eq "exec: the first program's main waits for its child, and calls no a" \
	"$(g2 main | awk '/CALL GRAPH/ { n++ } n == 2' | grep -c -e wait_child -e '(1) a$')" 1
check_eq "exec: the whole-program graph, one per program" \
	"$(g2 | grep -c '^(1) exec_prog$')" 2

# Filters: the graph is built from the calls they leave.
check_eq "-N mid: mid's calls and what they call gone from fan's graph" "$(g -f none -N mid fan | sed -n '/CALL GRAPH/,$p')" \
"========== FUNCTION CALL GRAPH ==========
(3) fan
(3) leaf"
check_eq "-F worker: only what runs inside worker" "$(g -f none -F worker | sed -n '/CALL GRAPH/,$p' | grep -c main)" 0
check_eq "-f +self,addr: the default column and these" "$(g -f +self,addr fan | grep '^# T')" \
	"# TOTAL TIME   SELF TIME     ADDRESS     FUNCTION"
env -u NEEDLE_SITES "$NEEDLE" record -o "$T/l.data" -- "$P" 3 >/dev/null 2>&1
check "with library calls: main calls pthread_create" sh -c "'$NEEDLE' graph -i '$T/l.data' -f none main | grep -q pthread_create"
check_eq "--no-libcall: no library call in main's graph" \
	"$("$NEEDLE" graph -i "$T/l.data" -f none --no-libcall main | grep -c -e pthread_ -e printf -e strtol)" 0
check_eq "--no-libcall: the program's calls stay" \
	"$("$NEEDLE" graph -i "$T/l.data" -f none --no-libcall main | grep -c -e '^ +-(2) fan$' -e '^ +-(1) rec$' -e '^ +-(1) other$')" 3
check_eq "graph GLOB: a glob names the functions it matches" "$(g -f none 'fa*' | grep -c "^# Function Call Graph for 'fan'")" 1

# -t TIME: only the calls that lasted TIME or more.  subtrees' slow sleeps
# 3 ms in usleep (through nap); main, slow, nap and usleep last that
# long whatever the load, and every call shown must.
env -u NEEDLE_SITES "$NEEDLE" record -o "$T/sb.data" -- "$PROGS/subtrees" >/dev/null 2>&1
"$NEEDLE" graph -i "$T/sb.data" -t 2ms main >"$T/gt"
check "-t 2ms: main, slow, nap and usleep shown" \
	test "$(grep -c -e ') main$' -e ') slow$' -e ') nap$' -e ') usleep$' "$T/gt")" -eq 4
check_eq "-t 2ms: every call shown lasted 2 ms or more" \
	"$(sed -n '/CALL GRAPH/,$p' "$T/gt" | awk -F: '/\(/ { t = $1; gsub(/ /, "", t); v = t + 0;
		if (t ~ /us$/ || t ~ /ns$/ || (t ~ /ms$/ && v < 2)) bad++ } END { print bad + 0 }')" 0
view_refused "graph -t nonsense" 2 "takes a duration" "$NEEDLE" graph -i "$T/sb.data" -t soon main

# The function tracer (entries only, no exits): graph FUNC is FUNC's
# graph alone, each of its calls a hit; not one graph for every function
# that came after the first call (whose end was never recorded).
"$NEEDLE" record -o "$T/f.data" --libcall=none --tracer function -- "$P" 3 >/dev/null 2>&1
check_eq "function tracer: graph fan is one graph" "$("$NEEDLE" graph -i "$T/f.data" fan | grep -c '^# Function Call Graph')" 1
check_eq "function tracer: its 3 calls are 3 hits and (3) fan" \
	"$("$NEEDLE" graph -i "$T/f.data" -f none fan | norm | grep -E 'hit|fan$' | tr -s ' ' | tr '\n' '|')" \
	" backtrace #0: hit 3| [0] fan|(3) fan|"
