#!/usr/bin/env bash
# test_python - `import needle` (pytest: needle_module_test.py, a PASS or
# FAIL line per test) and `needle script -S FILE.py`, uftrace's script
# command: its callbacks, UFTRACE_FUNCS, values, --record with the
# script's options, and bad input.  graph_prog's calls are known from its
# source.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/graph_prog"
HERE=$(cd "$(dirname "$0")" && pwd)

"$NEEDLE" record -o "$T/g.data" --libcall=none -A 'mid@arg1/d32' -R 'rec@retval/d32' -- "$P" 3 >/dev/null 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
"$NEEDLE" report --csv -i "$T/g.data" >"$T/report.csv"

# ---- the module, through pytest ----
if ! /usr/bin/python3 -c 'import pytest' 2>/dev/null; then
	fail "python3-pytest is not installed (scripts/setup.sh installs it)"
else
	NEEDLE_TRACE="$T/g.data" NEEDLE_REPORT_CSV="$T/report.csv" PYTHONPATH="$BUILD/python" \
		NEEDLE_EVENTS=$("$NEEDLE" info -i "$T/g.data" | awk '/^events:/ { print $2 }') \
		/usr/bin/python3 -m pytest -p no:cacheprovider -q -rA "$HERE/needle_module_test.py" >"$T/pytest.out" 2>&1
	rc=$?
	awk '$1 == "PASSED" { print "PASS: import needle: " $2 } $1 == "FAILED" || $1 == "ERROR" { print "FAIL: import needle: " $2 }' \
		"$T/pytest.out"
	check_eq "pytest: every test of needle_module_test.py ran and passed ($(tail -1 "$T/pytest.out"))" "$rc" 0
	check_eq "pytest: 10 tests" "$(grep -c '^PASSED' "$T/pytest.out")" 10
fi

# ---- needle script ----
cat >"$T/count.py" <<'PY'
import collections
entries = collections.Counter()
exits = collections.Counter()
order = []
def uftrace_begin(ctx):
    print("begin", ctx["record"], " ".join(ctx["cmds"][1:]))
def uftrace_entry(ctx):
    entries[ctx["name"]] += 1
    if ctx["name"] == "mid":
        print("mid", ctx["args"])
    assert ctx["timestamp"] > 0 and ctx["address"] > 0 and ctx["depth"] >= 0
def uftrace_exit(ctx):
    exits[ctx["name"]] += 1
    if ctx["name"] == "rec":
        print("rec =", ctx["retval"])
    assert ctx["duration"] >= 0
def uftrace_end():
    print("end", sorted(entries.items()) == sorted(exits.items()), " ".join("%s:%d" % kv for kv in sorted(entries.items())))
PY
"$NEEDLE" script -S "$T/count.py" -i "$T/g.data" >"$T/out" 2>"$T/serr"
st=$?
check_eq "script: exit 0 ($(head -c 300 "$T/serr"))" "$st" 0
check_eq "script: uftrace_begin first, with the command line" "$(head -1 "$T/out")" "begin False 3"
check_eq "script: every entry and exit, once each" "$(tail -1 "$T/out")" \
	"end True fan:3 leaf:22 main:1 mid:7 other:1 rec:4 worker:1"
check_eq "script: args as a list of values (mid's in main's first fan)" "$(grep -m2 '^mid' "$T/out" | tr '\n' ' ')" \
	"mid [2] mid [3] "
check_eq "script: retval (rec's, innermost first)" "$(grep '^rec' "$T/out" | tr '\n' ' ')" \
	"rec = 0 rec = 1 rec = 2 rec = 3 "

cat >"$T/funcs.py" <<'PY'
UFTRACE_FUNCS = ["rec", "other"]
def uftrace_entry(ctx):
    print("%s%s enter" % ("  " * ctx["depth"], ctx["name"]))
def uftrace_exit(ctx):
    print("%s%s exit" % ("  " * ctx["depth"], ctx["name"]))
PY
check_eq "script: UFTRACE_FUNCS keeps those functions' events" \
	"$("$NEEDLE" script -S "$T/funcs.py" -i "$T/g.data" | tr -s ' ' | tr '\n' '/')" \
	" other enter/ other exit/ rec enter/ rec enter/ rec enter/ rec enter/ rec exit/ rec exit/ rec exit/ rec exit/"
wtid=$("$NEEDLE" dump -i "$T/g.data" | awk '/^thread / { n++; if (n == 2) { print $2; exit } }')
check_eq "script --tid: that thread's events" \
	"$("$NEEDLE" script -S "$T/count.py" -i "$T/g.data" --tid "$wtid" | tail -1)" "end True fan:1 leaf:6 mid:2 worker:1"

# uftrace_event: each -T read= reading, after its function's entry
# ("read:") and before its exit ("diff:"), args as uftrace's script has
# them.  mid is called 7 times, rec 4 (recursively).
# (uftrace's -E read:* and -E diff:* name these readings' events: accepted,
# they are recorded and shown anyway.)
"$NEEDLE" record -o "$T/rd.data" --libcall=none -T 'mid@read=proc/statm' -T 'rec@read=page-fault' -E 'read:*' \
	-E 'diff:*' -- "$P" 3 >/dev/null 2>"$T/rderr"
rc=$?
check_eq "recorded with read= triggers and -E 'read:*' ($(tail -1 "$T/rderr"))" "$rc" 0
check "replay -E 'read:*' shows what replay shows" \
	cmp -s <("$NEEDLE" replay -i "$T/rd.data") <("$NEEDLE" replay -E 'read:*' -E 'diff:*' -i "$T/rd.data")
check_eq "replay: 11 read: and 11 diff: comments" "$("$NEEDLE" replay -i "$T/rd.data" | grep -cE '/\* (read|diff):')" 22
cat >"$T/event.py" <<'PY'
import re
def uftrace_entry(ctx):
    if ctx["name"] in ("mid", "rec"):
        print("entry", ctx["name"])
def uftrace_exit(ctx):
    if ctx["name"] in ("mid", "rec"):
        print("exit", ctx["name"])
def uftrace_event(ctx):
    assert ctx["timestamp"] > 0 and ctx["address"] > 0
    form = r"vmsize=-?\d+KB vmrss=-?\d+KB shared=-?\d+KB" if "statm" in ctx["name"] else r"major=-?\d+ minor=-?\d+"
    print(ctx["name"], "ok" if re.fullmatch(form, ctx["args"]) else "bad args: " + ctx["args"])
PY
"$NEEDLE" script -S "$T/event.py" -i "$T/rd.data" >"$T/eout" 2>"$T/eerr"
st=$?
check_eq "script uftrace_event: exit 0 ($(head -c 300 "$T/eerr"))" "$st" 0
check_eq "script uftrace_event: a read after each entry, a diff before each exit, args in uftrace's form" \
	"$(awk '/^entry/ { e = $2 } /^read:/ { if (e != "") print e, $0; e = "" } /^diff:/ { d = $0 } /^exit/ { print $2, d; d = "" }' "$T/eout" | sort | uniq -c | tr -s ' ' | tr '\n' '/')" \
	" 7 mid diff:proc/statm ok/ 7 mid read:proc/statm ok/ 4 rec diff:page-fault ok/ 4 rec read:page-fault ok/"
check_eq "script uftrace_event: one event per reading (11 reads, 11 diffs)" \
	"$(grep -c ':' "$T/eout")" 22
cat >"$T/noevent.py" <<'PY'
import collections
calls = collections.Counter()
def uftrace_entry(ctx):
    calls[ctx["name"], "args" in ctx] += 1
def uftrace_exit(ctx):
    calls[ctx["name"], "exit"] += 1
def uftrace_end():
    print(" ".join("%s:%s:%d" % (n, w, c) for (n, w), c in sorted(calls.items(), key=str) if n in ("mid", "rec")))
PY
check_eq "script without uftrace_event: the readings are no calls of their own, nor args" \
	"$("$NEEDLE" script -S "$T/noevent.py" -i "$T/rd.data")" "mid:exit:7 mid:False:7 rec:exit:4 rec:False:4"

# --record: the script's "# uftrace-option:" line chooses what is recorded.
cat >"$T/rec.py" <<'PY'
# uftrace-option: --libcall=none -A rec@arg1/d32
def uftrace_entry(ctx):
    if "args" in ctx:
        print("%s(%s)" % (ctx["name"], ctx["args"][0]))
def uftrace_exit(ctx):
    pass
PY
(cd "$T" && "$NEEDLE" script -S rec.py -i r.data --record "$P" 2 >"$T/rout" 2>"$T/rerr")
st=$?
check_eq "script --record: exit 0 ($(tail -1 "$T/rerr"))" "$st" 0
check_eq "script --record: recorded with the script's options (the program's own line, then the script's)" "$(tr '\n' ' ' <"$T/rout")" \
	"leaf 21 rec(2) rec(1) rec(0) "
check "script --record: the trace is kept" test -s "$T/r.data"

# Bad input, one line; a script's own error is Python's.
"$NEEDLE" script -i "$T/g.data" >"$T/nout" 2>"$T/nerr"
check_eq "script without -S: exit 2" "$?" 2
check "script without -S: says so first" sh -c "head -1 '$T/nerr' | grep -q 'give the script with -S'"
view_refused "script of a missing file" 1 "cannot read" "$NEEDLE" script -S "$T/nosuch.py" -i "$T/g.data"
view_refused "script on a missing trace" 1 "nosuch.data" "$NEEDLE" script -S "$T/count.py" -i "$T/nosuch.data"
view_refused "script --tid of another thread" 1 "thread 1 is not" "$NEEDLE" script -S "$T/count.py" -i "$T/g.data" --tid 1
# A needle.Error of the script's own is the script's: its traceback.
printf 'import needle\ndef uftrace_entry(ctx):\n    needle.open("/nonexistent.data")\n' >"$T/own.py"
"$NEEDLE" script -S "$T/own.py" -i "$T/g.data" >/dev/null 2>"$T/oerr"
check "a script whose needle.open fails: non-zero exit" test $? -ne 0
check "a script whose needle.open fails: Python's traceback names the script's line" \
	grep -q 'own.py", line 3, in uftrace_entry' "$T/oerr"
printf 'def uftrace_entry(ctx):\n    raise ValueError("boom")\n' >"$T/boom.py"
"$NEEDLE" script -S "$T/boom.py" -i "$T/g.data" >/dev/null 2>"$T/berr"
check "a script that raises: non-zero exit" test $? -ne 0
check "a script that raises: Python's traceback names its error" grep -q "ValueError: boom" "$T/berr"
