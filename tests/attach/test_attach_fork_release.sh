#!/usr/bin/env bash
# test_attach_fork_release - the processes forked while a recording ran
# are let go when it ends (src/cli/record/release.c), as the recorded
# process is: their functions' entries are NOPs again, they map nothing
# of needle's, they can be recorded again, and they compute what they
# would have untraced.  For `needle record -p` (a child with a thread that
# blocks every signal, held from outside for its batch, and a grandchild
# it forked), and for a daemon a started program left (stopped with
# Ctrl-C while needle record waits for it).  A child whose needle record
# was killed keeps its copy (nobody is left to let go of it): `needle
# record -p` on it lets go of that copy first, then records it.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
FT="$BUILD/tests/attach/fork_target"
OFF=$(nm "$FT" | awk '$3 == "work" { print $1 }')

# entry PID: the first five bytes of work() in process PID, in hex.
entry() {
	local base
	base=$(awk -v exe="$FT" '$6 == exe { split($1, a, "-"); print a[1]; exit }' /proc/"$1"/maps)
	python3 -c "
import sys
f = open('/proc/$1/mem', 'rb'); f.seek(int('$base', 16) + int('$OFF', 16)); print(f.read(5).hex())"
}

# released NAME PID: PID's work() is a NOP again and it maps no buffer.
released() {
	check_eq "$1: work() starts with its NOP again" "$(entry "$2")" 0f1f440000
	check_eq "$1: maps no needle buffer" "$(grep -c 'needle-buffer\|needle-meta' /proc/"$2"/maps)" 0
}

# finish NAME PID OUT: SIGTERM, and it says it computed its sums right.
finish() {
	kill -TERM "$2"
	wait_for grep -q "^done $2 " "$3"
	check "$1: computed what it would have untraced ($(grep "^done $2 " "$3"))" grep -q "^done $2 calls=[1-9][0-9]* ok$" "$3"
}

# forked_while_recorded NAME [SIGNAL WHAT]: fork_target started (its
# output in $T/NAME.out), `needle record -p` on it (into $T/NAME.data,
# its stderr in $T/NAME.rec), and a process forked once it records (on
# SIGNAL, USR1 by default, printing WHAT, "child" by default): fp, np
# and cp are their PIDs.
forked_while_recorded() {
	local sig=${2:-USR1} what=${3:-child}
	"$FT" >"$T/$1.out" 2>/dev/null &
	fp=$!
	wait_for grep -q '^ready' "$T/$1.out"
	"$NEEDLE" record -p "$fp" -o "$T/$1.data" 2>"$T/$1.rec" &
	np=$!
	wait_for grep -q "recording process $fp" "$T/$1.rec"
	kill -"$sig" "$fp"
	wait_for grep -q "^$what" "$T/$1.out"
	cp=$(awk -v w="$what" '$1 == w { print $2 }' "$T/$1.out")
}

# stop_recording NAME PID ERR SAYS: PID (forked) records, Ctrl-C stops
# needle record (np), which ends well and says SAYS in ERR.
stop_recording() {
	check "$1: the forked process records meanwhile (work() starts $(entry "$2"))" test "$(entry "$2")" != 0f1f440000
	kill -INT "$np"
	wait "$np"
	check_eq "$1: the recording ends well" "$?" 0
	check "$1: says it let go ($(grep 'let go' "$3"))" grep -qF "$4" "$3"
}

# -p: a child with a signal-blocking thread, and its child.
forked_while_recorded p
kill -USR2 "$cp"
wait_for grep -q '^grandchild' "$T/p.out"
gp=$(awk '/^grandchild/ { print $2 }' "$T/p.out")
sleep 0.2
stop_recording "-p" "$cp" "$T/p.rec" "let go of 2 processes forked during the recording"
check_eq "-p: only that and the usual lines on stderr" "$(grep -vc 'recording process\|let go of\|recorded .* events\|detached from' "$T/p.rec")" 0
released "-p: the parent" "$fp"
released "-p: the child" "$cp"
released "-p: the grandchild" "$gp"
for t in "$cp" "$gp"; do
	n=$("$NEEDLE" replay -i "$T/p.data" --tid "$t" | grep -c 'work();')
	check "-p: task $t's calls are in the trace ($n)" test "$n" -gt 0
done
# Recorded again, on its own: nothing of the first recording is left.
"$NEEDLE" record -p "$cp" --duration=0.5 -o "$T/c.data" 2>"$T/c.err"
check_eq "-p again on the child: records" "$?" 0
n=$(calls "$T/c.data" work)
check "-p again on the child: work() recorded ($n)" test "$n" != missing -a "$n" != 0
released "-p again on the child" "$cp"
finish "-p: the grandchild" "$gp" "$T/p.out"
finish "-p: the child" "$cp" "$T/p.out"
finish "-p: the parent" "$fp" "$T/p.out"
wait "$fp"
check_eq "-p: the parent exits 0" "$?" 0

# Again and again: the child's busy thread is stopped anywhere in its
# traced calls when it is borrowed to start the session (before needle
# called libneedle's own entry there, a dlopen on the visit's stack took
# the thread's open calls for ones a longjmp skipped, and the process
# aborted about one time in five).
for round in 1 2 3 4 5 6; do
	forked_while_recorded l
	sleep 0.3
	kill -INT "$np"
	wait "$np"
	st=$(awk '{ print $3 }' /proc/"$cp"/stat 2>/dev/null)
	if [ "$st" = Z ] || [ -z "$st" ] || ! grep -q "let go of 1 process" "$T/l.rec"; then
		fail "round $round: the child let go of and alive (state ${st:-gone}; $(grep -v 'recording process' "$T/l.rec" | tr '\n' ' '))"
		kill "$cp" "$fp" 2>/dev/null
		break
	fi
	kill -TERM "$cp" "$fp"
	wait "$fp"
	wait_for grep -q "^done $cp " "$T/l.out"
	[ "$round" = 6 ] && pass "6 rounds: each child let go of, alive, and its sums right"
	grep -q "^done $cp calls=[1-9][0-9]* ok$" "$T/l.out" || { fail "round $round: the child's sums ($(grep "^done $cp" "$T/l.out"))"; break; }
done

# A started program's daemon, left running: Ctrl-C while needle record
# waits for it lets it go.
"$NEEDLE" record -o "$T/d.data" -- "$FT" daemon >"$T/d.out" 2>"$T/d.err" &
np=$!
wait_for grep -q 'recording the processes it left running' "$T/d.err"
dp=$(awk '/^child/ { print $2 }' "$T/d.out")
stop_recording "daemon" "$dp" "$T/d.err" "let go of 1 process forked during the recording ($dp)"
released "daemon" "$dp"
n=$("$NEEDLE" replay -i "$T/d.data" --tid "$dp" | grep -c 'work();')
check "daemon: its calls are in the trace ($n)" test "$n" -gt 0
finish "daemon" "$dp" "$T/d.out"

# needle record killed: the parent's agent detaches by itself, the child
# keeps its copy, and a later -p on the child lets go of it first.
forked_while_recorded k
kill -KILL "$np"
wait "$np" 2>/dev/null
wait_for sh -c "! grep -q needle-buffer /proc/$fp/maps"
check "killed: the child keeps its copy (work() starts $(entry "$cp"))" test "$(entry "$cp")" != 0f1f440000
"$NEEDLE" record -p "$cp" --duration=0.5 -o "$T/k2.data" 2>"$T/k2.err"
st=$?; check_eq "killed: -p on the child records ($(tr '\n' ' ' <"$T/k2.err" | head -c 300))" "$st" 0
n=$(calls "$T/k2.data" work)
check "killed: -p on the child: work() recorded ($n)" test "$n" != missing -a "$n" != 0
released "killed: after -p on the child" "$cp"
finish "killed: the child" "$cp" "$T/k.out"
finish "killed: the parent" "$fp" "$T/k.out"

# --snapshot does not follow what a started program leaves running: that
# is let go of when the program ends, not left recording into rings
# nobody reads.
"$NEEDLE" record --snapshot=4 -o "$T/s.data" -- "$FT" daemon >"$T/s.out" 2>"$T/s.err"
check_eq "snapshot daemon: the recording ends well" "$?" 0
sp=$(awk '/^child/ { print $2 }' "$T/s.out")
check "snapshot daemon: says it let go ($(grep 'let go' "$T/s.err"))" \
	grep -qF "let go of 1 process forked during the recording ($sp)" "$T/s.err"
released "snapshot daemon" "$sp"
finish "snapshot daemon" "$sp" "$T/s.out"

# libneedle replaced during the recording (rebuilt, upgraded): the
# children map a file that is gone (" (deleted)" in their maps), whose
# entry is found through /proc/PID/map_files.
mkdir -p "$T/lib"
cp "$BUILD/libneedle.so.1" "$T/lib/libneedle.so"
cp "$BUILD/libneedle-boot.so" "$T/lib/"
export NEEDLE_LIB="$T/lib/libneedle.so"
forked_while_recorded r
cp "$T/lib/libneedle.so" "$T/lib/new" && mv "$T/lib/new" "$T/lib/libneedle.so"
check "replaced: the child maps a deleted libneedle" grep -q 'libneedle.so (deleted)' /proc/"$cp"/maps
stop_recording "replaced" "$cp" "$T/r.rec" "let go of 1 process forked during the recording ($cp)"
unset NEEDLE_LIB
released "replaced" "$cp"
# Recorded again: its libneedle is another file, gone; a second one would
# interpose and patch beside it.
"$NEEDLE" record -p "$cp" --duration=0.5 -o "$T/r2.data" 2>"$T/r2.err"
check_eq "replaced: -p on it again is refused" "$?" 1
check "replaced: in one line ($(cat "$T/r2.err"))" \
	sh -c "grep -q 'has another libneedle loaded' '$T/r2.err' && [ \$(wc -l <'$T/r2.err') = 1 ]"
finish "replaced: the child" "$cp" "$T/r.out"
finish "replaced: the parent" "$fp" "$T/r.out"

# Exec'ed images that record nothing (-F names none of theirs) still map
# the buffer, to pass the recording on to what they exec: sh, then sleep.
"$NEEDLE" record -F work -o "$T/e.data" -- "$FT" exec >"$T/e.out" 2>"$T/e.err" &
np=$!
wait_for grep -q 'recording the processes it left running' "$T/e.err"
shp=$(awk '/^child/ { print $2 }' "$T/e.out")
wait_for sh -c "pgrep -P $shp -x sleep >/dev/null"
slp=$(pgrep -P "$shp" -x sleep)
kill -INT "$np"
wait "$np"
check_eq "exec'ed: the recording ends well" "$?" 0
check "exec'ed: says it let go of both ($(grep 'let go' "$T/e.err"))" \
	grep -qF "let go of 2 processes forked during the recording" "$T/e.err"
for p in "$shp" "$slp"; do
	check_eq "exec'ed: $(cat /proc/"$p"/comm) maps nothing of needle's" "$(grep -c 'needle-buffer\|needle-meta' /proc/"$p"/maps)" 0
done
kill "$slp" "$shp" 2>/dev/null

# A daemon left by a program recorded with a libneedle at another path
# (still there): a later -p uses that one rather than load a second.
mkdir -p "$T/lib2"
cp "$BUILD/libneedle.so.1" "$T/lib2/libneedle.so"
cp "$BUILD/libneedle-boot.so" "$T/lib2/"
NEEDLE_LIB="$T/lib2/libneedle.so" "$NEEDLE" record -o "$T/a.data" -- "$FT" daemon >"$T/a.out" 2>"$T/a.err" &
np=$!
wait_for grep -q 'recording the processes it left running' "$T/a.err"
ap=$(awk '/^child/ { print $2 }' "$T/a.out")
kill -INT "$np"
wait "$np"
"$NEEDLE" record -p "$ap" --duration=0.5 -o "$T/a2.data" 2>"$T/a2.err"
st=$?; check_eq "other path: -p records ($(tr '\n' ' ' <"$T/a2.err"))" "$st" 0
check "other path: says it uses the libneedle loaded" grep -q "has $T/lib2/libneedle.so loaded already" "$T/a2.err"
check_eq "other path: one libneedle in it" "$(grep 'libneedle.so' /proc/"$ap"/maps | awk '{ print $6 }' | sort -u | wc -l)" 1
n=$(calls "$T/a2.data" work)
check "other path: work() recorded ($n)" test "$n" != missing -a "$n" != 0
released "other path" "$ap"
finish "other path" "$ap" "$T/a.out"

# A raw fork (clone without the C library: no atfork handler runs in the
# child) copies the parent's session word too: told by its PID.
forked_while_recorded w HUP rawchild
wp=$cp
stop_recording "raw fork" "$wp" "$T/w.rec" "let go of 1 process forked during the recording ($wp)"
released "raw fork" "$wp"
finish "raw fork: the child" "$wp" "$T/w.out"
finish "raw fork: the parent" "$fp" "$T/w.out"

# A child stopped (SIGSTOP) cannot lend a thread: said at once, and a
# later -p on it, once it runs, lets go of its copy first.
forked_while_recorded t
kill -STOP "$cp"
kill -INT "$np"
wait "$np"
check "stopped: says why it keeps its copy ($(grep 'keeps' "$T/t.rec"))" \
	grep -q "process $cp (fork_target), forked during the recording, keeps its patched code: it is stopped" "$T/t.rec"
kill -CONT "$cp"
"$NEEDLE" record -p "$cp" --duration=0.5 -o "$T/t2.data" 2>"$T/t2.err"
check_eq "stopped, then run: -p on it records" "$?" 0
check "stopped, then run: it let go of the copy first" grep -q "let go of it first" "$T/t2.err"
released "stopped, then run" "$cp"
finish "stopped: the child" "$cp" "$T/t.out"
finish "stopped: the parent" "$fp" "$T/t.out"
