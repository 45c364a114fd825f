#!/usr/bin/env bash
# test_record_fds - nothing needle opens is visible to the traced program:
# the trace file is held by needle record alone, and the descriptors the
# agent reads at start-up sit at high numbers and are closed before main.
# A program that scribbles over descriptors 3 to 9 cannot damage the trace.
. "$(dirname "$0")/../lib.sh"

# Start from a clean table: the test's own descriptors above 2 are closed,
# so that what the program lists is what needle gave it.
run_clean() {
	local fd
	for fd in $(ls /proc/$BASHPID/fd); do
		[ "$fd" -gt 2 ] && eval "exec $fd>&-"
	done
	"$@"
}

reads() { "$NEEDLE" info -i "$1" >/dev/null 2>&1; }

plain=$( (run_clean "$PROGS/fdlist") 2>/dev/null)
check_eq "untraced, the program starts with 0 1 2" "$plain" "0 1 2"
traced=$( (run_clean "$NEEDLE" record -o "$T/l.data" -- "$PROGS/fdlist") 2>"$T/l.err")
check_eq "traced, the program starts with 0 1 2" "$traced" "0 1 2"
check "that trace reads" reads "$T/l.data"

# With --ctl the control socket is needle's one descriptor in the
# program, far above the numbers a program takes for its own.
traced=$( (run_clean "$NEEDLE" record --ctl -o "$T/c.data" -- "$PROGS/fdlist") 2>"$T/c.err")
low=$(echo "$traced" | tr ' ' '\n' | awk '$1 < 100' | tr '\n' ' ')
check_eq "traced with --ctl, descriptors below 100 are 0 1 2" "$low" "0 1 2 "
check_eq "traced with --ctl, one descriptor more (the control socket)" "$(echo "$traced" | wc -w)" 4

# Every mode of the reader, and a program that writes garbage to 3..9.
for mode in --wait --poll=10 --buffer-percent=50; do
	"$NEEDLE" record $mode -o "$T/s.data" -- "$PROGS/fdscribble" 20000 >"$T/s.out" 2>"$T/s.err"
	check_eq "fdscribble $mode: exit 0" "$?" 0
	check "fdscribble $mode: the trace reads" reads "$T/s.data"
	check_eq "fdscribble $mode: every work() call is in it" "$(calls "$T/s.data" work)" 20000
done
