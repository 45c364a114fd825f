#!/usr/bin/env bash
# test_cxx_names - C++ functions are named in patterns as the views show
# them: -F, -N, -A and --auto-args take "kv::Store::get" (the demangled
# name), "scale(double)" (one overload, with its parameters) and globs
# over either, as well as the mangled symbol; calls counted exactly.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/cxx_prog"

calls() { # FILE FUNCTION: the calls report counts for it (overloads: a row each, added up)
	"$NEEDLE" report --csv -i "$1" | awk -F, -v f="$2" '$1 == f { n += $2; seen = 1 } END { if (seen) print n }'
}
record() { # FILE ARGS...
	local out=$1
	shift
	"$NEEDLE" record -o "$out" "$@" -- "$P" >"$T/out" 2>"$T/err"
}

record "$T/a.data" -F 'kv::Store::get'
check_eq "-F 'kv::Store::get' (a method, by its demangled name): recorded" "$?" 0
check_eq "... its 3 calls, nothing else" "$("$NEEDLE" report -i "$T/a.data" | awk 'NR > 2' | sed 's/.*  //' | tr '\n' ' ')/$(calls "$T/a.data" kv::Store::get)" "kv::Store::get /3"

record "$T/b.data" -F 'kv::*'
check_eq "-F 'kv::*': the namespace's method (3 calls) and static member (1)" \
	"$(calls "$T/b.data" kv::Store::get) $(calls "$T/b.data" kv::Store::hash)" "3 1"
record "$T/c.data" -F 'scale'
check_eq "-F 'scale': both overloads, as one name (3 calls)" "$(calls "$T/c.data" scale)" 3
record "$T/d.data" -F 'scale(double)'
check_eq "-F 'scale(double)': one overload (1 call)" "$(calls "$T/d.data" scale)" 1
record "$T/e.data" -F 'kv::*' -N 'kv::Store::hash'
check_eq "-F 'kv::*' -N 'kv::Store::hash': the method only" \
	"$(calls "$T/e.data" kv::Store::get)/$(calls "$T/e.data" kv::Store::hash)" "3/"
record "$T/f.data" -F '_ZNK2kv5Store3getEi'
check_eq "the mangled symbol still names it" "$(calls "$T/f.data" kv::Store::get)" 3
record "$T/g.data" -F 'kv::Store::nosuch'
check_eq "a demangled name no function has: refused" "$?" 1
check "... with one line that names the filters" grep -q 'match no function' "$T/err"

# Values: --auto-args names them from DWARF under the demangled names; a
# parameter named in -A on a method found by its demangled name.
record "$T/v.data" --auto-args -F 'kv::*' -F 'scale' -F take -F 'twice<*>'
check_eq "--auto-args on C++: recorded" "$?" 0
"$NEEDLE" replay --arg-names -i "$T/v.data" | sed -n 's/.*| *//p' >"$T/got"
check_eq "every call with the values the program printed ($(wc -l <"$T/out") lines: this, key, a string, both overloads, a class passed by reference, a template)" \
	"$(diff "$T/out" "$T/got" >/dev/null && echo same || diff "$T/out" "$T/got" | head -6)" same
# g++'s DWARF does not mark a class passed by invisible reference: its
# copy constructor and destructor say so.  Built without needle's flags:
# entries relocated.
for v in gxx_O0 gxx_O2; do
	"$NEEDLE" record --sites=all -o "$T/$v.data" --auto-args -P 'kv::*' -P 'scale' -P take -P 'twice<*>' --no-libcall -- "$P"_$v \
		>"$T/$v.out" 2>/dev/null
	check_eq "g++ ${v#gxx_}: recorded" "$?" 0
	"$NEEDLE" replay --arg-names -i "$T/$v.data" | sed -n 's/.*| *//p' >"$T/$v.got"
	check_eq "g++ ${v#gxx_}: every call with the values printed, the class by its address, k after it" \
		"$(wc -l <"$T/$v.out") $(diff "$T/$v.out" "$T/$v.got" >/dev/null && echo same || diff "$T/$v.out" "$T/$v.got" | head -6)" \
		"9 same"
done
record "$T/n.data" -A 'kv::Store::get@key' -R 'kv::Store::get@retval'
check_eq "-A 'kv::Store::get@key': the parameter found in DWARF by the demangled name" \
	"$("$NEEDLE" replay --arg-names -i "$T/n.data" | grep -c 'kv::Store::get(key=[0-2]) = 10[024];')" 3
record "$T/m.data" -A 'kv::Store::get@nokey'
check_eq "-A with a parameter the method does not have: refused" "$? $(grep -c "no parameter 'nokey'" "$T/err")" "1 1"
record "$T/o.data" --auto-args -F 'kv::*' -A 'kv::Store::get@key'
check_eq "-A by a demangled name replaces what --auto-args shows of that function (this left out)" \
	"$("$NEEDLE" replay --arg-names -i "$T/o.data" | grep -cE 'kv::Store::get\(key=[0-2]\) = 10[024];')" 3

# needle_attach's patterns (a trigger attaches by name): the demangled
# name fires it.
rm -f "$T/s.data" "$T/s.data".*
record "$T/s.data" --snapshot --trigger 'kv::Store::hash'
check_eq "--trigger 'kv::Store::hash': recorded, one snapshot" "$? $(ls "$T"/s.data.* 2>/dev/null | wc -l)" "0 1"
check_eq "... which holds the call that fired it" "$(calls "$T/s.data.1" kv::Store::hash)" 1
record "$T/t.data" --snapshot --trigger 'kv::Store::nosuch'
check_eq "--trigger on a demangled name no function has: refused" "$? $(grep -c "no traceable function matches 'kv::Store::nosuch'" "$T/err")" "1 1"

# Overloads share a demangled name: a parameter's name needs one of them.
record "$T/w.data" -A 'scale@x'
check_eq "-A 'scale@x' on two overloads: refused, both named in one line" \
	"$? $(grep -c "'scale' is overloaded ('scale(double)', 'scale(long)')" "$T/err") $(wc -l <"$T/err")" "1 1 1"
record "$T/w.data" -A 'scale(double)@x'
check_eq "-A 'scale(double)@x': that overload's parameter, by name" \
	"$("$NEEDLE" replay --arg-names -i "$T/w.data" | grep -oE 'scale\([^)]*\)' | sort | uniq -c | awk '{ print $1, $2 }' | tr '\n' ' ')" \
	"2 scale() 1 scale(x=5) "

# Names with '>' and spaces: a template's instance as a trigger (its '>'
# is no duration), a parameter list with a space.
rm -f "$T/tw.data" "$T/tw.data".*
record "$T/tw.data" --snapshot --trigger 'twice<long>'
check_eq "--trigger 'twice<long>': recorded, one snapshot with the call" \
	"$? $(ls "$T"/tw.data.* 2>/dev/null | wc -l) $(calls "$T/tw.data.1" 'twice')" "0 1 1"
check_eq "--demangle=full: the instance with its template arguments" \
	"$("$NEEDLE" replay --demangle=full -i "$T/tw.data.1" | grep -o 'twice<long>(long)' | head -1)" "twice<long>(long)"
record "$T/sp.data" -A 'kv::Store::get(int) const@key'
check_eq "-A 'kv::Store::get(int) const@key': the overload named with a space" \
	"$("$NEEDLE" replay --arg-names -i "$T/sp.data" | grep -c 'kv::Store::get(key=[0-2])')" 3

# A program whose process has no C++ runtime (g++ --as-needed drops
# libstdc++, which it does not use): needle record names the program's
# functions for the patterns itself.
Q="$PROGS/cxx_prog_noruntime"
check_eq "the program maps no libstdc++" "$(ldd "$Q" | grep -c 'libstdc++')" 0
"$NEEDLE" record --sites=all -o "$T/nr.data" -F 'kv::*' -N 'kv::Store::hash' -- "$Q" >/dev/null 2>&1
check_eq "no runtime: -F 'kv::*' -N 'kv::Store::hash': the method's 3 calls, the static member's none" \
	"$(calls "$T/nr.data" kv::Store::get)/$(calls "$T/nr.data" kv::Store::hash)" "3/"
rm -f "$T/nrt.data" "$T/nrt.data".*
"$NEEDLE" record --sites=all -o "$T/nrt.data" --snapshot --trigger 'kv::Store::hash' -- "$Q" >/dev/null 2>&1
check_eq "no runtime: --trigger 'kv::Store::hash': one snapshot with the call" \
	"$? $(ls "$T"/nrt.data.* 2>/dev/null | wc -l) $(calls "$T/nrt.data.1" kv::Store::hash)" "0 1 1"

# --demangle (uftrace's): with the parameter list, or the symbol; record
# keeps it for the views.
record "$T/d.data" -F 'kv::Store::get' -F scale
check_eq "replay --demangle=full: C++ names with their parameters, no second '()'" \
	"$("$NEEDLE" replay --demangle=full -i "$T/d.data" | sed -n 's/.*| *//p' | sort | uniq -c | awk '{ $1 = $1; print }' | tr '\n' '|')" \
	"3 kv::Store::get(int) const;|1 scale(double);|2 scale(long);|"
check_eq "replay --demangle=no: the symbols" \
	"$("$NEEDLE" replay --demangle=no -i "$T/d.data" | grep -c '_ZNK2kv5Store3getEi();')" 3
check_eq "replay --demangle=no -F SYMBOL: a filter by the symbol" \
	"$("$NEEDLE" replay --demangle=no -F '_Z5scaled' -i "$T/d.data" | sed -n 's/.*| *//p')" "_Z5scaled();"
record "$T/dk.data" -F 'kv::Store::get' --demangle=full
check_eq "record --demangle=full: kept for the views" \
	"$("$NEEDLE" replay -i "$T/dk.data" | grep -c 'kv::Store::get(int) const;')" 3
check_eq "--demangle=other: refused" "$("$NEEDLE" replay --demangle=other -i "$T/d.data" >/dev/null 2>&1; echo $?)" 2

# The views take the names record's patterns take: with the parameter
# list ("scale(double)", a regular expression's look too) or template
# arguments ("twice<long>"), in replay's -F/-N, dump's and graph's FUNC.
record "$T/all.data"
check_eq "replay -F 'scale(double)': one overload's call" \
	"$("$NEEDLE" replay -F 'scale(double)' -i "$T/all.data" | grep -c 'scale')" 1
check_eq "replay -N 'scale(double)': the other overload's 2 calls stay" \
	"$("$NEEDLE" replay -N 'scale(double)' -i "$T/all.data" | grep -c 'scale();')" 2
check_eq "replay -F 'twice<long>': its call" \
	"$("$NEEDLE" replay -F 'twice<long>' -i "$T/all.data" | grep -c 'twice')" 1
check_eq "replay -F 'kv::Store::get(int) const': its 3 calls" \
	"$("$NEEDLE" replay -F 'kv::Store::get(int) const' -i "$T/all.data" | grep -c 'kv::Store::get')" 3
check "graph 'twice<long>': its graph" sh -c "'$NEEDLE' graph -i '$T/all.data' 'twice<long>' | grep -q '(1) twice'"
check_eq "dump --chrome -F 'scale(double)': one call's begin" \
	"$("$NEEDLE" dump --chrome -F 'scale(double)' -i "$T/all.data" | grep -o '"name":"scale","ph":"B"' | wc -l)" 1

# A pattern of the user's that reads as a regular expression is one, even
# when it starts like a mangled name ("_Z5scale." finds both overloads'
# symbols); the mangled names record expands C++ patterns to are exact.
record "$T/rx.data" -F '_Z5scale.'
st=$?; check_eq "-F '_Z5scale.' (a regular expression): recorded ($(tail -1 "$T/err"))" "$st" 0
check_eq "-F '_Z5scale.': both overloads, 3 calls" "$(calls "$T/rx.data" scale)" 3
# A --trigger that reads as a regular expression and names a C function
# (main) besides a C++ one fires on the C function too: at main's entry,
# the first call, not at the method's.
rm -f "$T"/tr.data*
record "$T/tr.data" --snapshot --trigger '^(main|kv::Store::hash)$'
check_eq "--trigger '^(main|kv::Store::hash)\$': one snapshot" "$(ls "$T" | grep -c '^tr\.data\.')" 1
check "--trigger '^(main|kv::Store::hash)\$': fired at main ($("$NEEDLE" info -i "$T/tr.data.1" | grep 'trigger:'))" \
	sh -c "'$NEEDLE' info -i '$T/tr.data.1' | grep -q '^ *trigger:.*: main in thread'"
check_eq "replay -F '_Z5scale.' (a regular expression aimed at symbols): both overloads' 3 calls" \
	"$("$NEEDLE" replay -F '_Z5scale.' -i "$T/all.data" | grep -c 'scale();')" 3
