#!/usr/bin/env bash
# test_info - needle info's system and process fields (the INFO section,
# uftrace info's layout): the command line with its quotes escaped as
# uftrace escapes them, the program's exit status, its threads, its file
# and build-id, the machine (CPUs, kernel, host) and the program's use of
# it (time, context switches, memory); a program killed by a signal; a
# trace recorded by attaching has no resource use of the program.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/exitwith"

"$NEEDLE" record -o "$T/x.data" -- "$P" 3 '"quoted"' 'a\b' >/dev/null 2>"$T/err"
rc=$?
check_eq "recorded: the program's status is needle record's ($(tail -1 "$T/err"))" "$rc" 3
"$NEEDLE" info -i "$T/x.data" >"$T/info" 2>"$T/ierr"
st=$?
check_eq "info: exit 0 ($(head -c 200 "$T/ierr"))" "$st" 0
field() { sed -n "s/^# $1 *: //p" "$T/info"; }
check_eq "the system block, after needle's own lines" "$(grep -c -e '^# system information$' -e '^# process information$' "$T/info")" 2
check "cmdline: needle record's own, quotes and backslashes escaped as uftrace does" \
	test "$(field cmdline)" = "$NEEDLE record -o $T/x.data -- $P 3 \\\"quoted\\\" a\\\\b"
check_eq "exit status" "$(field 'exit status')" "exited with code: 3"
tid=$(awk '$2 == "1" && $NF == "exitwith" { print $1 }' "$T/info")
check_eq "task list: the thread and its name" "$(field 'task list')" "$tid(exitwith)"
check_eq "number of tasks" "$(field 'number of tasks')" 1
check_eq "exe image: the program's file" "$(field 'exe image')" "$(readlink -f "$P")"
check_eq "build id: the program's" "$(field 'build id')" "$(readelf -n "$P" | awk '/Build ID/ { print $3 }')"
check_eq "number of cpus" "$(field 'number of cpus')" \
	"$(getconf _NPROCESSORS_ONLN) / $(getconf _NPROCESSORS_CONF) (online / possible)"
check_eq "kernel version" "$(field 'kernel version')" "$(uname -s) $(uname -r)"
check_eq "hostname" "$(field hostname)" "$(uname -n)"
check_eq "program version" "$(field 'program version')" "needle 1.0.0"
check "recorded on: today" grep -q "^# recorded on *: $(date '+%a %b %e') [0-9:]* $(date +%Y)\$" "$T/info"
check "elapsed time: seconds, more than none" \
	awk -v v="$(field 'elapsed time' | cut -d' ' -f1)" 'BEGIN { exit !(v > 0 && v < 60) }'
check "max rss: KB, more than none" awk -v v="$(field 'max rss' | cut -d' ' -f1)" 'BEGIN { exit !(v > 100) }'
check "cpu time, context switch, page fault, disk iops: in uftrace's form" test \
	"$(grep -cE '^# (cpu time *: [0-9.]+ / [0-9.]+ sec \(sys / user\)|context switch *: [0-9]+ / [0-9]+ \(voluntary / involuntary\)|page fault *: [0-9]+ / [1-9][0-9]* \(major / minor\)|disk iops *: [0-9]+ / [0-9]+ \(read / write\))$' "$T/info")" = 4

"$NEEDLE" record -o "$T/k.data" -- "$PROGS/crash" kill >/dev/null 2>&1
check_eq "a program killed: its signal" "$("$NEEDLE" info -i "$T/k.data" | sed -n 's/^# exit status *: //p')" \
	"terminated by signal: 9"

