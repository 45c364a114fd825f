#!/usr/bin/env bash
# test_streaming - the views stream: a trace several times larger than the
# memory they are allowed (ulimit -v) is replayed, reported and exported.
. "$(dirname "$0")/../lib.sh"

# The buffer holds the whole trace (about 50 MB): with two busy threads on two
# CPUs the reader may not run before the default 16 MiB fill, and the exact
# counts below need a trace without loss.
"$NEEDLE" record --buffer-size=128 -o "$T/big.data" -- "$PROGS/threads" 2 2000000 >/dev/null 2>&1
check_eq "the recording lost nothing" "$("$NEEDLE" info -i "$T/big.data" | awk '/^lost events:/ {print $3}')" 0
size=$(stat -c %s "$T/big.data")
limit_kb=40000
check "trace larger than the views' memory limit ($size bytes vs $limit_kb KiB)" test "$size" -gt $((limit_kb * 1024))
report=$( (ulimit -v $limit_kb; "$NEEDLE" report --csv -i "$T/big.data") )
check_eq "report within the limit: exact counts" "$(echo "$report" | awk -F, '$1 == "step" {print $2}')" 8000000
lines=$( (ulimit -v $limit_kb; "$NEEDLE" replay -i "$T/big.data" | wc -l) )
check "replay within the limit reaches the end" test "$lines" -gt 4000000
( ulimit -v $limit_kb; "$NEEDLE" export --format=perfetto -i "$T/big.data" -o "$T/big.pf" )
check_eq "perfetto export within the limit" "$?" 0
