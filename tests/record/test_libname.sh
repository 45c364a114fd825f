#!/usr/bin/env bash
# test_libname - a library's calls as uftrace shows them: --nest-libcall
# records a library's call of its own exported function through its PLT
# (and not its direct call of a static one), --libname names a library's
# functions NAME@LIBRARY, -f module gives the object that made each call.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # the library has no patchable entries: relocated
P="$PROGS/nest_prog"

"$NEEDLE" record -o "$T/n.data" --nest-libcall -- "$P" >"$T/out" 2>"$T/err"
st=$?
check_eq "--nest-libcall: recorded ($(tail -1 "$T/err"))" "$st" 0
check_eq "output identical to a run left alone" "$(cat "$T/out")" "$("$P")"
check_eq "--nest-libcall: nl_outer's call of nl_inner through its PLT, not its call of the static nl_helper" \
	"$("$NEEDLE" replay -i "$T/n.data" -F nl_outer | sed -n 's/^[^|]*| //p')" "nl_outer() {
  nl_inner();
} /* nl_outer */"
check_eq "--nest-libcall: nothing but main's call at depth 0 (the loader's locking at exit, through its hooks, is no library call)" \
	"$("$NEEDLE" replay -i "$T/n.data" | sed -n 's/^[^|]*| //p' | grep -v '^ ')" "main() {
} /* main */"
check_eq "--libname -f module: NAME@LIBRARY, and the caller's object before each line" \
	"$("$NEEDLE" replay -i "$T/n.data" -F main -f module --libname | grep -E '\| +(} /\* )?(main|nl_)')" \
	"        nest_prog | main() {
        nest_prog |   nl_outer@libnest_lib.so() {
   libnest_lib.so |     nl_inner@libnest_lib.so();
        nest_prog |   } /* nl_outer@libnest_lib.so */
        nest_prog | } /* main */"
check_eq "-f +module: the header names the column" \
	"$("$NEEDLE" replay -i "$T/n.data" -f +module | head -1)" "# DURATION     TID        MODULE NAME   FUNCTION"

"$NEEDLE" record -o "$T/d.data" -- "$P" >/dev/null 2>&1
check_eq "the default view: the program's call of the library, one line" \
	"$("$NEEDLE" replay -i "$T/d.data" -F nl_outer | sed -n 's/^[^|]*| //p')" "nl_outer();"
"$NEEDLE" record -o "$T/k.data" --libname -- "$P" >/dev/null 2>&1
check_eq "record --libname: kept for the views" "$("$NEEDLE" replay -i "$T/k.data" | grep -c 'nl_outer@libnest_lib.so();')" 1
