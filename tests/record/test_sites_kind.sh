#!/usr/bin/env bash
# test_sites_kind - which entries --sites traces in an object a compiler
# prepared: with the default (all), only the entries it made, so a
# function it left out (patchable_function_entry(0), as notrace) stays
# out, as in ftrace and uftrace; --sites=relocated moves it anyway.  The
# C library, which no compiler prepared, is relocated in both.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
P="$PROGS/notrace_prog"

body() { "$NEEDLE" replay -i "$1" | sed -n 's/^[^|]*| //p' | tr -d ' \n'; }

"$NEEDLE" record -o "$T/all.data" -- "$P" >"$T/out" 2>"$T/err"
st=$?
check_eq "--sites=all: recorded ($(tail -1 "$T/err"))" "$st" 0
check_eq "output identical to a run left alone" "$(cat "$T/out")" "$("$P")"
check_eq "--sites=all: left_out, which its compiler left without an entry, is not traced; printf is" \
	"$(body "$T/all.data")" "main(){traced();printf();}/*main*/"
"$NEEDLE" record --sites=compiled -o "$T/c.data" -- "$P" >/dev/null 2>&1
check_eq "--sites=compiled: the compiler's entries only" "$(body "$T/c.data")" "main(){traced();}/*main*/"
"$NEEDLE" record --sites=relocated -o "$T/r.data" -- "$P" >/dev/null 2>&1
check_eq "--sites=relocated: left_out relocated too" "$(body "$T/r.data")" \
	"main(){left_out(){traced();}/*left_out*/printf();}/*main*/"
check_eq "info: the program's object has its compiled entries only" \
	"$("$NEEDLE" info -i "$T/all.data" | grep -c "notrace_prog: [0-9]* compiled\$")" 1
