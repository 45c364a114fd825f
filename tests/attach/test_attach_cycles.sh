#!/usr/bin/env bash
# test_attach_cycles - 100 cycles of attach, record, detach against one
# running target (threads in every blocking call, SIGTRAP blocked in one,
# threads churning, forks, dlopen/dlclose): every cycle records, every
# round of the target's checks passes after it, its output is byte for byte
# that of a run left alone, and its memory grows by less than the bound
# docs/design.md gives (ATTACH_RSS_BOUND_KIB).
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
. "$(dirname "$0")/target.sh"
CYCLES=${ATTACH_CYCLES:-100}
ATTACH_RSS_BOUND_KIB=4096

rss_kib() { awk '/^VmRSS:/ { print $2 }' /proc/"$1"/status; }

# The run left alone: the same commands, nothing attached.
target_start plain --dl "$DL_LIB"
for i in $(seq 1 "$CYCLES"); do target_round; done
target_quit
cp "$T/plain.out" "$T/expected.out"

target_start cyc --dl "$DL_LIB"
recorded=0 rounds_ok=0 rss1=0
for i in $(seq 1 "$CYCLES"); do
	if "$NEEDLE" record -p "$TPID" -o "$T/cyc.data" --duration=0.1 2>"$T/cyc.rec" &&
		grep -q "detached from process $TPID" "$T/cyc.rec"; then
		recorded=$((recorded + 1))
	else
		echo "      cycle $i: $(tail -2 "$T/cyc.rec" | tr '\n' ' ')"
	fi
	target_round
	[ "$RR" = "round $TROUND ok" ] && rounds_ok=$((rounds_ok + 1))
	[ "$i" = 1 ] && rss1=$(rss_kib "$TPID")
done
rss_n=$(rss_kib "$TPID")
target_quit
check_eq "$CYCLES attach/record/detach cycles, each recorded and detached" "$recorded" "$CYCLES"
check_eq "after each cycle, every thread's checks passed" "$rounds_ok" "$CYCLES"
check_eq "the target exits 0" "$TSTATUS" 0
check "its output is identical to the run left alone" cmp -s "$T/expected.out" "$T/cyc.out"
grep -i "fail\|interrupted" "$T/cyc.err" | head -5
growth=$((rss_n - rss1))
echo "      RSS after cycle 1: $rss1 KiB, after cycle $CYCLES: $rss_n KiB"
check "memory grew by $growth KiB over $((CYCLES - 1)) cycles, under $ATTACH_RSS_BOUND_KIB KiB" \
	test "$growth" -lt "$ATTACH_RSS_BOUND_KIB"
