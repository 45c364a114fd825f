#!/usr/bin/env bash
# test_task_graph - each thread's process and parent in the trace (its
# TASKS records), as graph --task draws them (uftrace's task graph) and as
# export --format=uftrace writes them (task.txt's TASK and FORK lines, which
# uftrace's own graph --task reads back).  tasks: main starts worker1, forks
# child, which starts worker2 and forks grandchild; each prints its role,
# tid, pid and ppid.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/tasks"
V1="$(cd "$(dirname "$0")" && pwd)/data/views_v1.data"
cd "$T" || exit 1

"$NEEDLE" record -o "$T/t.data" -- "$P" >"$T/out" 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
tid() { awk -v r="$1" '$1 == r { print $2 }' "$T/out"; }
pid() { awk -v r="$1" '$1 == r { print $3 }' "$T/out"; }
ppid() { awk -v r="$1" '$1 == r { print $4 }' "$T/out"; }
check_eq "the program ran its five tasks" "$(awk '{ print $1 }' "$T/out" | sort | tr '\n' ' ')" \
	"child grandchild tasks worker1 worker2 "

"$NEEDLE" graph -i "$T/t.data" --task >"$T/g" 2>"$T/gerr"
st=$?
check_eq "graph --task: exit 0 ($(head -1 "$T/gerr"))" "$st" 0
# The tree after the " : ", trailing blanks cut; then the tids in order.
check_eq "graph --task: threads under their process, a forked process one level further and set apart" \
	"$(sed -n 's/^[^:]*: //p' "$T/g" | sed 's/ *$//')" "tasks
 +-worker1
 |
 +----child
       +-worker2
       |
       +----grandchild"
check_eq "graph --task: each line's tid is that task's" \
	"$(sed -n 's/^.*\[ *\([0-9]*\)\] :.*/\1/p' "$T/g" | tr '\n' ' ')" \
	"$(tid tasks) $(tid worker1) $(tid child) $(tid worker2) $(tid grandchild) "
check_eq "graph --task: uftrace's header" "$(sed -n 1,2p "$T/g")" "========== TASK GRAPH ==========
# TOTAL TIME   SELF TIME     TID     TASK NAME"
check_eq "graph --task -t 1000s: no task ran that long, none drawn" \
	"$("$NEEDLE" graph -i "$T/t.data" --task -t 1000s | grep -c ' : ')" 0
view_refused "graph --task with a function" 2 "only with -i and -t" "$NEEDLE" graph -i "$T/t.data" --task -F main

# The flight recorder's snapshot carries the same records: the same tree,
# tid for tid.  (Its threads' names are read at their first chunk only: a
# snapshot's program makes no system call for the recording after that.)
shape() { sed -n 's/^.*\[ *\([0-9]*\)\] :\([ |+-]*\).*/\1\2/p' "$1" | sed 's/ *$//'; }
"$NEEDLE" record --snapshot=4 -o "$T/s.data" -- "$P" >"$T/sout" 2>"$T/serr"
"$NEEDLE" graph -i "$T/s.data" --task >"$T/sg"
check_eq "--snapshot: the end-of-program snapshot's task tree ($(tail -1 "$T/serr"))" \
	"$(shape "$T/sg" | sed 's/^[0-9]*//')" "$(shape "$T/g" | sed 's/^[0-9]*//')"
check_eq "--snapshot: its tids, in the tree's order" \
	"$(shape "$T/sg" | sed 's/[^0-9].*//' | tr '\n' ' ')" \
	"$(for r in tasks worker1 child worker2 grandchild; do awk -v r="$r" '$1 == r { printf "%s ", $2 }' "$T/sout"; done)"

# export --format=uftrace: TASK lines with each thread's process, FORK
# lines with each forked process's parent.
"$NEEDLE" export -i "$T/t.data" --format=uftrace -o "$T/u.data" 2>"$T/xerr"
st=$?
check_eq "export --format=uftrace: exit 0 ($(head -1 "$T/xerr"))" "$st" 0
check_eq "task.txt: a thread's TASK line names its process" \
	"$(awk '$1 == "TASK" { print $3, $4 }' "$T/u.data/task.txt" | sort)" \
	"$(printf 'tid=%s pid=%s\n' "$(tid tasks)" "$(pid tasks)" "$(tid worker1)" "$(pid worker1)" \
		"$(tid worker2)" "$(pid worker2)" | sort)"
check_eq "task.txt: a forked process's FORK line names its parent" \
	"$(awk '$1 == "FORK" { print $3, $4 }' "$T/u.data/task.txt" | sort)" \
	"$(printf 'pid=%s ppid=%s\n' "$(pid child)" "$(ppid child)" "$(pid grandchild)" "$(ppid grandchild)" | sort)"
if command -v uftrace >/dev/null; then
	# uftrace names every task by its program: compare the tree's shape
	# and tids.
	uftrace graph -d "$T/u.data" --task >"$T/ug" 2>"$T/uerr"
	check_eq "uftrace graph --task on the export: needle's tree, tid for tid" \
		"$(sed -n 's/^.*\(\[ *[0-9]*\]\) :\([ |+-]*\).*/\1\2/p' "$T/ug" | sed 's/ *$//')" \
		"$(sed -n 's/^.*\(\[ *[0-9]*\]\) :\([ |+-]*\).*/\1\2/p' "$T/g" | sed 's/ *$//')"
else
	check "uftrace is installed (scripts/setup.sh)" false
fi

# A file with no TASKS records (an older needle's): every thread under the
# first one.
"$NEEDLE" graph -i "$V1" --task >"$T/v1" 2>&1
check_eq "graph --task on a version 1 file: one root, the others its threads" \
	"$(sed -n 's/^[^:]*: //p' "$T/v1" | grep -c '^[^ +|]')/$(sed -n 's/^[^:]*: //p' "$T/v1" | grep -c '+-')" \
	"1/$(($("$NEEDLE" info -i "$V1" | awk '/^threads:/ { print $2 }') - 1))"

# info --task: F for a process's first thread, from the same records.
check_eq "info --task: F on the three processes' first threads" \
	"$("$NEEDLE" info -i "$T/t.data" --task | awk '$2 ~ /F/ { print $0 }' | sed -n 's/.*\[ *\([0-9]*\)\].*/\1/p' | sort | tr '\n' ' ')" \
	"$(printf '%s\n' "$(tid tasks)" "$(tid child)" "$(tid grandchild)" | sort | tr '\n' ' ')"

# A thread named with a ';' (prctl allows it) must not split its frame in
# folded stacks: every line's first frame is a thread, NAME-TID.
"$NEEDLE" record -o "$T/semi.data" -- "$P" semi >/dev/null 2>&1
check_eq "export --format=folded: a thread named 'w;1' is one frame" \
	"$("$NEEDLE" export -i "$T/semi.data" -f folded -o - | awk -F';' '$1 !~ /-[0-9]+$/' | wc -l)/$("$NEEDLE" export -i "$T/semi.data" -f folded -o - | grep -c '^w:1-')" "0/2"
# report counts a call once: a forked child's copy of its parent's open
# main (its stack inherited) is not a second call of main, as uftrace
# counts; main ran once, the two forks each once.
check_eq "report: main called once, across the three processes" \
	"$("$NEEDLE" report -i "$T/t.data" --csv | awk -F, '$1 == "main" { print $2 }')" 1
