#!/usr/bin/env bash
# test_record_output - the trace file is where the user looks, and what
# reached it is kept: needle record writes FILE itself (no temporary name),
# a recording killed with SIGKILL leaves the sections written so far, a
# full disk leaves a complete, shorter trace and a non-zero exit.  Output
# that cannot be written, that is not a trace (without -f), or that another
# recording is writing is refused before the program starts.
. "$(dirname "$0")/../lib.sh"

reads() { "$NEEDLE" info -i "$1" >/dev/null 2>&1; }
has_chunks() { trace_sections "$1" | grep -qw 6; }

# (1) SIGKILL of needle record while the program runs: the file is at its
# own name, with the symbols and the clock first, then the chunks drained.
mkfifo "$T/in"
"$NEEDLE" record -o "$T/k.data" -- "$PROGS/waiter" 50000 <"$T/in" >"$T/k.out" 2>"$T/k.err" &
rec=$!
exec 3>"$T/in"
check "killed recording: the program ran" wait_for grep -q '^ready' "$T/k.out"
check "killed recording: chunks reached the file while the program ran" wait_for has_chunks "$T/k.data"
exec 4>&2 2>/dev/null # the shell's "Killed" notice
kill -KILL $rec
wait $rec
exec 2>&4 4>&-
exec 3>&-
check_eq "killed recording: no temporary file is left" "$(ls "$T" | grep -c tmp)" 0
check_eq "killed recording: modules, sites and their sizes, load biases, objects and clock, then chunks, nothing damaged" \
	"$(trace_sections "$T/k.data" | sed 's/ cut$//')" "3 4 13 18 9 1 6"
"$NEEDLE" info -i "$T/k.data" >/dev/null 2>&1
check "killed recording: info does not crash on it" test $? -le 1

# (2) The file system is full: what fit is kept as a complete trace, one
# line says so, and the exit is non-zero.
full_disk() { # full_disk NAME DIR: record into DIR until it is full
	"$NEEDLE" record --buffer-size=1 -o "$2/f.data" -- "$PROGS/threads" 2 200000 >/dev/null 2>"$T/$1.err"
	check_eq "$1: exit 1" "$?" 1
	check_eq "$1: one line says so" "$(grep -c . "$T/$1.err")" 1
	check "$1: the line names the file and what was kept" grep -q "cannot write $2/f.data: .*; kept the first [0-9]* events" "$T/$1.err"
	check "$1: the trace reads" reads "$2/f.data"
	check_eq "$1: the trace is complete: it ends with its END section" "$(trace_sections "$2/f.data" | awk '{print $NF}')" 7
	local got
	got=$(calls "$2/f.data" step)
	check "$1: it holds some of the calls, not all ($got of 800000)" test "$got" -gt 0 -a "$got" -lt 800000
	check_eq "$1: recorded + lost is every event of the program" "$(events_and_lost "$2/f.data")" "$all"
	# The views say why: the file, not the buffer.
	check "$1: info says it was cut short by the write error ($("$NEEDLE" info -i "$2/f.data" | grep '^status:'))" \
		sh -c "'$NEEDLE' info -i '$2/f.data' | grep -q '^status: *cut short: the trace file could not be written to its end ($3)'"
	check "$1: replay's loss line blames the file" \
		sh -c "'$NEEDLE' replay -i '$2/f.data' | head -1 | grep -q 'could not be written to its end ($3): its last [0-9]* events are not in it'"
	check "$1: report's too" \
		sh -c "'$NEEDLE' report -i '$2/f.data' | head -1 | grep -q 'could not be written to its end ($3)'"
}
events_and_lost() { # what info counts, recorded plus lost
	"$NEEDLE" info -i "$1" | awk '/^events:/ { e = $2 } /^lost events:/ { l = $3 } END { print e + l }'
}
"$NEEDLE" record --buffer-size=1 -o "$T/all.data" -- "$PROGS/threads" 2 200000 >/dev/null 2>&1
all=$(events_and_lost "$T/all.data")
check "a whole recording counts $all events" test "$all" -ge 2400000
mkdir "$T/small"
(ulimit -f 2048; full_disk "file size limit" "$T/small" "File too large")
trap 'umount "$T/tmpfs" 2>/dev/null; rm -rf "$T"' EXIT
if [ "$(id -u)" = 0 ] && mkdir -p "$T/tmpfs" && mount -t tmpfs -o size=1m needle-test "$T/tmpfs" 2>/dev/null; then
	full_disk "1 MiB tmpfs" "$T/tmpfs" "No space left on device"
	umount "$T/tmpfs"
else
	echo "(no 1 MiB tmpfs: not root, or mount not allowed; the file size limit stands in)"
fi

# (3) Output that cannot be written is refused before the program starts.
mkdir "$T/dir"
"$NEEDLE" record -o "$T/dir" -- "$PROGS/marker" "$T/ran3" 2>"$T/e3"
check_eq "output is a directory: exit 1" "$?" 1
check "output is a directory: says so" grep -q "$T/dir.*directory" "$T/e3"
check "output is a directory: the program never started" test ! -e "$T/ran3"
check_eq "output is a directory: nothing written in it" "$(ls "$T/dir" | wc -l)" 0
if [ "$(id -u)" = 0 ]; then
	pub=$(mktemp -d /tmp/needle-out.XXXXXX)
	mkdir "$pub/ro" "$pub/marks"
	chmod 755 "$pub" "$pub/ro"
	chmod 777 "$pub/marks"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$NEEDLE" record -o "$pub/ro/x.data" -- \
		"$PROGS/marker" "$pub/marks/ran" 2>"$T/e3b"
	check_eq "directory not writable: exit 1" "$?" 1
	check "directory not writable: says why" grep -q "cannot write $pub/ro/x.data: Permission denied" "$T/e3b"
	check "directory not writable: the program never started" test ! -e "$pub/marks/ran"
	rm -rf "$pub"
fi

# (4) A file that is not a needle trace is not overwritten without -f.
printf 'precious\n' >"$T/p.data"
"$NEEDLE" record -o "$T/p.data" -- "$PROGS/marker" "$T/ran4" 2>"$T/e4"
check_eq "not a trace: exit 1" "$?" 1
check "not a trace: says so and names -f" grep -q "$T/p.data.*not a needle trace.*-f" "$T/e4"
check_eq "not a trace: left as it was" "$(cat "$T/p.data")" precious
check "not a trace: the program never started" test ! -e "$T/ran4"
"$NEEDLE" record --force -o "$T/p.data" -- "$PROGS/marker" "$T/ran4" 2>/dev/null
check_eq "not a trace, with -f: exit 0" "$?" 0
check "not a trace, with -f: now a trace" reads "$T/p.data"
"$NEEDLE" record -o "$T/p.data" -- "$PROGS/exitwith" 0 2>/dev/null
check_eq "a needle trace is overwritten without -f" "$?" 0
check_eq "the new trace holds the new program's calls" "$(calls "$T/p.data" step)/$(calls "$T/p.data" touch)" 1/missing
: >"$T/empty.data"
"$NEEDLE" record -o "$T/empty.data" -- "$PROGS/exitwith" 0 2>/dev/null
check_eq "an empty file is overwritten without -f" "$?" 0

# (5) Two recordings to one file: the second is refused, naming the first.
mkfifo "$T/in5"
"$NEEDLE" record -o "$T/c.data" -- "$PROGS/waiter" 1000 <"$T/in5" >"$T/c.out" 2>"$T/c.err" &
rec=$!
exec 3>"$T/in5"
check "concurrent: the first recording runs" wait_for grep -q '^ready' "$T/c.out"
"$NEEDLE" record -o "$T/c.data" -- "$PROGS/marker" "$T/ran5" 2>"$T/e5"
check_eq "concurrent: the second is refused" "$?" 1
check "concurrent: it names the recording writing the file" grep -q "$T/c.data is being written by needle record (PID $rec)" "$T/e5"
check "concurrent: its program never started" test ! -e "$T/ran5"
exec 3>&-
wait $rec
check_eq "concurrent: the first recording ends well" "$?" 0
check_eq "concurrent: its trace is whole" "$(calls "$T/c.data" work)" 2000
