#!/usr/bin/env bash
# test_signal - needle record --signal SIG@trace_on|trace_off|finish: the
# agent acts on the signal in front of the program's own handler (which
# still runs, and whose calls are recorded whatever the action), the
# program reads back exactly the action it set, and a signal it ignores or
# leaves to its default is needle's.  Also -T FUNC@finish at record time.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # the library calls too, as a user sees them
P="$PROGS/signal_prog"

body() { "$NEEDLE" replay -i "$1" | sed -n 's/^[^|]*| //p' | sed '/^$/,$d' | tr -d ' \n'; }

# uftrace's own case (t214): finish after the program's handler returns;
# raise and main stay open and are listed as such.
"$NEEDLE" record -o "$T/f.data" --signal SIGUSR1@finish -- "$P" raise >"$T/out" 2>"$T/err"
st=$?
check_eq "--signal SIGUSR1@finish: recorded ($(tail -1 "$T/err"))" "$st" 0
check_eq "the program's output (its handler ran, errno kept, the action it set read back with the C library's flags) is byte-identical to a run left alone" \
	"$(cat "$T/out")" "$("$P" raise)"
check_eq "finish after the handler: its calls recorded, nothing after" "$(body "$T/f.data")" \
	"main(){strcmp();foo();signal();printf();__errno_location();raise(){handler(){bar();}/*handler*/"
check_eq "... raise and main listed as open" \
	"$("$NEEDLE" replay -i "$T/f.data" | sed -n '/stopped recording/,$p' | grep -c '^\[[01]\] \(raise\|main\)$')" 2

# The SA_RESETHAND handler: reset after one delivery, as the kernel does.
"$NEEDLE" record -o "$T/r.data" --signal USR1@trace_off -- "$P" reset >"$T/out" 2>/dev/null
check_eq "SA_RESETHAND: the program reads back what it would untraced" "$(cat "$T/out")" "$("$P" reset)"

# A signal with no handler is needle's: the program does not die of it.
"$NEEDLE" record -o "$T/on.data" --disable --signal USR1@trace_on -- "$P" bare 10 >"$T/out" 2>/dev/null
check_eq "--disable --signal USR1@trace_on: the program survives its raise (exit 0)" "$?/$(cat "$T/out")" "0/survived"
check_eq "... and nothing is recorded before the signal, everything after" "$(body "$T/on.data")" "after();puts();"
"$NEEDLE" record -o "$T/off.data" --signal SIGUSR2@trace_off -- "$P" bare 12 >/dev/null 2>&1
check_eq "--signal SIGUSR2@trace_off: calls open then end as recorded, none after" "$(body "$T/off.data")" \
	"main(){strcmp();strcmp();before();strtol();raise();}/*main*/"
"$NEEDLE" record -o "$T/loop.data" --signal 10@finish -- "$P" loop 6 >"$T/out" 2>/dev/null
check_eq "--signal 10@finish (by number): three rounds, then nothing" \
	"$(calls "$T/loop.data" work)/$(calls "$T/loop.data" after)" "3/missing"
check_eq "... the program ran on to its end (1 + 0..5 + 1; untraced, the signal would kill it)" "$(cat "$T/out")" "dummy=17"
"$NEEDLE" record -o "$T/h.data" --disable --signal USR1@trace_on -- "$P" raise >/dev/null 2>&1
check_eq "trace_on before the program's handler: the handler's calls are recorded" \
	"$("$NEEDLE" replay -i "$T/h.data" | sed -n 's/^[^|]*| //p' | head -2 | tr -d ' \n')" "handler(){bar();"

# needle record -p: the signal acts while needle is there, and once it
# has let go the program's own action (here the default) is back.
"$P" wait "$T/stop" >"$T/wout" &
W=$!
# Attached once it runs, not while its loader maps its libraries: needle
# refuses a process still starting.
for _ in $(seq 500); do grep -q libc.so.6 "/proc/$W/maps" 2>/dev/null && break; sleep 0.01; done
sleep 0.05
"$NEEDLE" record -p "$W" -o "$T/p.data" --signal USR1@trace_off --duration=1 >/dev/null 2>"$T/perr" &
R=$!
for _ in $(seq 500); do grep -q recording "$T/perr" 2>/dev/null && break; sleep 0.01; done
sleep 0.2
kill -USR1 "$W"
wait "$R"
st=$?
check_eq "-p --signal USR1@trace_off: needle record ended well ($(tail -1 "$T/perr"))" "$st" 0
check "... the program survived the signal while needle was there" kill -0 "$W"
n1=$(calls "$T/p.data" work)
check "... work was recorded before the signal ($n1 calls)" test "$n1" -gt 0
kill -USR1 "$W"
wait "$W" 2>/dev/null
check_eq "... after needle let go, SIGUSR1 is the program's again: its default action kills it" "$?" 138

# -T FUNC@finish acts in the agent: nothing after it is in the trace.
"$NEEDLE" record -o "$T/tf.data" -T 'work@finish' -- "$P" loop 6 >/dev/null 2>&1
check_eq "-T work@finish: the first work's entry is the trace's last event" \
	"$("$NEEDLE" dump -i "$T/tf.data" | grep -c 'work')/$(calls "$T/tf.data" after)" "1/missing"

# Bad input: one line, a non-zero exit, the program never started.
view_refused "--signal without an action" 2 "SIG@ACTION" "$NEEDLE" record -o "$T/x.data" --signal SIGUSR1 -- "$P" bare 10
view_refused "--signal with no such signal" 2 "is no signal" "$NEEDLE" record -o "$T/x.data" --signal SIGFOO@finish -- "$P" bare 10
view_refused "--signal with an unknown action" 2 "trace_on, trace_off or finish" "$NEEDLE" record -o "$T/x.data" --signal USR1@depth=2 -- "$P" bare 10
view_refused "--signal SIGKILL" 2 "cannot take" "$NEEDLE" record -o "$T/x.data" --signal SIGKILL@finish -- "$P" bare 10
view_refused "--signal SIGSEGV" 2 "cannot take" "$NEEDLE" record -o "$T/x.data" --signal SEGV@trace_off -- "$P" bare 10
check "... and no trace was written" test ! -e "$T/x.data"
