#!/usr/bin/env bash
# test_reader_modes - the three reader wake-up modes record the same events
# for the same deterministic program; in poll mode the program never makes
# a wake-up system call.
. "$(dirname "$0")/../lib.sh"
PROG="$PROGS/threads"

for mode in "--wait" "--poll=5" "--buffer-percent=50"; do
	name=$(echo "$mode" | tr -dc 'a-z')
	# Small chunks, so that many are published; the buffer holds the whole
	# run, so that no event can be lost however slow the reader is.
	"$NEEDLE" record $mode --buffer-size=64 --chunk-size=4 -o "$T/$name.data" -- "$PROG" 4 50000 >"$T/$name.out" 2>/dev/null
	check_eq "$mode: program succeeded" "$?" 0
	"$NEEDLE" report --csv -s name -i "$T/$name.data" | cut -d, -f1,2 >"$T/$name.calls"
	check_eq "$mode: work() calls exact" "$(calls "$T/$name.data" work)" 200000
	check_eq "$mode: step() calls exact" "$(calls "$T/$name.data" step)" 400000
	check_eq "$mode: no event lost" "$("$NEEDLE" info -i "$T/$name.data" | awk '/^lost events:/ {print $3}')" 0
done
check "wait and poll record the same calls" cmp -s "$T/wait.calls" "$T/poll.calls"
check "wait and buffer-percent record the same calls" cmp -s "$T/wait.calls" "$T/bufferpercent.calls"
check_eq "poll: the program never woke the reader" \
	"$("$NEEDLE" info -i "$T/poll.data" | awk '/^reader wakeups/ {print $NF}')" 0
check "info names the reader mode" grep -q 'reader: *buffer-percent 50%' <("$NEEDLE" info -i "$T/bufferpercent.data")

# A buffer too small for the run: events are dropped, counted exactly
# (every call is either recorded or counted as lost), and reported.
"$NEEDLE" record --poll=60000 --buffer-size=1 --chunk-size=64 -o "$T/tiny.data" -- "$PROG" 1 200000 >/dev/null 2>"$T/tiny.err"
check "a full buffer is reported by record" grep -q "LOST" "$T/tiny.err"
lost=$("$NEEDLE" info -i "$T/tiny.data" | awk '/^lost events:/ {print $3}')
events=$("$NEEDLE" info -i "$T/tiny.data" | awk '/^events:/ {print $2}')
check "events were lost" test "$lost" -gt 0
# 200000 work(), 400000 step(), one main() and one thread_main() call,
# entry and exit each.  A call whose entry is dropped loses its exit too,
# and both are counted.
check_eq "recorded + lost = every event the program produced" $((events + lost)) $((2 * (600000 + 2)))
check "replay warns about the loss" grep -q "^# $lost events were lost" <("$NEEDLE" replay -i "$T/tiny.data")

# Where the TSC is unusable (or NEEDLE_NO_TSC=1), events carry
# CLOCK_MONOTONIC nanoseconds: the same calls, and durations still ordered.
NEEDLE_NO_TSC=1 "$NEEDLE" record -o "$T/mono.data" -- "$PROG" 2 1000 >/dev/null 2>&1
check "monotonic clock: info says so" grep -q '^clock: *monotonic' <("$NEEDLE" info -i "$T/mono.data")
check_eq "monotonic clock: work() calls exact" "$(calls "$T/mono.data" work)" 2000
check_eq "monotonic clock: every call's duration covers its callees" \
	"$("$NEEDLE" report --csv -i "$T/mono.data" | awk -F, 'NR > 1 && $4 > $3 {bad++} END {print bad + 0}')" 0
