#!/usr/bin/env bash
# test_attach_signals - signals that come while needle record -p holds a
# thread (borrowed to load libneedle, or stopped for a patch batch) reach
# the program once each, as they were sent: a process whose one thread
# takes 20,000 queued signals with values (sigqueue) and 20,000 sent with
# kill is attached to three times while they come; it must count every
# value once, each with SI_QUEUE and its sender's pid, and every kill with
# SI_USER and its sender's pid: none lost, none from needle.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
S="$BUILD/tests/attach/sigq_target"
[ -x "$S" ] || { fail "$S is missing"; exit 1; }

mkfifo "$T/in"
"$S" 20000 <"$T/in" >"$T/out" 2>"$T/err" &
pid=$!
exec 9>"$T/in"
wait_for grep -q '^ready' "$T/out"
echo go >&9
for i in 1 2 3; do
	"$NEEDLE" record -p "$pid" -o "$T/a$i.data" --duration=0.2 2>"$T/a$i.err"
	st=$?
	check_eq "attach $i: recorded and detached ($(tail -1 "$T/a$i.err"))" "$st" 0
done
exec 9>&-
wait "$pid"
check_eq "the program exits 0" "$?" 0
check_eq "every signal reached the handler once, as sent" "$(grep '^received' "$T/out")" \
	"received 20000 of 20000, wrong 0, twice 0, killed 20000"
