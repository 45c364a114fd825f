#!/usr/bin/env bash
# test_args - needle record -A / -R: arguments and return values of the
# functions that ask, from the registers the trampoline saved.  A program
# in 2 threads passes known values (integers of every width and sign, a
# char, pointers and NULL, doubles and a float) and prints each call as
# replay should show it: the two must be the same lines exactly.  Exports
# carry them; functions without a spec are recorded as before; bad specs
# are refused before the program runs.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/args_prog"

# Without address randomization (inherited by the program), so that the
# pointers it prints are the same in both runs.
setarch -R "$P" >"$T/plain"
setarch -R "$NEEDLE" record -o "$T/a.data" \
	-A 'a_ints@arg1/d8,arg2/u16,arg3/d32,arg4/x,arg5/d,arg6/c' -R 'a_ints@retval/d' \
	-A 'a_fp@fparg1/f,fparg2/f32,fparg3/f' -R 'a_fp@retval/f' \
	-A 'a_ptr@arg1/p,arg2/u' -R 'a_ptr@retval/p' \
	-A 'a_neg@arg1/d32' -R 'a_neg@retval/d32' \
	-A 'a_str@arg1/s,arg2/d' -R 'a_str@retval/d' -- "$P" >"$T/out" 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
check "output identical to a run left alone" cmp -s "$T/plain" "$T/out"
replay_threads "$T/a.data" --arg-names >"$T/r"
check_eq "replay reads it" "$?" 0
grep -E '\| +a_' "$T/r" | grep -v 'arg2=20)' | sed 's/.*| *//' | sort >"$T/got"
grep -v '^rewritten' "$T/plain" | sort >"$T/want"
check_eq "every call with the values the program passed and got back ($(wc -l <"$T/want") lines)" \
	"$(diff "$T/want" "$T/got" >/dev/null && echo same || diff "$T/want" "$T/got" | head -4)" same
check_eq "29 calls shown (strings: plain, NULL, bad pointer, cut at --max-string, before an unmapped page)" \
	"$(wc -l <"$T/got")" 29
check_eq "a string rewritten by another thread while read: 1000 calls, each a quoted lowercase string" \
	"$(grep -cE 'a_str\(arg1="[a-z]{20}", arg2=20\) = 20;' "$T/r")" 1000
"$NEEDLE" export --format=chrome -i "$T/a.data" -o "$T/a.json"
check "Chrome export: the arguments as args" grep -q '"args":{"arg1":"-100","arg2":"60000"' "$T/a.json"
check "Chrome export: the return value" grep -q '"name":"a_neg","ph":"E".*"args":{"retval":"0"}' "$T/a.json"
"$NEEDLE" export --format=perfetto -i "$T/a.data" -o "$T/a.pftrace"
check_eq "Perfetto export" "$?" 0
check "Perfetto export: the values as debug annotations (arg6 'a', a string)" \
	sh -c "grep -qa \"arg6\" '$T/a.pftrace' && grep -qa \"'a'\" '$T/a.pftrace' && grep -qa 'user:42' '$T/a.pftrace'"
check "info counts calls, not the values' words" grep -qE '^events: +[0-9]+' <("$NEEDLE" info -i "$T/a.data")
n=$("$NEEDLE" info -i "$T/a.data" | awk '/^events:/ { print $2 }')
check_eq "events: 1029 calls entered and left, main, worker x2, writer ($n)" "$n" 2066

# Functions without a spec: the same bytes as without -A at all.
"$NEEDLE" record -o "$T/b.data" -- "$P" >/dev/null 2>&1
"$NEEDLE" record -o "$T/c.data" -A 'a_neg@arg1/d32' -- "$P" >/dev/null 2>&1
check_eq "a_ints with no spec: no value in its lines" \
	"$("$NEEDLE" replay --arg-names -i "$T/c.data" | grep -c 'a_ints(arg')" 0
check_eq "a_neg with -A: its argument" "$("$NEEDLE" replay --arg-names -i "$T/c.data" | grep -c 'a_neg(arg1=')" 6

# replay's default form is uftrace's: values alone, floats as %f, and a
# call's end with its value a statement ("} = 0;", test_args_views).
replay_threads "$T/a.data" >"$T/bare"
check_eq "replay without --arg-names: each a_ints line as with names, less the names" \
	"$(grep 'a_ints(' "$T/bare" | sed 's/.*| *//' | md5sum)" \
	"$(grep 'a_ints(' "$T/r" | sed 's/.*| *//; s/arg[0-9]*=//g' | md5sum)"
check_eq "... floats as printf's %f: a_fp(1.500000, 2.000000, -0.250000) = 2.750000" \
	"$(grep -cF 'a_fp(1.500000, 2.000000, -0.250000) = 2.750000;' "$T/bare")" 1

# Several -A for one function add up as uftrace's do: a value asked for
# again stays where it was first asked for, with the later format when
# that spec gives one, its own when not; a regular expression (^a_i)
# names functions as a glob does.
"$NEEDLE" record -o "$T/m.data" -A 'a_ints@arg2/x' -A '^a_i@arg1,arg2,arg3/d32' -A 'a_ints@arg1/d8' -- "$P" >/dev/null 2>&1
replay_threads "$T/m.data" >"$T/m"
check_eq "merged specs: a_ints(0xea60, -100, -2000000000), arg2 first in hex, arg1 as d8" \
	"$(grep -cF 'a_ints(0xea60, -100, -2000000000);' "$T/m")" 1
check_eq "... every a_ints call with its three values, no value twice" \
	"$(grep -cE 'a_ints\(0x[0-9a-f]+, -[0-9]+, -[0-9]+\);' "$T/m")" \
	"$(grep -c '^a_ints' "$T/plain")"

# Bad specs: one line, non-zero, the program not run.
bad() { # DESCRIPTION PATTERN ARGS...
	local desc=$1 pat=$2
	shift 2
	"$NEEDLE" record "$@" -o "$T/bad.data" -- "$P" >"$T/bout" 2>"$T/berr"
	local rc=$?
	check "$desc: refused (exit $rc)" test "$rc" -ne 0
	check "$desc: says so in one line" sh -c "grep -q '$pat' '$T/berr' && test \$(wc -l <'$T/berr') -le 2"
	check "$desc: the program did not run" test ! -s "$T/bout"
}
bad "no @ and no glob" "GLOB@SPEC" -A '@arg1'
bad "a bare pattern that is not a regular expression" "is not a regular expression" -A '^(a_'
bad "arg7 of a function whose parameters all take registers" "a_ints has no arg7" -A 'a_ints@arg7'
bad "arg256" "7-255 the stack" -A 'a_ints@arg256'
bad "unknown format" "is not a format" -A 'a_ints@arg1/z'
bad "bad size" "is not a format" -A 'a_ints@arg1/d12'
bad "retval in -A" "goes with -R" -A 'a_ints@retval'
bad "an argument in -R" "retval only" -R 'a_ints@arg1'
bad "a float format on an integer register" "floating-point register" -A 'a_fp@fparg1/d'
bad "a string on a floating-point register" "floating-point register" -A 'a_fp@fparg1/s'
bad "--max-string out of range" "max-string needs" --max-string=4 -A 'a_str@arg1/s'
bad "no function matches" "no traceable function matches" -A 'nosuch_fn@arg1'
