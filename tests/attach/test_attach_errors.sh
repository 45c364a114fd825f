#!/usr/bin/env bash
# test_attach_errors - needle record -p refuses what it cannot record with
# one line and a non-zero exit, and the target runs on untouched: no such
# process, a zombie, a kernel thread, a 32-bit program, a static program,
# another user's process, a process still starting (its loader mapping
# its libraries), kernel.yama.ptrace_scope, a process traced by
# strace, one in another network namespace, one without patchable sites,
# filters that match nothing, one already recorded; and the options that
# do not go with -p.  (A child
# that keeps a killed recording's copy is let go of, then recorded:
# test_attach_fork_release.)
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
A="$BUILD/tests/attach"

# refused NAME PID PATTERN: needle record -p PID fails, says PATTERN in one
# line, writes no trace, and the process (if any) is still there.
refused() {
	local name=$1 pid=$2 pattern=$3
	shift 3
	rm -f "$T/r.data"
	"$NEEDLE" record -p "$pid" -o "$T/r.data" "$@" >"$T/r.out" 2>"$T/r.err"
	local rc=$?
	check "$name: refused, non-zero exit ($rc)" test "$rc" -ne 0
	check "$name: says so in one line ($(head -c 300 "$T/r.err"))" \
		sh -c "[ \$(wc -l <'$T/r.err') = 1 ] && grep -q -- '$pattern' '$T/r.err'"
	check "$name: no trace file left" test ! -e "$T/r.data"
}

# The Python interpreter itself, not a wrapper script that execs it
# (pyenv's shims): a process recorded must not exec while attached to.
PY=$(python3 -c 'import sys; print(sys.executable)')

# Options.
"$NEEDLE" record -p 1 -- true 2>"$T/o.err"
check_eq "-p with a program: usage error" "$?" 2
"$NEEDLE" record --duration=1 -- true 2>"$T/o.err"
check_eq "--duration without -p: usage error" "$?" 2
"$NEEDLE" record -p 1 --duration=abc 2>"$T/o.err"
check_eq "--duration=abc: usage error" "$?" 2
"$NEEDLE" record -p x12 2>"$T/o.err"
check_eq "-p x12: usage error" "$?" 2

# No such process: one that has just exited.
true &
gone=$!
wait "$gone"
refused "no such process" "$gone" "no process with PID $gone"

# A zombie: a child its parent does not wait for.
python3 -c 'import os, sys, time
p = os.fork()
if p == 0: os._exit(0)
print(p, flush=True); time.sleep(10)' >"$T/z.pid" &
zparent=$!
wait_for test -s "$T/z.pid"
zpid=$(cat "$T/z.pid")
wait_for grep -q '^State:.*Z' /proc/"$zpid"/status
refused "zombie" "$zpid" "is a zombie"
kill "$zparent"

# A kernel thread, where this PID namespace shows one.
kt=$(awk '{ if (int($9 / 2097152) % 2 == 1) { print $1; exit } }' /proc/[0-9]*/stat 2>/dev/null | head -1)
if [ -n "$kt" ]; then
	refused "kernel thread" "$kt" "is a kernel thread"
else
	echo "      (no kernel thread is visible in this PID namespace)"
fi

# Programs it cannot load into, each left running.
# (A program built without patchable entries is refused only when relocated
# sites are not wanted: by default its functions are relocated.)
# A kernel without 32-bit support (CONFIG_IA32_EMULATION off, or
# ia32_emulation=0) cannot run ticker_32 (exec format error, 126): no such
# process can exist to attach to, so the check that refuses one is run on
# the file itself, the function needle record -p calls on /proc/PID/exe.
"$A/ticker_32" 0 >/dev/null 2>&1
rc32=$?
kinds=("static:no C library loaded" "plain:no patchable function entries")
if [ "$rc32" = 126 ]; then
	echo "      (this kernel cannot run 32-bit programs: the ELF check is run on ticker_32's file)"
	exe_class() { "$BUILD/tests/unit/test_exe_class" "$1" >"$T/exe.out" || { grep FAIL "$T/exe.out"; false; }; }
	check "ticker_32: the ELF-class check refuses its file" exe_class "$A/ticker_32=refused"
	check "ticker: the ELF-class check accepts its file" exe_class "$A/ticker=x86_64"
else
	check_eq "ticker_32: runs on this kernel" "$rc32" 0
	kinds=("32:not an x86-64 program" "${kinds[@]}")
fi
for kind in "${kinds[@]}"; do
	name=${kind%%:*}
	"$A/ticker_$name" 1000 >"$T/t.out" &
	tp=$!
	sleep 0.05
	refused "ticker_$name" "$tp" "${kind#*:}" --sites=compiled
	check "ticker_$name: still running, untouched" kill -0 "$tp"
	wait "$tp"
	check_eq "ticker_$name: exits 0" "$?" 0
	check_eq "ticker_$name: printed all its lines" "$(grep -c '^tick' "$T/t.out")" 1000
done

# A process still starting: its dynamic loader blocked opening a
# preloaded library (a FIFO nobody writes yet), with the loader mapped
# and the C library not.  Refused, not waited for; once the FIFO is
# closed the loader says it ignored the library and the program runs.
mkfifo "$T/preload.fifo"
LD_PRELOAD="$T/preload.fifo" "$A/ticker" 200 >"$T/t.out" 2>"$T/t.err" &
tp=$!
for _ in $(seq 500); do grep -q ld-linux "/proc/$tp/maps" 2>/dev/null && break; sleep 0.01; done
check "starting: the loader is mapped, the C library not yet" \
	sh -c "grep -q ld-linux /proc/$tp/maps && ! grep -q libc.so.6 /proc/$tp/maps"
refused "a process still starting" "$tp" "still starting"
: <>"$T/preload.fifo" # open and close the FIFO's writing end: the loader reads EOF
wait "$tp"
check_eq "starting: the program then runs as it would (exit 0)" "$?" 0
check_eq "starting: printed all its lines" "$(grep -c '^tick' "$T/t.out")" 200

# The same program built without patchable entries, by default: its own
# functions relocated and recorded.
"$A/ticker_plain" 1500 >"$T/t.out" &
tp=$!
sleep 0.05
"$NEEDLE" record -p "$tp" -F tick_work -o "$T/plain.data" --duration=0.3 2>"$T/plain.err"
rc=$?
check_eq "ticker_plain by default: recorded ($(tail -1 "$T/plain.err"))" "$rc" 0
n=$(calls "$T/plain.data" tick_work)
check "ticker_plain by default: tick_work relocated and recorded ($n calls)" test "$n" -gt 10 2>/dev/null
wait "$tp"
check_eq "ticker_plain by default: exits 0" "$?" 0
check_eq "ticker_plain by default: printed all its lines" "$(grep -c '^tick' "$T/t.out")" 1500

# Filters that match nothing: the program runs on, unpatched.  (4 s: two
# attaches below, each relocating the C library while four threads spin.)
"$A/ticker" 2000 >"$T/t.out" &
tp=$!
sleep 0.05
refused "filters matching nothing" "$tp" "the filters match no function" -F no_such_function
check "filters matching nothing: the target runs on" kill -0 "$tp"

# Already recorded by another needle record -p.
"$NEEDLE" record -p "$tp" -o "$T/first.data" 2>"$T/first.err" &
np=$!
wait_for grep -q "recording process $tp" "$T/first.err"
refused "already recorded" "$tp" "already being recorded"
kill -INT "$np"
wait "$np"
check_eq "already recorded: the first recording ends well" "$?" 0
wait "$tp"
check_eq "ticker: exits 0 after all that" "$?" 0
check_eq "ticker: printed all its lines" "$(grep -c '^tick' "$T/t.out")" 2000

# A process in another network namespace (a container's), where the
# session's abstract socket cannot be reached.
unshare --net "$A/ticker" 100000 >/dev/null 2>&1 &
up=$!
wait_for sh -c "[ \"\$(readlink /proc/$up/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ] && grep -q libc.so /proc/$up/maps"
refused "another network namespace" "$up" "another network namespace"
kill "$up" 2>/dev/null
wait "$up" 2>/dev/null

# A program needle record started (libneedle preloaded, recording).
"$NEEDLE" record -o "$T/pre.data" -- "$A/ticker" 500 >/dev/null 2>"$T/pre.err" &
np=$!
wait_for pgrep -f "^$A/ticker 500" >/dev/null
tp=$(pgrep -f "^$A/ticker 500" | head -1)
wait_for grep -q 'needle-buffer' /proc/"$tp"/maps
refused "started by needle record" "$tp" "already being recorded"
# ... and needle record itself, whose program is the one to record.
refused "needle record's own PID" "$np" "is needle itself"
wait "$np"
check_eq "started by needle record: its recording ends well" "$?" 0

# A stopped process lends no thread: refused at once, and it stays
# stopped (then runs on to its end when continued).
"$A/ticker" 300 >/dev/null &
tp=$!
wait_for grep -q ticker /proc/"$tp"/comm
kill -STOP "$tp"
wait_for grep -q '^State:.*T' /proc/"$tp"/status
refused "a stopped process" "$tp" "is stopped"
check "a stopped process: still stopped" grep -q '^State:.*T' /proc/"$tp"/status
check "a stopped process: no libneedle loaded" sh -c "! grep -q needle /proc/$tp/maps"
kill -CONT "$tp"
wait "$tp"
check_eq "a stopped process: runs to its end when continued" "$?" 0

# A thread's id: /proc shows it, but the process is what is recorded.
"$PY" -c 'import threading, time, os
t = threading.Thread(target=time.sleep, args=(5,)); t.start()
print(t.native_id, flush=True); t.join()' >"$T/tid" &
tpy=$!
wait_for test -s "$T/tid"
refused "a thread's id" "$(cat "$T/tid")" "is a thread of process $tpy"
check "a thread's id: no libneedle loaded in its process" sh -c "! grep -q needle /proc/$tpy/maps"
kill "$tpy"
wait "$tpy" 2>/dev/null

# Stopped during libneedle's start-up (Ctrl-C once the buffer is mapped,
# a quarter of a second before python3's functions are found): the next
# -p, right after, waits for the process to let go of it and records.
# (A fresh process each round: a second start-up in one is quicker.)
for round in 1 2 3; do
	"$PY" -c 'import time; time.sleep(60)' &
	tpy=$!
	wait_for grep -q python3 /proc/"$tpy"/comm
	"$NEEDLE" record -p "$tpy" -o "$T/early.data" >/dev/null 2>"$T/early.err" &
	np=$!
	wait_for grep -q needle-buffer /proc/"$tpy"/maps
	kill -INT "$np"
	wait "$np"
	check "early Ctrl-C, round $round: stopped before recording began ($(head -c 200 "$T/early.err"))" \
		grep -q "stopped before recording began" "$T/early.err"
	"$NEEDLE" record -p "$tpy" -o "$T/again.data" --duration 0.3 >/dev/null 2>"$T/again.err"
	st=$?; check_eq "early Ctrl-C, round $round: the next -p at once records ($(tail -1 "$T/again.err"))" "$st" 0
	check "early Ctrl-C, round $round: the process runs on" kill -0 "$tpy"
	kill "$tpy"
	wait "$tpy" 2>/dev/null
done

# Ctrl-C (SIGINT) at once, to a -p started as a script's background job
# (which its shell starts with SIGINT ignored): it stops before recording
# begins, the process untouched or let go of, not records on.
"$PY" -c 'import time; time.sleep(60)' &
tpy=$!
wait_for grep -q python3 /proc/"$tpy"/comm
timeout 30 sh -c '"$1" record -p "$2" -o "$3" 2>"$4" & echo $! >"$5"; wait $!' sh \
	"$NEEDLE" "$tpy" "$T/bg.data" "$T/bg.err" "$T/bg.pid" &
sp=$!
wait_for test -s "$T/bg.pid"
kill -INT "$(cat "$T/bg.pid")"
wait "$sp"
st=$?; check_eq "SIGINT at once to a background -p: it stops, exit 1 ($(head -c 200 "$T/bg.err"))" "$st" 1
check "SIGINT at once to a background -p: stopped before recording began" grep -q "stopped before recording began" "$T/bg.err"
check "SIGINT at once to a background -p: the process runs on" kill -0 "$tpy"
kill "$tpy"
wait "$tpy" 2>/dev/null

# A process that rewrote its title in place: its command line is the
# title, not the title and a run of empty arguments.
"$A/ticker" 300 retitle >/dev/null &
tp=$!
wait_for grep -q retitled /proc/"$tp"/cmdline
"$NEEDLE" record -p "$tp" -o "$T/title.data" --duration 0.2 >/dev/null 2>&1
check_eq "a retitled process: info's command is its title" \
	"$("$NEEDLE" info -i "$T/title.data" | sed -n 's/^command: *//p')" "'ticker: retitled'"
wait "$tp"

# Traced by someone else.
"$A/ticker" 500 >/dev/null &
tp=$!
strace -p "$tp" -o /dev/null 2>/dev/null &
sp=$!
wait_for grep -q "^TracerPid:[[:space:]]*$sp" /proc/"$tp"/status
refused "traced by strace" "$tp" "already traced by process $sp (strace)"
kill "$sp"
wait "$sp" 2>/dev/null
wait "$tp"

# Another user's process; and kernel.yama.ptrace_scope for a user's own.
"$A/ticker" 500 >/dev/null &
tp=$!
setpriv --reuid=65534 --regid=65534 --clear-groups "$NEEDLE" record -p "$tp" -o /tmp/needle-nobody.data \
	>/dev/null 2>"$T/u.err"
check "another user's process: refused, says whose ($(cat "$T/u.err"))" grep -q "belongs to user root" "$T/u.err"
check "another user's process: still running" kill -0 "$tp"
wait "$tp"
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
setpriv --reuid=65534 --regid=65534 --clear-groups "$A/ticker" 1500 >/dev/null &
tp=$!
sleep 0.05
setpriv --reuid=65534 --regid=65534 --clear-groups "$NEEDLE" record -p "$tp" -o /tmp/needle-nobody.data \
	--duration=0.2 >/dev/null 2>"$T/y.err"
rc=$?
if [ "$scope" -ge 1 ]; then
	check "ptrace_scope $scope: refused, names the sysctl ($(cat "$T/y.err"))" \
		sh -c "[ $rc -ne 0 ] && grep -q 'kernel.yama.ptrace_scope is $scope' '$T/y.err'"
else
	check_eq "ptrace_scope $scope: a user records its own process ($(tail -1 "$T/y.err"))" "$rc" 0
fi
rm -f /tmp/needle-nobody.data
wait "$tp"
check_eq "the user's process exits 0" "$?" 0
