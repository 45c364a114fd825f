#!/usr/bin/env bash
# test_record_errors - bad input gets a clear message and a non-zero exit,
# and never a half-written trace.
. "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$T"

"$NEEDLE" record -o "$T/a.data" -- no-such-program-xyz 2>"$T/err1"
check_eq "missing program: exit 127" "$?" 127
check "missing program: says so" grep -q "no-such-program-xyz: command not found" "$T/err1"
check "missing program: no trace file" test ! -e "$T/a.data"

# A program without patchable entries: the agent ends it before main (it
# must not run untraced by mistake); one line says why, exit 1.
"$NEEDLE" record -o "$T/b.data" -- /bin/sh -c "touch $T/ranb" 2>"$T/err2"
check_eq "program without patchable entries: exit 1" "$?" 1
check "program without patchable entries: names the flag" grep -q -- "-fpatchable-function-entry=5" "$T/err2"
check "program without patchable entries: says it was stopped" grep -q "/bin/sh was stopped before main" "$T/err2"
check "program without patchable entries: it did not run" test ! -e "$T/ranb"
check_eq "program without patchable entries: one line" "$(grep -c . "$T/err2")" 1
check "program without patchable entries: no trace file" test ! -e "$T/b.data"
# A program the agent cannot be loaded into (static) runs untraced:
# needle record exits with its status and says, in one line, that
# nothing was recorded.
if gcc -static -O2 "$HERE/../progs/exitwith.c" -o "$T/static" 2>"$T/gcc.err"; then
	"$NEEDLE" record -o "$T/st.data" -- "$T/static" 7 2>"$T/err2s"
	check_eq "static program: its own exit status" "$?" 7
	check "static program: a warning says it was not traced" grep -q "warning: .*not traced.*statically linked" "$T/err2s"
	check_eq "static program: one line" "$(grep -c . "$T/err2s")" 1
	check "static program: no trace file" test ! -e "$T/st.data"
	echo old >"$T/keep.data"
	"$NEEDLE" record --force -o "$T/keep.data" -- "$T/static" 0 2>/dev/null
	check_eq "static program: a file given with -f is left as it was" "$(cat "$T/keep.data")" old
else
	fail "cannot build a static program: $(head -1 "$T/gcc.err")"
fi

"$NEEDLE" record -o /nonexistent-dir/c.data -- "$PROGS/marker" "$T/ran" 2>"$T/err3"
check "unwritable output: non-zero exit" test $? -ne 0
check "unwritable output: says why" grep -q "cannot write /nonexistent-dir/c.data" "$T/err3"
check "unwritable output: the program never started" test ! -e "$T/ran"

"$NEEDLE" record --bogus -- /bin/true 2>"$T/err4"
check_eq "unknown option: exit 2" "$?" 2
check_eq "unknown option: one line that names it and where the options are listed" "$(cat "$T/err4")" \
	"needle: record: unknown option '--bogus' (needle record --help lists the options)"
"$NEEDLE" replay --no-pager -xa 2>"$T/err4c"
check_eq "a bad short option inside a cluster, after a long one: the short one named" "$?:$(cat "$T/err4c")" \
	"2:needle: replay: unknown option -x (needle replay --help lists the options)"
"$NEEDLE" record --output 2>"$T/err4d"
check_eq "a long option without its value: named" "$(cat "$T/err4d")" \
	"needle: record: option '--output' needs a value (needle record --help lists the options)"
"$NEEDLE" replay -i 2>"$T/err4b"
check_eq "an option without its value: exit 2, one line" "$?:$(cat "$T/err4b")" \
	"2:needle: replay: option -i needs a value (needle replay --help lists the options)"
"$NEEDLE" record -F 'no_such_fn_*' -o "$T/d.data" -- "$PROGS/marker" "$T/ran2" 2>"$T/err5"
check "filter matching nothing: non-zero exit" test $? -ne 0
check "filter matching nothing: says so" grep -q "match no function" "$T/err5"
check "filter matching nothing: no trace file" test ! -e "$T/d.data"
"$NEEDLE" bogus 2>/dev/null
check_eq "unknown command: exit 2" "$?" 2
"$NEEDLE" replay -i "$T/missing.data" 2>"$T/err6"
check_eq "missing trace: exit 1" "$?" 1
check "missing trace: says so" grep -q "cannot open $T/missing.data" "$T/err6"
"$NEEDLE" record --poll=0 -- /bin/true 2>/dev/null
check_eq "bad --poll value: exit 2" "$?" 2

# The environment the program sees is its own (LD_PRELOAD and needle's
# variables are gone before main).
# ("_" is the shell's record of the command it ran: needle, not the program.)
"$NEEDLE" record -o "$T/f.data" -- "$PROGS/printenv" 2>/dev/null | grep -v '^_=' >"$T/env.traced"
"$PROGS/printenv" | grep -v '^_=' >"$T/env.plain"
check "the traced program sees its environment unchanged" cmp -s "$T/env.plain" "$T/env.traced"

# Help texts are printed, not passed through printf: no doubled percent.
"$NEEDLE" record --help >"$T/h1"
check_eq "record --help: exit 0" "$?" 0
check "record --help: 'N% of the buffer'" grep -q "N% of the buffer" "$T/h1"
check "record --help: documents --force and -f" sh -c "grep -q -- \"  --force\" \"$T/h1\" && grep -q -- \"-f, --output-fields\" \"$T/h1\""
check_eq "no '%%' in any help text" "$( { "$NEEDLE" --help; "$NEEDLE" record --help; "$NEEDLE" ctl --help; } | grep -c '%%')" 0

# Signals the caller ignored (nohup, a shell's background job) stay ignored
# in the program, as without needle.
plain=$(bash -c "trap '' INT HUP QUIT; grep SigIgn /proc/self/status")
traced=$(bash -c "trap '' INT HUP QUIT; '$NEEDLE' record --sites=all -o '$T/ign.data' -- grep SigIgn /proc/self/status" 2>/dev/null)
check_eq "ignored signals stay ignored in the program" "$traced" "$plain"
# SIGINT sent to needle record by a process (not the terminal) reaches
# the program, which dies of it as it would.  (set -m: without job control
# a shell starts background jobs with SIGINT ignored, and that stays so.)
got=$(NEEDLE="$NEEDLE" T="$T" bash -c 'set -m
	"$NEEDLE" record --sites=all -o "$T/int.data" -- sleep 5 2>/dev/null &
	np=$!
	for _ in $(seq 1 200); do
		c=$(pgrep -n -P "$np" sleep) && grep -q needle-buffer /proc/"$c"/maps 2>/dev/null && break
		sleep 0.05
	done
	kill -INT "$np"
	wait "$np"
	echo $?')
check_eq "kill -INT to needle record: the program dies of SIGINT (status 130)" "$got" 130
# A background job of a shell without job control starts with SIGINT
# ignored; a program that then installs a handler of its own gets a
# kill -INT sent to it.  Sent to needle record, it must reach that
# handler too (it was dropped: needle record kept the signal ignored).
cat >"$T/catch.py" <<'PY'
import signal, sys, time
got = []
signal.signal(signal.SIGINT, lambda *a: got.append(1))
open(sys.argv[1], "w").close()
end = time.time() + 20
while not got and time.time() < end:
    time.sleep(0.01)
print("caught" if got else "not caught")
PY
PY3=$(command -v /usr/bin/python3 || command -v python3)
got=$(NEEDLE="$NEEDLE" T="$T" PY3="$PY3" bash -c '
	"$NEEDLE" record --sites=all -o "$T/bg.data" -- "$PY3" "$T/catch.py" "$T/bg.ready" 2>"$T/bg.err" &
	np=$!
	for _ in $(seq 1 400); do [ -e "$T/bg.ready" ] && break; sleep 0.05; done
	kill -INT "$np"
	wait "$np"
	echo "status $?"')
check_eq "kill -INT to a background needle record (SIGINT ignored): the program's own handler gets it" \
	"$got" "caught"$'\n'"status 0"

# A configuration the agent cannot read (damaged bytes behind
# NEEDLE_CONFIG): the agent does not start, and the program runs with the
# environment it was given, less libneedle (the first LD_PRELOAD entry,
# where needle record puts it) and less NEEDLE_CONFIG.
printf 'garbage, not a record_config' >"$T/badcfg"
got=$(NEEDLE_CONFIG=9 LD_PRELOAD="$BUILD/libneedle.so:$BUILD/tests/libdl_lib.so" "$PROGS/printenv" 9<"$T/badcfg" |
	grep -E '^(LD_PRELOAD|NEEDLE_CONFIG)=')
check_eq "unreadable config: LD_PRELOAD keeps what followed libneedle, NEEDLE_CONFIG goes" "$got" \
	"LD_PRELOAD=$BUILD/tests/libdl_lib.so"
got=$(NEEDLE_CONFIG=9 LD_PRELOAD="$BUILD/libneedle.so" "$PROGS/printenv" 9<"$T/badcfg" | grep -cE '^(LD_PRELOAD|NEEDLE_CONFIG)=')
check_eq "unreadable config: libneedle alone in LD_PRELOAD, the variable goes" "$got" 0
