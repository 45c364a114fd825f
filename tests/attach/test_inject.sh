#!/usr/bin/env bash
# test_inject - libneedle loaded into a running process (src/cli/inject/inject.c):
# the program's output and exit status are those of a run left alone, the
# library is in its maps afterwards, and the borrowed thread is held for a
# bounded time (printed).  The groundwork of `needle record -p`.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
P="$BUILD/tests/attach/ticker"
"$P" 1000 >"$T/plain"
"$P" 1000 >"$T/out" &
pid=$!
sleep 0.2
"$BUILD/tests/attach/inject_driver" "$pid" "$(readlink -f "$BUILD/libneedle.so")" >"$T/inj" 2>"$T/err"
st=$?; check "inject: libneedle loaded into the running process ($(cat "$T/inj" "$T/err"))" test "$st" = 0
check "inject: libneedle is in its maps" grep -q libneedle "/proc/$pid/maps"
wait "$pid"
check_eq "inject: the program exited with status 0" "$?" 0
check "inject: output identical to a run left alone" cmp -s "$T/plain" "$T/out"
