#!/usr/bin/env bash
# test_hostile - programs that do what well-behaved programs do not, each
# of which once killed the traced program or garbled its trace: a thread
# sharing its creator's TLS (raw clone), a raw fork, and a tracer switched
# while calls are in flight.  Output and exit status must be those of the
# untraced run; counts and nesting exact.
. "$(dirname "$0")/../lib.sh"

# replay lines of FUNCTION: "tid" per line
tids_of() { "$NEEDLE" replay -i "$1" | awk -v f="$2" '$0 ~ "[ |] " f "\\(" { match($0, /\[ *[0-9]+\]/); t = substr($0, RSTART + 1, RLENGTH - 2); gsub(/ /, "", t); print t }'; }

# --- A: a raw clone without CLONE_SETTLS shares the parent's TLS --------
P="$PROGS/hostile_clone"
"$P" >"$T/clone.plain"; plain_rc=$?
"$NEEDLE" record -o "$T/clone.data" -- "$P" >"$T/clone.out" 2>"$T/clone.err"; rc=$?
check_eq "clone without SETTLS: exit status as untraced" "$rc" "$plain_rc"
check "clone without SETTLS: output as untraced" cmp -s "$T/clone.plain" "$T/clone.out"
check "clone without SETTLS: no fatal message" bash -c "! grep -q fatal '$T/clone.err'"
check_eq "clone without SETTLS: every parent call traced" "$(calls "$T/clone.data" parent_work)" 100001
check_eq "clone without SETTLS: the sharing thread runs untraced" "$(calls "$T/clone.data" child_work)" missing

# --- F: a raw fork records the child under its own thread id ------------
P="$PROGS/hostile_fork"
"$P" >"$T/fork.plain"; plain_rc=$?
"$NEEDLE" record -o "$T/fork.data" -- "$P" >"$T/fork.out" 2>"$T/fork.err"; rc=$?
check_eq "raw fork: exit status as untraced" "$rc" "$plain_rc"
check "raw fork: output as untraced" cmp -s "$T/fork.plain" "$T/fork.out"
check_eq "raw fork: child calls" "$(calls "$T/fork.data" in_child)" 300
check_eq "raw fork: parent calls" "$(calls "$T/fork.data" in_parent)" 200
check_eq "raw fork: shared function, both processes" "$(calls "$T/fork.data" both)" 301
child_tids=$(tids_of "$T/fork.data" in_child | sort -u)
parent_tids=$(tids_of "$T/fork.data" in_parent | sort -u)
check_eq "raw fork: the child's calls under one thread id" "$(echo "$child_tids" | wc -l)" 1
check "raw fork: which is not the parent's" test -n "$child_tids" -a "$child_tids" != "$parent_tids"
# Its graph continues its parent's: inside main.
check_eq "raw fork: the child's calls nest in main, one level in" \
	"$("$NEEDLE" replay -i "$T/fork.data" --tid "$child_tids" | grep -c '^ *[0-9.]* [um]s \[ *[0-9]*\] |   in_child')" 300
check_eq "raw fork: no return whose entry is unknown" \
	"$("$NEEDLE" replay -i "$T/fork.data" --tid "$child_tids" | grep -c 'return from')" 0

# --- D: a tracer switch while a call is in flight ------------------------
P="$PROGS/switch_tracer"
touch "$T/plain.go"; "$P" "$T/plain.go" >"$T/sw.plain"
"$NEEDLE" record --ctl -o "$T/sw.data" -- "$P" "$T/sw.go" >"$T/sw.out" 2>"$T/sw.err" &
rec=$!
pid=$(ctl_pid "^$PROGS/switch_tracer $T/sw.go")
check_eq "tracer switch: to function while outer() runs" "$("$NEEDLE" ctl "$pid" tracer function)" \
	"tracing 3 functions with function"
touch "$T/sw.go"
wait $rec; rc=$?
check_eq "tracer switch: exit status" "$rc" 0
check "tracer switch: output as untraced" cmp -s "$T/sw.plain" "$T/sw.out"
"$NEEDLE" replay -i "$T/sw.data" >"$T/sw.replay"
check "tracer switch: outer() entered under function_graph gets its exit" grep -q '} /\* outer \*/' "$T/sw.replay"
check "tracer switch: nothing left running" bash -c "! grep -q 'with these calls open' '$T/sw.replay'"
check_eq "tracer switch: leaf calls after the switch at depth 1 of main" \
	"$(grep -c '^ *@[0-9.]* *\[ *[0-9]*\] |   leaf()\|^ *@[0-9.]* *\[ *[0-9]*\] |     leaf()' "$T/sw.replay")" 15

# --- A: a thread that blocks SIGTRAP with a raw system call ---------------
P="$PROGS/raw_sigmask"
touch "$T/plainmask.go"; "$P" "$T/plainmask.go" >"$T/mask.plain"
"$NEEDLE" record --ctl -F masked_work -o "$T/mask.data" -- "$P" "$T/mask.go" >"$T/mask.out" 2>"$T/mask.err" &
rec=$!
pid=$(ctl_pid "^$PROGS/raw_sigmask $T/mask.go")
ok=0
for f in other_work masked_work 'masked_work other_work' masked_work; do
	"$NEEDLE" ctl "$pid" filter $f >/dev/null 2>&1 && ok=$((ok + 1))
done
check_eq "raw SIGTRAP mask: four live filter changes applied" "$ok" 4
touch "$T/mask.go"
wait $rec; rc=$?
check_eq "raw SIGTRAP mask: the program was not killed" "$rc" 0
check "raw SIGTRAP mask: output as untraced" cmp -s "$T/mask.plain" "$T/mask.out"

# --- S: a thread's first traced call on a small alternate signal stack --
# (-P: only the handler is patched, so that its run on the altstack is the
# thread's first traced call)
P="$PROGS/small_altstack"
for size in 4096 65536; do
	"$P" $size >"$T/alt.plain"; plain_rc=$?
	"$NEEDLE" record -P handler -o "$T/alt.data" -- "$P" $size >"$T/alt.out" 2>/dev/null; rc=$?
	check_eq "first traced call on a $size-byte altstack: exit status and output as untraced" \
		"$rc $(cmp -s "$T/alt.plain" "$T/alt.out" && echo same)" "$plain_rc same"
	# On 4 KiB the handler's run stays untraced (no room to take the
	# thread's state); the call on the thread's own stack is traced.
	check_eq "... handler calls traced" "$(calls "$T/alt.data" handler)" "$([ $size = 4096 ] && echo 1 || echo 2)"
done

# --- P: NOPs before each symbol (-fpatchable-function-entry=M,N, N > 0) --
for v in pfe72 pfe83_cet; do
	"$PROGS/threads_$v" 2 50 >"$T/pfe.plain"
	"$NEEDLE" record --sites=compiled -o "$T/pfe.data" -- "$PROGS/threads_$v" 2 50 >"$T/pfe.out" 2>/dev/null
	check_eq "entries with NOPs before the symbol ($v): exit status and output as untraced" \
		"$? $(cmp -s "$T/pfe.plain" "$T/pfe.out" && echo same)" "0 same"
	check_eq "... work() called exactly 100 times" "$(calls "$T/pfe.data" work)" 100
done

# --- H: a stripped binary's functions are told apart by offset ----------
cp "$PROGS/threads" "$T/threads-stripped"
strip "$T/threads-stripped"
off=0x$(nm "$PROGS/threads" | awk '$3 == "work" { print $1 }' | sed 's/^0*//')
"$NEEDLE" record -o "$T/strip.data" -- "$T/threads-stripped" 2 50 >/dev/null 2>&1
check_eq "stripped binary: work() named by its offset, with its calls" \
	"$(calls "$T/strip.data" "func_$off@threads-stripped")" 100
check_eq "stripped binary: no function shown as ?" "$("$NEEDLE" replay -i "$T/strip.data" | grep -c '| *? *(')" 0
check "clone without SETTLS: info counts the thread that ran untraced" \
	grep -q "^untraced threads: 0 (.*), 1 (shared" <("$NEEDLE" info -i "$T/clone.data")

# --- H: info lists the program's objects, not libneedle's dependencies --
check "info: no module of libneedle's own (libelf, libz)" \
	bash -c "! \"$NEEDLE\" info -i \"$T/fork.data\" | grep -q 'libelf\|libz\.so'"
