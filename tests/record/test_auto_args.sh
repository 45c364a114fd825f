#!/usr/bin/env bash
# test_auto_args - needle record --auto-args: every argument and return
# value named and typed from the program's DWARF (integers of every width
# and sign, char, bool, enums by name, doubles and a float, strings with
# NULL and a bad pointer, structs in registers by field, values the ABI
# passes on the stack, varargs shown as "..."), compared exactly with what the
# program printed of its own calls; specs checked against DWARF; value
# filters counted exactly; -A / -R / --auto-args on a running process (-p);
# string captures of bad pointers around the program's own faults and
# inside a handler that blocks every signal.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/auto_prog"

"$P" >"$T/plain"
"$NEEDLE" record -o "$T/a.data" --auto-args -F 't_*' -- "$P" >"$T/out" 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
check "output identical to a run left alone" cmp -s "$T/plain" "$T/out"
"$NEEDLE" replay --arg-names -i "$T/a.data" >"$T/r"
check_eq "replay reads it" "$?" 0
grep -E '\| +t_' "$T/r" | grep -vE 't_count|t_clone' | sed 's/^[^|]*| *//' >"$T/got"
check_eq "every call with the names, types and values the program printed ($(wc -l <"$T/plain") lines)" \
	"$(diff "$T/plain" "$T/got" >/dev/null && echo same || diff "$T/plain" "$T/got" | head -6)" same
check_eq "t_count: 100 calls, each with its argument and twice it returned" \
	"$(grep -cE 't_count\(i=([0-9]+)\) = [0-9]+;' "$T/r")" 100
check_eq "t_count values: i and 2i" \
	"$(grep -oE 't_count\(i=[0-9]+\) = [0-9]+' "$T/r" | awk -F'[=)]' '{ if ($4 + 0 != 2 * $2) bad++ } END { print bad + 0 }')" 0
# gcc -O2 clones t_clone (always called with b = 7) as t_clone.constprop.0.
check "gcc made a clone of t_clone" sh -c "nm '$P' | grep -q 't_clone\.'"
check_eq "the clone: 5 calls, no values (its DWARF lists the original's parameters)" \
	"$(grep -cE '\| +t_clone\.[a-z]+\.[0-9]+\(\);' "$T/r")" 5
"$NEEDLE" report -i "$T/a.data" --by-arg m >"$T/rep"
check_eq "report --by-arg m: a row per enumerator of t_enum's m, one call each" \
	"$(grep -E 't_enum\(m=(M_READ|M_WRITE|M_APPEND|M_WRITE\|M_READ)\)$' "$T/rep" | awk '{ s += $(NF-1) } END { print NR, s }')" "4 4"
check_eq "report --by-arg 1: by register, t_count's 100 values of arg1" \
	"$("$NEEDLE" report -i "$T/a.data" --by-arg 1 | grep -cE 't_count\(arg1=[0-9]+\)$')" 100
check_eq "replay --ret-eq -1: the one failed t_enum, by name" \
	"$("$NEEDLE" replay --arg-names -i "$T/a.data" --ret-eq -1 | grep -v "^#" | sed 's/^[^|]*| *//')" "t_enum(m=M_WRITE, on=false) = -1;"
"$NEEDLE" export --format=chrome -i "$T/a.data" -o "$T/a.json"
check "Chrome export: the names as args" grep -q '"args":{"m":"M_WRITE","on":"false"}' "$T/a.json"
check "Chrome export: a struct returned by field" grep -q '"args":{"x":"-1","y":"2"}' "$T/a.json"
"$NEEDLE" export --format=perfetto -i "$T/a.data" -o "$T/a.pftrace"
check "Perfetto export: names and strings as debug annotations" \
	sh -c "grep -qa 'key' '$T/a.pftrace' && grep -qa 'user:42' '$T/a.pftrace' && grep -qa 'M_APPEND' '$T/a.pftrace'"

# The same program built by clang at -O0 (a frame base in rbp: stack
# locations not checked) and -O2 (a frame base in rsp; a bool described
# as a value computed from its register): the same lines.
for v in clang_O0 clang_O2; do
	"$P"_$v >"$T/$v.plain"
	"$NEEDLE" record -o "$T/$v.data" --auto-args -F 't_*' -- "$P"_$v >"$T/$v.out" 2>/dev/null
	check_eq "$v: recorded, output identical" "$? $(cmp -s "$T/$v.plain" "$T/$v.out" && echo same)" "0 same"
	"$NEEDLE" replay --arg-names -i "$T/$v.data" | grep -E '\| +t_' | grep -vE 't_count|t_clone' | sed 's/^[^|]*| *//' >"$T/$v.got"
	check_eq "$v: every call with the values the program printed" \
		"$(diff "$T/$v.plain" "$T/$v.got" >/dev/null && echo same || diff "$T/$v.plain" "$T/$v.got" | head -6)" same
done

# Stack words by hand (argN, N > 6), in the formats asked and, without
# one, the type's; a filter on one; the words DWARF says hold nothing
# refused.
"$NEEDLE" record -o "$T/st.data" -A 't_stack@arg7,arg8/x,arg9/s' -A 't_fpstack@arg7,arg8/f32,arg11/f' \
	-A 't_align@arg11' -- "$P" >/dev/null 2>&1
"$NEEDLE" replay --arg-names -i "$T/st.data" | sed -n 's/.*| *\(t_[a-z]*(arg[^)]*)\).*/\1/p' >"$T/stg"
check_eq "stack words: the 7th-9th integer arguments, the 9th double, a float, a struct's field, after a long double" \
	"$(cat "$T/stg")" 't_stack(arg7=-7, arg8=0x8, arg9="on the stack")
t_fpstack(arg7=4.5, arg8=5, arg11=0.125)
t_align(arg11=9)'
# A long double: two stack words at the entry (/80, uftrace's), st0 at
# the exit (f80), read without changing the x87 state.
"$NEEDLE" record -o "$T/ld.data" -A 't_align@arg9/80' -R 't_ld@retval' -R 't_align@retval' -- "$P" >"$T/ld.out" 2>&1
check_eq "long double: a stack argument (/80) and a return value from st0 (-R, its type from DWARF)" \
	"$("$NEEDLE" replay --arg-names -i "$T/ld.data" | sed -n 's/.*| *\(t_\(ld\|align\)(.*\);$/\1/p')" \
	't_ld() = 4.5
t_align(arg9=8) = 45'
check_eq "long double: the program's own output unchanged (its x87 state)" \
	"$(grep -c '^t_ld(x=3) = 4.5;$' "$T/ld.out")" 1
"$NEEDLE" record -o "$T/ld2.data" -R 't_ld@retval/f80' -- "$P" >/dev/null 2>&1
check_eq "-R FUNC@retval/f80: the same, by format" \
	"$("$NEEDLE" replay -i "$T/ld2.data" | grep -c 't_ld() = 4.500000;')" 1
check_eq "/80 in a register: refused in one line (a long double is on the stack)" \
	"$("$NEEDLE" record -o "$T/ld3.data" -A 't_ld@arg1/80' -- "$P" 2>&1 >/dev/null | grep -c 'is passed on the stack')" 1
# uftrace's places: %stack+N is the N-th stack word (argN+6), %rdi arg1.
"$NEEDLE" record -o "$T/pl.data" -A 't_stack@arg1%stack+1,arg2/x%stack2,arg3/s%stack+3,arg4%rsi' -- "$P" >/dev/null 2>&1
check_eq "%stack+N and %REG: the same values as arg7-9 and arg2" \
	"$("$NEEDLE" replay --arg-names -i "$T/pl.data" | sed -n 's/.*| *\(t_stack(arg[^)]*)\).*/\1/p')" \
	't_stack(arg7=-7, arg8=0x8, arg9="on the stack", arg2=2)'
check_eq "%r10: not a place, refused in one line" \
	"$("$NEEDLE" record -o "$T/pl2.data" -A 't_stack@arg1%r10' -- "$P" 2>&1 >/dev/null | grep -c "'%r10' is not a place")" 1
check_eq "fparg1%rdi: refused" "$("$NEEDLE" record -o "$T/pl3.data" -A 't_fp@fparg1%rdi' -- "$P" >/dev/null 2>&1; echo $?)" 2
"$NEEDLE" record -o "$T/sf.data" -F 't_stack@arg7<0' -F 't_fpstack@m.n==-9' -F 't_align@i>9' -- "$P" >/dev/null 2>&1
check_eq "-F on stack words: t_stack (g=-7 < 0), t_fpstack (m.n == -9), not t_align (i=9)" \
	"$("$NEEDLE" report -i "$T/sf.data" | awk '$NF ~ /^t_/ { print $NF, $(NF-1) }' | sort | tr '\n' ' ')" "t_fpstack 1 t_stack 1 "

# Words past the top of a stack: t_top runs on a makecontext stack
# followed by an inaccessible page; arg255 is in that page and is left
# out, without a fault the program sees.
"$P" top >"$T/top.plain"
"$NEEDLE" record -o "$T/top.data" -A 't_top*@arg7/x,arg255/x' -- "$P" top >"$T/top.out" 2>/dev/null
check_eq "a stack word past the stack's end: exit status and output as untraced" \
	"$? $(cmp -s "$T/top.plain" "$T/top.out" && echo same)" "0 same"
check_eq "... the word that can be read shown, the one that cannot left out" \
	"$("$NEEDLE" replay --arg-names -i "$T/top.data" | grep -cE '[|] t_top\(arg7=0x[0-9a-f]+\)( \{|;)$')" 1
"$NEEDLE" record -o "$T/all.data" -A '*@arg255/x' -- "$P" >"$T/all.out" 2>/dev/null
check_eq "-A '*@arg255/x' on every function, libc's too: exit status and output as untraced" \
	"$? $(cmp -s "$T/plain" "$T/all.out" && echo same)" "0 same"

# The program's own faults: its handler still gets them (with their
# address), around string captures of bad pointers; one it has no handler
# for still kills it with SIGSEGV.
"$P" segv >"$T/segv.plain"
"$NEEDLE" record -o "$T/s.data" -A 't_name@name/s' -- "$P" segv >"$T/segv.out" 2>/dev/null
check_eq "own SIGSEGV handler: exit status" "$?" 0
check "own SIGSEGV handler: output identical (5 faults caught, at their addresses, handler read back)" \
	cmp -s "$T/segv.plain" "$T/segv.out"
check_eq "... the bad pointers recorded as such" \
	"$("$NEEDLE" replay --arg-names -i "$T/s.data" | grep -cE 't_name\(name=\(bad ptr 0x10[0-4]\)\)')" 5
( "$P" crash >/dev/null 2>&1 )
plain_rc=$?
"$NEEDLE" record -o "$T/c.data" -A 't_name@name/s' -- "$P" crash >/dev/null 2>&1
check_eq "a fault without a handler: killed by SIGSEGV, as untraced (139)" "$? $plain_rc" "139 139"

# A handler installed with sigfillset(&sa_mask) reads a bad pointer's
# string: it runs with SIGSEGV blocked untraced, and a fault there would
# kill the process; needle takes SIGSEGV and SIGBUS out of the mask the
# kernel gets (and the program reads back the full one).
"$P" handler >"$T/handler.plain"
"$NEEDLE" record -o "$T/h.data" -A 't_name@name/s' -- "$P" handler >"$T/handler.out" 2>/dev/null
check_eq "full-mask handler: exit status" "$?" 0
check "full-mask handler: output identical (3 signals handled, the full mask read back)" \
	cmp -s "$T/handler.plain" "$T/handler.out"
"$NEEDLE" replay --arg-names -i "$T/h.data" >"$T/hr"
check_eq "... the bad pointers read inside the handler recorded as such" \
	"$(grep -cE 't_name\(name=\(bad ptr 0x20[0-2]\)\)' "$T/hr")" 3
check_eq "... and the string read there" "$(grep -c 't_name(name="in handler")' "$T/hr")" 3

# Specs name parameters; -A for a function replaces what DWARF would show.
"$NEEDLE" record -o "$T/n.data" --auto-args -A 't_str@key/s' -A 't_ints@c/x,ch' -F 't_*' -- "$P" >/dev/null 2>&1
"$NEEDLE" replay --arg-names -i "$T/n.data" >"$T/nr"
check_eq "-A by parameter name: shown under that name" "$(grep -c 't_str(key="user:42") = 7;' "$T/nr")" 1
check_eq "-A c/x: hex, and the char as a char" "$(grep -c "t_ints(c=0xfffe7960, ch='q') = " "$T/nr")" 1
check_eq "--auto-args still names the rest" "$(grep -c 't_fp(x=2.5, y=0.25) = 0.625;' "$T/nr")" 1

# A register named without a format takes the type's from DWARF: an int
# return value at 32 bits (-1, not 4294967295), a double from xmm0.
"$NEEDLE" record -o "$T/d.data" -R 't_enum@retval' -R 't_fp@retval' -A 't_count@arg1' -F 't_*' -- "$P" >/dev/null 2>&1
"$NEEDLE" replay --arg-names -i "$T/d.data" >"$T/dr"
check_eq "-R retval of an int function: -1 at 32 bits" "$(grep -c 't_enum() = -1;' "$T/dr")" 1
check_eq "-R retval of a double function: from xmm0" "$(grep -c 't_fp() = 0.625;' "$T/dr")" 1
check_eq "-A arg1 of an int: decimal" "$(grep -c 't_count(arg1=99);' "$T/dr")" 1

# Value filters: only the calls whose argument compares so.
"$NEEDLE" record -o "$T/f.data" -F 't_count@i>=60' -- "$P" >/dev/null 2>&1
check_eq "-F 't_count@i>=60': 40 calls of 100" "$("$NEEDLE" report -i "$T/f.data" | awk '$NF == "t_count" { print $(NF-1) }')" 40
"$NEEDLE" record -o "$T/f.data" -F 't_count@arg1<10' -F 't_count@arg1==3' -- "$P" >/dev/null 2>&1
check_eq "-F twice on a function: the last test holds (arg1==3): 1 call" \
	"$("$NEEDLE" report -i "$T/f.data" | awk '$NF == "t_count" { print $(NF-1) }')" 1
"$NEEDLE" record -o "$T/f.data" -F 't_enum@m!=2' -A 't_enum@m' -- "$P" >/dev/null 2>&1
check_eq "-F 't_enum@m!=2': the enum by value, 3 calls of 4" "$("$NEEDLE" replay --arg-names -i "$T/f.data" | grep -c 't_enum(m=')" 3
check_eq "... and M_WRITE not among them" "$("$NEEDLE" replay --arg-names -i "$T/f.data" | grep -c 'm=M_WRITE,')" 0
"$NEEDLE" record -o "$T/f.data" -F 't_fp@fparg1>2.4' -F 't_fp@fparg1<2.6' -- "$P" >/dev/null 2>&1
check_eq "-F on a double" "$("$NEEDLE" report -i "$T/f.data" | awk '$NF == "t_fp" { print $(NF-1) }')" 1

# Bad input: one line, exit status 1, the program never started.
bad() { # what, expected message part, needle args...
	local what=$1 want=$2
	shift 2
	rm -f "$T/ran"
	"$NEEDLE" record -o "$T/bad.data" "$@" -- sh -c "touch '$T/ran'; exec '$P'" >/dev/null 2>"$T/e"
	local rc=$?
	check_eq "$what: refused" "$rc" 1
	check "$what: says so ($(head -1 "$T/e"))" grep -q -- "$want" "$T/e"
	check_eq "$what: one line" "$(wc -l <"$T/e")" 1
}
badp() { # the same on the program itself (DWARF is the program's)
	local what=$1 want=$2
	shift 2
	"$NEEDLE" record -o "$T/bad.data" "$@" -- "$P" >"$T/o" 2>"$T/e"
	local rc=$?
	check_eq "$what: refused" "$rc" 1
	check "$what: says so ($(head -1 "$T/e"))" grep -q -- "$want" "$T/e"
	check_eq "$what: one line, the program not run" "$(wc -l <"$T/e") $(wc -c <"$T/o")" "1 0"
}
badp "an argument the function does not have" "t_fp has no arg1" -A 't_fp@arg1/d'
badp "a parameter name it does not have" "no parameter 'nokey'" -A 't_str@nokey'
badp "a string format on a non-pointer" "is not a pointer" -A 't_pt@k/s'
badp "a string format on an integer register" "arg1 of t_count ('i') is an integer" -A 't_count@arg1/s'
badp "a return value of a void function" "t_void returns nothing" -R 't_void@retval/d'
badp "a floating-point argument it does not have" "has no fparg3" -A 't_fp@fparg3'
badp "a filter on a name it does not have" "no parameter 'j'" -F 't_count@j>1'
badp "a name with a glob" "needs one function" -A 't_*@key'
badp "a filter value that is not an integer, on an integer" "not an integer" -F 't_count@i>1.5'
badp "-R on a struct returned in registers" "t_mkpt returns a struct" -R 't_mkpt@retval'
badp "-R /s on a function that returns no pointer" "t_count does not return a pointer" -R 't_count@retval/s'
badp "/f on an integer register" "arg1 is an integer register" -A 't_count@arg1/f'
badp "a stack word no parameter takes" "t_stack has no arg10" -A 't_stack@arg10'
badp "/f on a stack word holding a string" "arg9 of t_stack ('s') is a string, not a floating-point" -A 't_stack@arg9/f'
badp "/s on a stack word holding a long" "arg7 of t_stack ('g') is an integer, not a pointer" -A 't_stack@arg7/s'
badp "a stack word on a function whose parameters take registers" "t_count has no arg7" -A 't_count@arg7'
check_eq "-R with the function tracer: refused" \
	"$("$NEEDLE" record -o "$T/bad.data" -t function -R 't_count@retval' -- "$P" >/dev/null 2>&1; echo $?)" 2
check_eq "an empty value in a list: refused" \
	"$("$NEEDLE" record -o "$T/bad.data" -A 't_count@i,' -- "$P" >/dev/null 2>&1; echo $?)" 2
"$NEEDLE" record -o "$T/w.data" -A 't_ints@c/d,e/x' -F t_ints -- "$P" >/dev/null 2>&1
check_eq "a format without a size takes the type's (c/d: an int's 32 bits; e/x: 64)" \
	"$("$NEEDLE" replay --arg-names -i "$T/w.data" | grep -c 't_ints(c=-100000, e=0xfffc000000000000)')" 1
check_eq "bad -F syntax: refused" "$("$NEEDLE" record -o "$T/bad.data" -F 't_count@i=>1' -- "$P" >/dev/null 2>&1; echo $?)" 2
check_eq "-F on the return value: refused" "$("$NEEDLE" record -o "$T/bad.data" -F 't_count@retval>1' -- "$P" >/dev/null 2>&1; echo $?)" 2
"$NEEDLE" record -o "$T/bad.data" --auto-args -- "$PROGS/static_nodebug" >/dev/null 2>"$T/e"
check_eq "--auto-args on a program without debug info nor libraries: refused, in one line" \
	"$? $(grep -c 'has no debug info.*nor do the libraries it loads' "$T/e") $(wc -l <"$T/e")" "1 1 1"
"$NEEDLE" record --sites=all -o "$T/sh.data" --auto-args -F malloc -- sh -c 'exit 3' >/dev/null 2>&1
check_eq "--auto-args on a program without debug info whose C library has it: recorded (sh's exit status 3)" "$?" 3
check "... malloc calls with their sizes and results" grep -qE 'malloc\(bytes=[0-9]+\) = 0x' <("$NEEDLE" replay --arg-names -i "$T/sh.data")
check "nothing left behind" test ! -e "$T/bad.data"

# -p: --auto-args and a value filter on a running process.
rm -f "$T/stop"
"$P" serve "$T/stop" >"$T/serve.out" &
pid=$!
sleep 0.3
"$NEEDLE" record -p "$pid" --duration=0.3 -o "$T/p.data" --auto-args -F 't_count@i>=0' >/dev/null 2>"$T/perr"
st=$?
check_eq "-p --auto-args: recorded ($(tail -1 "$T/perr"))" "$st" 0
touch "$T/stop"
wait "$pid"
check_eq "-p: the process ends normally" "$?" 0
"$NEEDLE" replay --arg-names -i "$T/p.data" | grep -oE 't_count\(i=[0-9]+\) = [0-9]+;' >"$T/pgot"
check "-p: calls recorded" test -s "$T/pgot"
check_eq "-p: every recorded call is one the process printed" \
	"$(sort "$T/pgot" | comm -23 - <(sort "$T/serve.out") | wc -l)" 0
# The same process again, without values: the last session's specs are gone.
rm -f "$T/stop"
"$P" serve "$T/stop" >"$T/serve.out" &
pid=$!
sleep 0.2
"$NEEDLE" record -p "$pid" --duration=0.2 -o "$T/p1.data" -A 't_count@i' >/dev/null 2>&1
"$NEEDLE" record -p "$pid" --duration=0.2 -o "$T/p2.data" -F t_count >/dev/null 2>&1
touch "$T/stop"
wait "$pid"
check "-p -A: values recorded" grep -q 't_count(i=' <("$NEEDLE" replay --arg-names -i "$T/p1.data")
check_eq "-p again without -A: no values" "$("$NEEDLE" replay --arg-names -i "$T/p2.data" | grep -c 't_count(i=')" 0
check "-p again: calls recorded" grep -q 't_count()' <("$NEEDLE" replay --arg-names -i "$T/p2.data")

# Libraries: one with DWARF of its own, and the C library with its debug
# file (libc6-dbg): their functions named and typed too.
L="$PROGS/lib_prog"
"$L" >"$T/lib.plain"
"$NEEDLE" record --sites=all -o "$T/lib.data" --auto-args -F al_width -F al_count -F strtol -F getenv -- "$L" >"$T/lib.out" 2>/dev/null
check_eq "libraries: recorded, output identical" "$? $(cmp -s "$T/lib.plain" "$T/lib.out" && echo same)" "0 same"
"$NEEDLE" replay --arg-names -i "$T/lib.data" | sed -n 's/.*| *//p' >"$T/lib.got"
check_eq "libraries: a struct and a char of the library's, strtol and getenv of the C library, as printed" \
	"$(diff "$T/lib.plain" "$T/lib.got" >/dev/null && echo same || diff "$T/lib.plain" "$T/lib.got" | head -6)" same
# Specs on library functions are checked against, and named from, the
# library's DWARF (or libc's debug file).
"$NEEDLE" record --sites=all -o "$T/ls.data" -A 'al_width@scale' -R 'al_width@retval' -A 'strtol@base' \
	-- "$L" >/dev/null 2>&1
"$NEEDLE" replay --arg-names -i "$T/ls.data" >"$T/ls.r"
check_eq "-A/-R by parameter name on a library's function and libc's" \
	"$(grep -c 'al_width(scale=2) = 14;' "$T/ls.r") $(grep -cE 'strtol\(base=10\)' "$T/ls.r")" "1 1"
"$NEEDLE" record --sites=all -o "$T/ls.data" -F 'al_count@c==101' -- "$L" >/dev/null 2>&1
check_eq "-F on a library function's char parameter, by name: its one call" \
	"$("$NEEDLE" replay --arg-names -i "$T/ls.data" | grep -c 'al_count()')" 1
"$NEEDLE" record --sites=all -o "$T/ls.data" -F 'al_count@c==120' -- "$L" >/dev/null 2>&1
check_eq "... the filter holds for no call: none recorded" "$("$NEEDLE" replay --arg-names -i "$T/ls.data" | grep -c 'al_count')" 0
"$NEEDLE" record --sites=all -o "$T/ls.data" -A 'strtol@nosuch' -- "$L" >/dev/null 2>"$T/e"
check_eq "a parameter a libc function does not have: refused in one line" \
	"$? $(grep -c "strtol has no parameter 'nosuch'" "$T/e") $(wc -l <"$T/e")" "1 1 1"
"$NEEDLE" record --sites=all -o "$T/ls.data" -R 'free@retval' -- "$L" >/dev/null 2>"$T/e"
check_eq "-R on libc's void free: refused" "$? $(grep -c 'free returns nothing' "$T/e")" "1 1"

# A static function and an IFUNC of one library share a name (needle
# names the IFUNC's resolver so): each line is scoped to its function's
# place in the file, so the static one gets its values and the resolver
# none of its.
"$NEEDLE" record --sites=all -o "$T/ifunc.data" --auto-args -F 'al_*' -- "$L" >/dev/null 2>&1
"$NEEDLE" replay --arg-names -i "$T/ifunc.data" >"$T/ifunc.r"
check_eq "same-named static function and IFUNC: each its own values, once each, nothing else under the name" \
	"$(grep -c 'al_pick(s="xy", k=5) = 9526;' "$T/ifunc.r") $(grep -c 'al_pick_impl(a=6, b=7) = 27;' "$T/ifunc.r") $(grep -cE 'al_pick\((a|s)=' "$T/ifunc.r")" \
	"1 1 1"
# An IFUNC of the C library's whose old version is a plain function of
# the same name (libm: expf@@GLIBC_2.27, an IFUNC; expf@GLIBC_2.2.5): the
# values go to the implementation the resolver picked, which is what runs
# under that name, by name (-A/-R) and from DWARF (--auto-args).
IP="$PROGS/ifunc_prog"
"$IP" >"$T/ifunc.plain"
"$NEEDLE" record --sites=all -o "$T/if1.data" -A 'expf@fparg1/f32' -R 'expf@retval/f32' -- "$IP" >/dev/null 2>&1
check_eq "-A/-R on libm's IFUNC expf by its exact name: the call's values" \
	"$("$NEEDLE" replay --arg-names -i "$T/if1.data" | grep -c 'expf(fparg1=1.5) = 4.481689;')" 1
"$NEEDLE" record --sites=all -o "$T/if2.data" --auto-args -F expf -- "$IP" >/dev/null 2>&1
check_eq "--auto-args on libm's IFUNC expf: as the program printed it" \
	"$("$NEEDLE" replay --arg-names -i "$T/if2.data" | sed -n 's/.*| *//p' | grep expf)" "$(cat "$T/ifunc.plain")"
rm -f "$T/stop"
"$L" serve "$T/stop" >"$T/lserve.out" &
pid=$!
sleep 0.2
"$NEEDLE" record -p "$pid" --sites=all --duration=0.2 -o "$T/lp.data" --auto-args -F usleep >/dev/null 2>"$T/lperr"
st=$?
check_eq "-p --auto-args with the libraries the process maps: recorded ($(tail -1 "$T/lperr"))" "$st" 0
touch "$T/stop"
wait "$pid"
"$NEEDLE" replay --arg-names -i "$T/lp.data" | sed -n 's/.*| *//p' | grep -E '^usleep\(.*;$' >"$T/lp.got"
check_eq "... usleep calls, each with its argument and result, as the process printed ($(wc -l <"$T/lp.got") calls)" \
	"$(test -s "$T/lp.got" && sort -u "$T/lp.got")" "usleep(useconds=1000) = 0;"

# A process whose program file was deleted since it started (a package
# upgrade replaces files so): its functions and DWARF come from the file
# the kernel still holds.
cp "$P" "$T/srv"
rm -f "$T/stop"
"$T/srv" serve "$T/stop" >"$T/srv.out" &
pid=$!
sleep 0.2
rm "$T/srv"
"$NEEDLE" record -p "$pid" --duration=0.2 -o "$T/del.data" --auto-args -F t_count >/dev/null 2>"$T/delerr"
st=$?
check_eq "-p on a deleted program: recorded ($(tail -1 "$T/delerr"))" "$st" 0
touch "$T/stop"
wait "$pid"
check_eq "-p on a deleted program: it ends normally" "$?" 0
check "-p on a deleted program: calls with their values" \
	grep -qE 't_count\(i=[0-9]+\) = [0-9]+;' <("$NEEDLE" replay --arg-names -i "$T/del.data")

# Lua from Debian's source (-g): the interpreter's own functions.
LUA="$BUILD/third_party/lua"
if [ -x "$LUA" ] || "$(dirname "$0")/../relocate/build_real_programs.sh" "$BUILD" >"$T/build.log" 2>&1; then
	"$NEEDLE" record -o "$T/lua.data" --auto-args -P luaS_newlstr -P luaB_print -P math_sqrt -P lua_pushnumber \
		-- "$LUA" -e 'print("hello-needle"); print(math.sqrt(2.25))' >"$T/lua.out" 2>/dev/null
	check_eq "lua: output" "$(cat "$T/lua.out")" "$(printf 'hello-needle\n1.5')"
	"$NEEDLE" replay --arg-names -i "$T/lua.data" >"$T/lr"
	check_eq "lua: luaS_newlstr(L, str, l) made the string print printed, with its length" \
		"$(grep -c 'luaS_newlstr(L=0x[0-9a-f]*, str="hello-needle.*, l=12) = 0x' "$T/lr")" 1
	check_eq "lua: lua_pushnumber(L, n) pushed the square root print printed" \
		"$(grep -c 'lua_pushnumber(L=0x[0-9a-f]*, n=1.5)' "$T/lr")" 1
	check_eq "lua: luaB_print returns 0 results, twice" "$(grep -c '} = 0; /\* luaB_print \*/' "$T/lr")" 2
else
	fail "build Lua from Debian's source"
fi
