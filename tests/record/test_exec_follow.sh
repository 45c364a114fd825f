#!/usr/bin/env bash
# test_exec_follow - a program a traced process exec's into is recorded
# into the same trace (the execve family, posix_spawn, a shell in
# between, a vfork child, a thread that exec's), with the environment
# and descriptors it would have had untraced; what cannot be followed (a
# static or set-user-ID program) runs untraced, said in one line; a
# failed exec returns its errno with nothing left open.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle's default: the library calls are lines (fork, execl, posix_spawn)
P="$PROGS/exec_prog"
S="$PROGS/static_nodebug"

# run MODE [ARGS]: the program alone and recorded; the outputs and exit
# statuses must be the same.
run() {
	local name=$1
	shift
	"$P" "$@" >"$T/$name.plain" 2>&1
	local want=$?
	"$NEEDLE" record -o "$T/$name.data" -- "$P" "$@" >"$T/$name.out" 2>"$T/$name.err"
	local got=$?
	check_eq "$name: exit status as untraced ($(tail -1 "$T/$name.err"))" "$got" "$want"
	check "$name: output identical (its environment, its descriptors)" cmp -s "$T/$name.plain" "$T/$name.out"
}
tids() { trace_tids "$1"; } # the first program's main thread first
# graph FILE TID: that thread's function column.
graph() { "$NEEDLE" replay --tid "$2" -i "$1" | sed -n 's/^[^|]*| //p'; }

run fork fork
check_eq "fork: the exec'ed program's functions, once each" \
	"$(calls "$T/fork.data" a) $(calls "$T/fork.data" b) $(calls "$T/fork.data" c)" "1 1 1"
check_eq "fork: main called once in each program (the forked child's continuation of its parent's is no call of its own)" \
	"$(calls "$T/fork.data" main)" 2
child=$(tids "$T/fork.data" | sed -n 2p)
check_eq "fork: the child's graph: its fork's end, its execl, then the new program from main" \
	"$(graph "$T/fork.data" "$child" | grep -E '^ *(\} /\* )?(fork|execl|main|a|b|c|getpid)( \*/|\()' | sed -n '1,9p')" \
	"  } /* fork */
  execl() {
main() {
  a() {
    b() {
      c() {
        getpid();
      } /* c */
    } /* b */"
check_eq "fork: no call left open (the child's ended with its exec)" \
	"$("$NEEDLE" replay -i "$T/fork.data" | grep -c 'with these calls open')" 0
check_eq "fork: info names the exec'ed program's objects too" \
	"$("$NEEDLE" info -i "$T/fork.data" | grep -cE '^ +\[[0-9]+\] .*/exec_prog$')" 2

run vfork vfork
parent=$(tids "$T/vfork.data" | sed -n 1p)
child=$(tids "$T/vfork.data" | sed -n 2p)
check_eq "vfork: the child runs untraced until its exec (nothing of it in its parent's graph)" \
	"$(graph "$T/vfork.data" "$parent" | grep -c 'execl\|} /\* .* (unwound)')" 0
check_eq "vfork: the program's call of vfork is a line of the parent's graph, once" \
	"$(graph "$T/vfork.data" "$parent" | grep -cx ' *vfork();')" 1
check_eq "vfork: the program it exec'ed, from main" \
	"$(graph "$T/vfork.data" "$child" | grep -cx 'main() {')" 1
check_eq "vfork: a, b, c once" "$(calls "$T/vfork.data" a) $(calls "$T/vfork.data" b) $(calls "$T/vfork.data" c)" "1 1 1"

run spawn spawn
check_eq "posix_spawn: a line in the parent" "$(graph "$T/spawn.data" "$(tids "$T/spawn.data" | sed -n 1p)" | grep -c 'posix_spawn()')" 1
check_eq "posix_spawn: the child, from main" "$(calls "$T/spawn.data" main) $(calls "$T/spawn.data" a)" "2 1"

run execvp execvp "$(dirname "$P")"
check_eq "execvp along PATH: followed" "$(calls "$T/execvp.data" a)" 1

run sh sh
check_eq "a shell in between (/bin/sh -c): the shell and then the program, three programs in one trace (main: the first's and the last's)" \
	"$(calls "$T/sh.data" main) $(calls "$T/sh.data" a)" "2 1"
check "a shell in between: the shell's own functions recorded" grep -q 'dash\|bash' <("$NEEDLE" info -i "$T/sh.data")

# Compiled entries only: the shell has none, and says so; the program it
# exec's has, and is recorded.
NEEDLE_SITES=compiled "$NEEDLE" record -o "$T/shc.data" -- "$P" sh >/dev/null 2>"$T/shc.err"
check_eq "--sites=compiled through a shell: the shell untraced, said once; the program after it recorded" \
	"$(grep -c "exec'ed and not traced: .*sh: the program has no patchable function entries" "$T/shc.err") $(calls "$T/shc.data" a)" "1 1"

run thread thread
check_eq "a thread that exec's: the program it became, from main, under the first thread's id" \
	"$(graph "$T/thread.data" "$(tids "$T/thread.data" | sed -n 1p)" | grep -cx 'main() {')" 2
check_eq "a thread that exec's: its own calls end there" \
	"$("$NEEDLE" replay -i "$T/thread.data" | sed -n '/with these calls open/,$p' | grep -c 'execl\|exec_thread')" 0

run fail fail
check_eq "a failed exec: a call that returned, nothing else" \
	"$(calls "$T/fail.data" execl) $(calls "$T/fail.data" a)" "1 missing"

run static static "$S"
check_eq "a static program: not followed, said once" \
	"$(grep -c "exec'ed and not traced: $S: a static executable" "$T/static.err")" 1

cp "$P" "$T/setid_prog" && chmod 4755 "$T/setid_prog"
"$T/setid_prog" abc >"$T/setid.plain"
"$NEEDLE" record -o "$T/setid.data" -- "$P" static "$T/setid_prog" >"$T/setid.out" 2>"$T/setid.err"
check_eq "a set-user-ID program: not followed, said once" \
	"$(grep -c "exec'ed and not traced: $T/setid_prog: a set-user-ID" "$T/setid.err")" 1
check_eq "a set-user-ID program: its calls not recorded" "$(calls "$T/setid.data" a)" missing

# The recording's options hold in every program: -F a records a's
# subtree in the exec'ed program, nothing of the first.
"$NEEDLE" record -o "$T/f.data" -F a -- "$P" fork >/dev/null 2>&1
check_eq "-F a: the exec'ed program's a, b, c and nothing else" \
	"$("$NEEDLE" report --csv -s name -i "$T/f.data" | cut -d, -f1,2 | tail -n +2 | tr '\n' ' ')" "a,1 b,1 c,1 getpid,1 "

"$NEEDLE" record -o "$T/nf.data" --no-follow-exec -- "$P" fork >"$T/nf.out" 2>&1
check_eq "--no-follow-exec: the exec'ed program untraced, and sees no trace of needle" \
	"$(calls "$T/nf.data" a) $(grep -c 'LD_PRELOAD=(unset) NEEDLE_CONFIG=(unset)' "$T/nf.out")" "missing 1"

# The flight recorder's trigger in an exec'ed program names that
# program's function.
(cd "$T" && "$NEEDLE" record --snapshot=4 --trigger c -o "$T/tg.data" -- "$P" fork >/dev/null 2>&1)
check_eq "--trigger c fired in the exec'ed program: the snapshot names c" \
	"$("$NEEDLE" info -i "$T/tg.data.1" | sed -n 's/^ *trigger: *//p' | cut -d' ' -f1-3)" "c: c in"
