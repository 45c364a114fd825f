#!/usr/bin/env bash
# test_attach_leftovers - what needle record -p leaves in a process, and
# how it tells the process's end (tests/attach/leftover_target.c):
#  - after a recording and detach, after a refused attempt (filters that
#    match nothing) and after a failed one (a thread blocks SIGTRAP and
#    needle's stop signal), the target's /proc/PID/fd listing is the one
#    it had before; its VmSize grew, over the first attach, by no more
#    than ATTACH_VM_BOUND_KIB (the idle library, below), and by no more
#    than ATTACH_VM_AGAIN_KIB over each later attempt;
#  - the target's stdout and stderr (files of its own) are byte for byte
#    those of a run left alone, and what libneedle had to say (the failed
#    attempt's reason) is on needle record's stderr instead;
#  - under ulimit -v 3000000, a target that maps 640 MiB chunks after an
#    attach gets as many as untraced;
#  - a recorded target killed by SIGSEGV, by SIGKILL, or exiting with
#    status 3 is reported so by needle record and needle info.
#
# ATTACH_VM_BOUND_KIB, the idle library's address space: the C library's
# malloc arena that libneedle's threads use (a 64 MiB reservation, reused
# by every later session), the stacks of its two exited threads that the
# C library keeps for reuse (boot and session, 8 MiB each), libneedle and
# the libraries it links (libdw, libelf, Zydis, liblzma, libbz2, libz:
# about 10 MiB), the first segment of per-thread states (about 4 MiB for
# 16 threads), and trampolines, stubs and site tables (about 8 MiB here):
# 105 MiB measured, bound 128 MiB.  Before per-thread state was reserved
# as threads come, it was 258 GiB.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
LT="$BUILD/tests/attach/leftover_target"
ATTACH_VM_BOUND_KIB=131072
ATTACH_VM_AGAIN_KIB=1024

vm_kib() { awk '/^VmSize:/ { print $2 }' /proc/"$1"/status; }
fd_list() { for f in /proc/"$1"/fd/*; do echo "${f##*/} $(readlink "$f")"; done; }

# lt_start NAME [ULIMIT_V]: start the target (LP), commands on fd 8.
lt_start() {
	LN=$1
	rm -f "$T/$LN.in"
	mkfifo "$T/$LN.in"
	if [ -n "${2:-}" ]; then
		bash -c 'ulimit -v "$1" && exec "$0"' "$LT" "$2" <"$T/$LN.in" >"$T/$LN.out" 2>"$T/$LN.err" &
	else
		"$LT" <"$T/$LN.in" >"$T/$LN.out" 2>"$T/$LN.err" &
	fi
	LP=$!
	exec 8>"$T/$LN.in"
	wait_for grep -q "leftover_target up" "$T/$LN.err"
}
lt_cmd() { echo "$1" >&8; }
# lt_await LINE: the target printed LINE on stdout.
lt_await() { wait_for grep -qx -- "$1" "$T/$LN.out"; }
lt_end() {
	exec 8>&-
	wait "$LP"
	LSTATUS=$?
}

# --- Left alone: the same commands, nothing attached.
lt_start alone
lt_cmd "say one"; lt_await one
lt_cmd "work 1000"; lt_await "work 1000 1499500"
lt_cmd "block"; lt_await blocking
lt_cmd "mainunblock"; lt_await unblocked
lt_cmd "say two"; lt_await two
lt_cmd "exit 0"
lt_end
cp "$T/alone.out" "$T/expected.out"
cp "$T/alone.err" "$T/expected.err"

# --- Recorded, refused, failed.
lt_start rec
fd_list "$LP" >"$T/fd.0"
vm0=$(vm_kib "$LP")
lt_cmd "say one"; lt_await one
"$NEEDLE" record -p "$LP" -o "$T/rec.data" --duration=0.3 2>"$T/rec1.err"
check "recorded and detached" grep -q "detached from process $LP" "$T/rec1.err"
fd_list "$LP" >"$T/fd.1"
vm1=$(vm_kib "$LP")
check "after detach: the same descriptors as before" cmp -s "$T/fd.0" "$T/fd.1"
diff "$T/fd.0" "$T/fd.1" | head -5
lt_cmd "work 1000"; lt_await "work 1000 1499500"
"$NEEDLE" record -p "$LP" -o "$T/rec.data" --duration=0.3 2>"$T/rec2.err"
check "recorded and detached again" grep -q "detached from process $LP" "$T/rec2.err"
"$NEEDLE" record -p "$LP" -o "$T/ref.data" -F no_such_function 2>"$T/ref.err"
check "filters matching nothing: refused" grep -q "the filters match no function" "$T/ref.err"
fd_list "$LP" >"$T/fd.2"
vm2=$(vm_kib "$LP")
check "after the refused attempt: the same descriptors as before" cmp -s "$T/fd.0" "$T/fd.2"
diff "$T/fd.0" "$T/fd.2" | head -5
# The first thread, which needle record does not hold with ptrace (its
# stops could be taken by a wait for the program), blocks them.
lt_cmd "mainblock"; lt_await blocking
"$NEEDLE" record -p "$LP" -o "$T/fail.data" --duration=0.3 2>"$T/fail.err"
check_eq "the first thread blocking SIGTRAP and the stop signal: the attempt fails" "$?" 1
check "needle record says why it could not patch ($(head -c 200 "$T/fail.err" | tr '\n' ' '))" \
	grep -q "^needle: thread [0-9]* blocks signal [0-9]*, so it cannot be stopped for patching" "$T/fail.err"
fd_list "$LP" >"$T/fd.3"
check "after the failed attempt: the same descriptors as before" cmp -s "$T/fd.0" "$T/fd.3"
diff "$T/fd.0" "$T/fd.3" | head -5
lt_cmd "mainunblock"; lt_await unblocked
lt_cmd "say two"; lt_await two
lt_cmd "exit 0"
lt_end
check_eq "the target exits 0" "$LSTATUS" 0
echo "      VmSize: $vm0 KiB before, $vm1 KiB after the first detach, $vm2 KiB after a second and a refused attempt"
check "VmSize grew by $((vm1 - vm0)) KiB over the first attach, at most $ATTACH_VM_BOUND_KIB KiB" \
	test $((vm1 - vm0)) -le "$ATTACH_VM_BOUND_KIB"
check "VmSize grew by $((vm2 - vm1)) KiB over the later ones, at most $ATTACH_VM_AGAIN_KIB KiB" \
	test $((vm2 - vm1)) -le "$ATTACH_VM_AGAIN_KIB"
check "its stdout is identical to the run left alone" cmp -s "$T/expected.out" "$T/rec.out"
check "its stderr is identical to the run left alone" cmp -s "$T/expected.err" "$T/rec.err"
diff "$T/expected.err" "$T/rec.err" | head -5

# --- Under ulimit -v 3000000 (about 2.9 GiB): 640 MiB chunks, held at
# once, untraced and after an attach.
lt_start lim0 3000000
lt_cmd "mmap 40"; wait_for grep -q '^mmap ' "$T/lim0.out"
untraced=$(grep '^mmap ' "$T/lim0.out")
lt_cmd "exit 0"
lt_end
lt_start lim1 3000000
"$NEEDLE" record -p "$LP" -o "$T/lim.data" --duration=0.3 2>"$T/lim.err"
check "under ulimit -v: recorded and detached ($(tail -1 "$T/lim.err"))" grep -q "detached from process $LP" "$T/lim.err"
lt_cmd "mmap 40"; wait_for grep -q '^mmap ' "$T/lim1.out"
traced=$(grep '^mmap ' "$T/lim1.out")
lt_cmd "exit 0"
lt_end
check_eq "under ulimit -v: after an attach, as many 640 MiB chunks as untraced ($untraced)" "$traced" "$untraced"

# --- How a recorded process ends.
# ended HOW NAME RECORD-LINE INFO-LINE
ended() {
	local how=$1 name=$2 said=$3 info=$4
	lt_start "end_$name"
	"$NEEDLE" record -p "$LP" -o "$T/$name.data" 2>"$T/$name.rec" &
	local np=$!
	wait_for grep -q "recording process $LP" "$T/$name.rec"
	sleep 0.1
	if [ "$how" = kill ]; then kill -KILL "$LP"; else lt_cmd "$how"; fi
	lt_end
	wait "$np"
	check_eq "$name: needle record -p ends with the process, status 0" "$?" 0
	check "$name: needle record says '$said' ($(tail -1 "$T/$name.rec"))" \
		grep -qx "needle: process $LP $said" "$T/$name.rec"
	check "$name: needle info says '$info' ($("$NEEDLE" info -i "$T/$name.data" | grep '^end:'))" \
		sh -c "'$NEEDLE' info -i '$T/$name.data' | grep -qx 'end: *$info'"
	check "$name: never reported as an exit with status 0" sh -c "! grep -q 'status 0' '$T/$name.rec'"
}
ended segv segv "was killed by signal 11 (Segmentation fault)" "the process was killed by signal 11 (Segmentation fault)"
ended kill sigkill "was killed by signal 9 (Killed)" "the process was killed by signal 9 (Killed)"
ended "exit 3" exit3 "exited with status 3" "the process exited with status 3"
