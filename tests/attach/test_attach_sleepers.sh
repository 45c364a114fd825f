#!/usr/bin/env bash
# test_attach_sleepers - needle record -p rewrites the C library's entries
# (relocated sites: every other thread must be out of their bytes) while
# threads sleep in epoll_wait, poll, select, read and a futex, and one
# works.  A stop signal would end the epoll, poll and select calls with
# EINTR in the kernel and start their timeouts over; a sleeper is instead
# left asleep behind a door (an int3 past its syscall instruction) for
# each batch.  Checked from outside, by the kernel's own tracepoints: no
# stop signal is ever sent to a sleeper and no system call of the
# process returns EINTR, over two attaches; the program's output is
# exactly the wakes it was sent; the wakes while recorded are counted
# exactly.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
SL="$BUILD/tests/attach/sleepers"
[ -x "$SL" ] || { fail "$SL is missing"; exit 1; }
command -v bpftrace >/dev/null || { fail "bpftrace is installed (scripts/setup.sh)"; exit 1; }
tracing_ready || { fail "the kernel's tracepoints are reachable (tracefs at /sys/kernel/tracing)"; exit 1; }
SLEEPERS=7
STOP=$(($(kill -l RTMAX) - 2))

mkfifo "$T/in"
"$SL" <"$T/in" >"$T/out" 2>"$T/err" &
pid=$!
exec 9>"$T/in"
wait_for grep -q '^tid futex' "$T/out"
mapfile -t tids < <(awk '/^tid / {print $3}' "$T/out")
check_eq "the sleepers said who they are" "${#tids[@]}" "$SLEEPERS"
filt=$(printf 'args->pid == %s || ' "${tids[@]}")
filt=${filt% || }

timeout -k 5 300 bpftrace -e "
tracepoint:signal:signal_generate /args->sig == $STOP && ($filt)/ { @stops = count(); }
tracepoint:raw_syscalls:sys_exit /pid == $pid && args->ret == -4/ { @eintr[tid, args->id] = count(); @eintr_total = count(); }
tracepoint:raw_syscalls:sys_exit /pid == $pid/ { @syscalls = count(); }" >"$T/bpf" 2>&1 &
bpf=$!
wait_for grep -q '^Attaching' "$T/bpf"

expect=
declare -A woken
wake() { # wake N: one wake of sleeper N, and its line in the output
	local n=$1 name
	name=$(awk -v i=$((n + 2)) 'NR == i {print $2}' "$T/out")
	woken[$n]=$((${woken[$n]:-0} + 1))
	expect+="$name ${woken[$n]}: 1"$'\n'
	echo "$n" >&9
	wait_for grep -q "^$name ${woken[$n]}:" "$T/out"
}
wake_all() { for n in $(seq 0 $((SLEEPERS - 1))); do wake "$n"; done; }

wake_all
for round in 1 2; do
	# Every sleeper asleep when the batches run.
	"$NEEDLE" record -p "$pid" -o "$T/$round.data" --duration=60 2>"$T/$round.rec" &
	rec=$!
	wait_for grep -q "recording process" "$T/$round.rec"
	wake_all
	kill -INT "$rec"
	wait "$rec"
	rc=$?
	check_eq "attach $round: recorded and detached ($(tail -1 "$T/$round.rec"))" "$rc" 0
	check_eq "attach $round: the $SLEEPERS wakes while recorded" "$(calls "$T/$round.data" sleeper_woke)" "$SLEEPERS"
	check "attach $round: relocated entries of the C library were switched" \
		grep -q . <("$NEEDLE" info -i "$T/$round.data" | grep -i 'relocated')
done
wake_all
echo quit >&9
exec 9>&-
wait "$pid"
check_eq "the program exited 0" "$?" 0
kill -INT "$bpf"
wait "$bpf"
check_eq "every wait returned its one byte, no EINTR, no timeout" "$(grep -v '^tid \|^ready' "$T/out")" "${expect%$'\n'}"
check_eq "nothing on its stderr" "$(cat "$T/err")" ""
n=$(awk '/^@syscalls:/ {print $2}' "$T/bpf")
check "the kernel's counter saw the program's system calls (${n:-0})" [ "${n:-0}" -gt 0 ]
s=$(awk '/^@stops:/ {print $2}' "$T/bpf")
e=$(awk '/^@eintr_total:/ {print $2}' "$T/bpf")
check_eq "stop signals sent to a sleeper" "${s:-0}" 0
check_eq "system calls of the program that returned EINTR" "${e:-0}" 0
grep '^@eintr\[' "$T/bpf" | sed 's/^/      /'
