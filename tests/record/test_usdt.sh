#!/usr/bin/env bash
# test_usdt - -E PROVIDER:NAME records the program's USDT probes (sys/sdt.h)
# as the kernel's uprobes: each hit a line /* PROVIDER:NAME */ inside the
# call it fired in, exactly as many as the program fired, semaphores
# counted up only for the probes asked for, globs, a running process
# (-p), the program's output and status untouched, tracefs left as it
# was (and what a killed recording left there removed), and bad input
# refused before the program runs.
. "$(dirname "$0")/../lib.sh"

P="$PROGS/usdt_prog"
EVENTS=/sys/kernel/tracing/uprobe_events
[ -e "$EVENTS" ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
check "tracefs's uprobe_events is there (root, tracefs)" test -w "$EVENTS"
ours() { grep -c '^p:needle_' "$EVENTS"; }
before=$(ours)

# inside TRACE PROBE FUNC: the probe's lines, each directly inside a
# call of FUNC (the line before it opens FUNC), thread by thread.
inside() {
	replay_threads "$1" | sed 's/^.*| *//' | awk -v p="/* $2 */" -v f="$3() {" \
		'$0 == p { n++; if (prev == f) in_f++ } { prev = $0 } END { print n + 0, in_f + 0 }'
}

"$P" 200 >"$T/plain.out"
plain_rc=$?
"$NEEDLE" record -E 'usdt_test:*' -o "$T/all.data" -- "$P" 200 >"$T/all.out" 2>"$T/all.err"
check_eq "all probes: exit status is the program's" "$?" "$plain_rc"
check "all probes: output byte-identical" cmp -s "$T/plain.out" "$T/all.out"
check_eq "all probes: step's 200, each inside step()" "$(inside "$T/all.data" usdt_test:step step)" "200 200"
check_eq "all probes: the guarded probe's 200, its semaphore counted up" \
	"$(inside "$T/all.data" usdt_test:guarded guarded)" "200 200"
check_eq "all probes: the thread's 200, inside work()" "$(inside "$T/all.data" usdt_test:worker work)" "200 200"
check "all probes: info counts the hits" grep -q "USDT probes: *600 hits of the 3 probes" <("$NEEDLE" info -i "$T/all.data")
check "all probes: the record line counts them" grep -q "and 600 of the kernel's" "$T/all.err"
check_eq "all probes: tracefs as it was" "$(ours)" "$before"
# The janitor is needle record's child but no process of the program's:
# once the program has exited, needle record does not look for its
# descendants (a quarter of a second of 50 ms sleeps, before).
strace -f -qq -e trace=nanosleep,clock_nanosleep -o "$T/sleeps" \
	"$NEEDLE" record -E 'usdt_test:step' -o "$T/j.data" -- "$P" 5 >/dev/null 2>&1
check_eq "the janitor alone: no look for descendants after the program's end" \
	"$(grep -c 'tv_nsec=50000000' "$T/sleeps")" 0

# tracefs not mounted (as at boot on some machines): needle mounts it
# where the kernel made its mount point.  In a mount namespace of its own,
# so that the unmount is seen by nothing else.
if unshare -m true 2>/dev/null; then
	unshare -m sh -c 'umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null
		[ -e /sys/kernel/tracing/events ] && exit 9
		"$0" record -E "usdt_test:step" -o "$1" -- "$2" 40 >/dev/null 2>&1' "$NEEDLE" "$T/mnt.data" "$P"
	check_eq "tracefs unmounted: needle mounts it and records" "$?" 0
	check_eq "tracefs unmounted: step's 40 probes" "$(inside "$T/mnt.data" usdt_test:step step)" "40 40"
else
	pass "tracefs unmounted: skipped (no mount namespace here)"
fi

# Only step: the guarded probe's semaphore stays 0, so it never fires.
"$NEEDLE" record -E 'usdt_test:step' -o "$T/step.data" -- "$P" 200 >/dev/null 2>&1
check_eq "one probe: its 200" "$(inside "$T/step.data" usdt_test:step step)" "200 200"
check_eq "one probe: no other's line" "$("$NEEDLE" replay -i "$T/step.data" | grep -c 'usdt_test:[gw]')" 0
check "one probe: info says 200 hits of 1" grep -q "USDT probes: *200 hits of the 1 probes" <("$NEEDLE" info -i "$T/step.data")
"$NEEDLE" record -E 'usdt_test:step' -o "$T/sema.data" -- "$P" 1 sema 2>/dev/null | grep semaphores >"$T/sema.out"
# (one count per event the kernel has open on it: a CPU's each)
check_eq "one probe: only its semaphore is counted up" "$(sed 's/step=[1-9][0-9]*/step=N/' "$T/sema.out")" \
	"semaphores step=N guarded=0 worker=0"
check_eq "untraced: no semaphore counted" "$("$P" 1 sema | grep semaphores)" "semaphores step=0 guarded=0 worker=0"
"$NEEDLE" record -E 'usdt_test:w*' -o "$T/glob.data" -- "$P" 50 >/dev/null 2>&1
check_eq "a glob: the worker's 50 alone" "$("$NEEDLE" replay -i "$T/glob.data" | grep -c 'usdt_test:')" 50

# PATTERN@OBJECT: a file the program does not load at start (here one
# a shell exec's), read too; the probes fire once it maps it.
"$NEEDLE" record --sites=all -E "usdt_test:step@$P" -o "$T/obj.data" -- /bin/sh -c "$P 30" >/dev/null 2>&1
check_eq "PATTERN@OBJECT: the 30 steps of the program the shell exec'd" \
	"$("$NEEDLE" replay -i "$T/obj.data" | grep -c 'usdt_test:step')" 30
"$NEEDLE" record -E 'usdt_test:step' -E "usdt_test:step@$(dirname "$P")/../progs/usdt_prog" -o "$T/dup.data" -- "$P" 20 >/dev/null 2>&1
check_eq "PATTERN@OBJECT naming the program by another path: each hit once" \
	"$("$NEEDLE" replay -i "$T/dup.data" | grep -c 'usdt_test:step')" 20
bad_input "an empty provider and name" "a USDT probe is PROVIDER:NAME, with both given" -E ':'
bad_input "an OBJECT that is not there" "cannot read /nonexistent as an ELF object" -E 'usdt_test:step@/nonexistent'

# The views: under -t a probe's line still shows, with the calls it is
# in; dump and the Chrome export name it.
check_eq "replay -t 1s: the probes still show" "$("$NEEDLE" replay -t 1s -i "$T/step.data" | grep -c 'usdt_test:step')" 200
check_eq "dump names them" "$("$NEEDLE" dump -i "$T/step.data" | grep -c '/\* usdt_test:step \*/')" 200
"$NEEDLE" export --format=chrome -i "$T/step.data" -o "$T/step.json" 2>/dev/null
check_eq "the Chrome export: an instant each" "$(grep -o '"name":"usdt_test:step","cat":"usdt","ph":"i"' "$T/step.json" | wc -l)" 200

# A running process: what it fires after the attach.
mkfifo "$T/in"
"$P" 100 wait <"$T/in" >"$T/w.out" &
prog=$!
exec 3>"$T/in"
check "attach: the program runs" wait_for grep -q '^ready' "$T/w.out"
"$NEEDLE" record -p "$prog" -E 'usdt_test:step' -o "$T/attach.data" >/dev/null 2>"$T/attach.err" 3>&- &
rec=$!
check "attach: recording" wait_for grep -q 'recording process' "$T/attach.err"
exec 3>&-
wait "$prog"
check_eq "attach: the program's status" "$?" 0
wait "$rec"
check_eq "attach: the 100 steps after the attach" "$(inside "$T/attach.data" usdt_test:step step)" "100 100"
check_eq "attach: tracefs as it was" "$(ours)" "$before"

# needle record killed (SIGKILL) while its uprobes are in tracefs: its
# janitor (a shell in a session of its own, reading a pipe only needle
# record holds) takes them out once it is gone, and then ends.
mkfifo "$T/kin"
"$NEEDLE" record -E 'usdt_test:step' -o "$T/killed.data" -- "$P" 10 wait <"$T/kin" >"$T/k.out" 2>"$T/k.err" &
rec=$!
exec 4>"$T/kin"
check "killed: recording" wait_for grep -q '^ready' "$T/k.out"
group=$(sed -n "s|^p:\\(needle_${rec}_[0-9]*\\)/p0 .*|\\1|p" "$EVENTS" | tail -1)
check "killed: its group in tracefs ($group)" test -n "$group"
kill -KILL "$rec"
wait "$rec" 2>/dev/null
group_gone() { ! grep -q "^p:$group/" "$EVENTS"; }
janitor_gone() { ! pgrep -f "uprobe_events $group" >/dev/null; }
check "killed: its uprobes taken out of tracefs" wait_for group_gone
check "killed: its janitor ended" wait_for janitor_gone
exec 4>&-
check_eq "killed: tracefs as it was" "$(ours)" "$before"
# After a recording that ended as it should, its janitor is gone too.
"$NEEDLE" record -E 'usdt_test:step' -o "$T/ended.data" -- "$P" 5 >/dev/null 2>&1 &
rec=$!
wait "$rec"
ended_gone() { ! pgrep -f "uprobe_events needle_${rec}_" >/dev/null; }
check "a recording that ended: its janitor ended with it" wait_for ended_gone

# A recording killed leaves its uprobes; the next one removes them.
for i in 0 1 2 3 4 5 6 7 8 9; do echo "p:needle_999999_1/p$i $P:0x1000" >>"$EVENTS"; done 2>/dev/null
"$NEEDLE" record -E 'usdt_test:step' -o "$T/after.data" -- "$P" 10 >/dev/null 2>&1
check_eq "a dead recording's 10 uprobes removed by the next" "$(grep -c '^p:needle_999999_1/' "$EVENTS")" 0

# Bad input, before the program runs.
bad_input "a probe not there" "no USDT probe of .* is named so (3 there, e.g. usdt_test:" -E 'usdt_test:nosuch'
P="$PROGS/graph_prog"
bad_input "a program without probes" "have no USDT probe" -E 'x:y'
check_eq "after the refusals: tracefs as it was" "$(ours)" "$before"

# The views take -E PROVIDER:NAME (uftrace's replay -E): a probe the
# trace recorded, shown as always; one it did not is refused.
check_eq "replay -E naming a recorded probe (a glob): its 200 lines" \
	"$("$NEEDLE" replay -i "$T/all.data" -E 'usdt_test:st*' --no-event | grep -c 'usdt_test:step')" 200
"$NEEDLE" replay -i "$T/step.data" -E 'usdt_test:worker' >"$T/noprobe.out" 2>"$T/noprobe.err"
check_eq "replay -E naming a probe the trace did not record: refused, one line" \
	"$?:$(wc -l <"$T/noprobe.err"):$(wc -c <"$T/noprobe.out")" "1:1:0"
check "replay -E naming a probe the trace did not record: says so" \
	grep -q "recorded no USDT probe of that name" "$T/noprobe.err"
