#!/usr/bin/env bash
# test_attach_sleep - needle record -p borrows a thread that sleeps in
# nanosleep or poll (restarted by the kernel through the thread's restart
# block, which the borrowed thread's own calls replace): the sleep must
# end normally, never with EINTR, and the process must run on.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
P="$PROGS/sleeper"

for mode in nanosleep poll; do
	"$P" "$mode" >"$T/out" &
	pid=$!
	sleep 0.3
	"$NEEDLE" record -p "$pid" -o "$T/s.data" --duration=0.2 2>"$T/err"
	st=$?
	check_eq "$mode: attached and detached ($(tail -1 "$T/err"))" "$st" 0
	wait "$pid"
	check_eq "$mode: the process exits 0" "$?" 0
	check_eq "$mode: its call returned normally, no EINTR" "$(cat "$T/out")" "$mode 0 ok"
done
