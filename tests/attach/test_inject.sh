#!/usr/bin/env bash
# test_inject - libneedle loaded into a running process (src/cli/inject.c):
# the program's output and exit status are those of a run left alone, the
# library is in its maps afterwards, and the borrowed thread is held for a
# bounded time (printed).  The groundwork of `needle record -p`.
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${NEEDLE_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P="$BUILD/tests/attach/ticker"
"$P" 300 >"$T/plain"
"$P" 300 >"$T/out" &
pid=$!
sleep 0.2
"$BUILD/tests/attach/inject_driver" "$pid" "$(readlink -f "$BUILD/libneedle.so")" >"$T/inj" 2>"$T/err"
rc=$?
if [ "$rc" -eq 0 ]; then echo "PASS: inject: libneedle loaded into the running process ($(cat "$T/inj"))"; else echo "FAIL: inject: $(cat "$T/err")"; fi
if grep -q libneedle "/proc/$pid/maps"; then echo "PASS: inject: libneedle is in its maps"; else echo "FAIL: inject: libneedle is not in its maps"; fi
wait "$pid"
st=$?
if [ "$st" -eq 0 ]; then echo "PASS: inject: the program exited with status 0"; else echo "FAIL: inject: the program exited with $st"; fi
if cmp -s "$T/plain" "$T/out"; then echo "PASS: inject: output identical to a run left alone"; else echo "FAIL: inject: output differs"; fi
