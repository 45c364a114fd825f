#!/usr/bin/env bash
# test_dlopen_search - an object the program dlopens is traced from its
# first call however the loader finds it: through the caller's DT_RPATH
# ($ORIGIN, as the java launcher's libjli finds libjvm), its DT_RUNPATH,
# or a name with $ORIGIN in it.  The loader searches by the calling
# object, so libneedle's dlopen cannot make the call itself; it sends the
# C library's dlopen back through the caller's PLT stub and discovers the
# object on the way out.  Exact call counts of the plugin's function, and
# the program's output byte for byte against a run without needle.
. "$(dirname "$0")/../lib.sh"
SRC="$(dirname "$0")/dlopen_search"
N=7
mkdir -p "$T/app/bin" "$T/app/plug"
gcc -O2 -fpatchable-function-entry=5 -shared -fPIC "$SRC/plug.c" -o "$T/app/plug/libplug_search.so" || fail "the plugin builds"
gcc -O2 -fpatchable-function-entry=5 "$SRC/main.c" -o "$T/app/bin/rpath" -ldl -Wl,--disable-new-dtags,-rpath,'$ORIGIN/../plug' || fail "builds with DT_RPATH"
gcc -O2 -fpatchable-function-entry=5 "$SRC/main.c" -o "$T/app/bin/runpath" -ldl -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../plug' || fail "builds with DT_RUNPATH"
gcc -O2 -fpatchable-function-entry=5 "$SRC/main.c" -o "$T/app/bin/origin" -ldl || fail "builds"
check "the RPATH program has a DT_RPATH" grep -q RPATH <(readelf -d "$T/app/bin/rpath")
check "the RUNPATH program has a DT_RUNPATH" grep -q RUNPATH <(readelf -d "$T/app/bin/runpath")

expect="sum $((N * N))"
for c in "rpath libplug_search.so" "runpath libplug_search.so" 'origin $ORIGIN/../plug/libplug_search.so'; do
	prog=${c%% *}
	name=${c#* }
	check_eq "$prog: runs untraced" "$("$T/app/bin/$prog" "$name" $N)" "$expect"
	out=$("$NEEDLE" record -o "$T/$prog.data" -- "$T/app/bin/$prog" "$name" $N 2>"$T/$prog.err")
	check_eq "$prog: exit status under needle" "$?" 0
	check_eq "$prog: the same output under needle" "$out" "$expect"
	check_eq "$prog: plug_fn traced from its first call" "$(calls "$T/$prog.data" plug_fn)" $N
done

# -F FUNC@MODULE naming an object the program has not loaded yet waits
# for its dlopen (its calls, nothing else); a -F that names nothing that
# is or could be loaded is still refused, before main.
out=$("$NEEDLE" record -F 'plug_fn@libplug_search' -o "$T/later.data" -- "$T/app/bin/rpath" libplug_search.so $N 2>"$T/later.err")
check_eq "-F plug_fn@libplug_search before its dlopen: recorded, the same output" "$?/$out" "0/$expect"
check_eq "-F plug_fn@libplug_search: its calls and nothing else" \
	"$("$NEEDLE" report --csv -s name -i "$T/later.data" | cut -d, -f1,2 | tail -n +2 | tr '\n' ' ')" "plug_fn,$N "
"$NEEDLE" record -F 'no_such_fn@rpath' -o "$T/none.data" -- "$T/app/bin/rpath" libplug_search.so $N >/dev/null 2>"$T/none.err"
check_eq "-F naming a function the loaded program does not have: refused, exit 1, no trace" \
	"$?/$(grep -c 'match no function' "$T/none.err")/$(test -e "$T/none.data" && echo file || echo none)" "1/1/none"

# A C++ plugin dlopen'ed by a C program brings libstdc++, whose
# constructors call into the C library while dlopen runs (before the
# recorder knows libstdc++'s span): those calls are libstdc++'s, not the
# program's, so uftrace's library-call view (the default) leaves them
# out; --nest-libcall shows them, as calls between objects.
cat >"$T/cxxplug.cc" <<'CC'
#include <string>
extern "C" int plug_fn(int i) { return (int)std::to_string(i).size(); }
CC
if g++ -O2 -shared -fPIC "$T/cxxplug.cc" -o "$T/app/plug/libcxxplug.so" 2>/dev/null; then
	check "the C program does not load libstdc++ itself" sh -c "! ldd '$T/app/bin/origin' | grep -q stdc++"
	want=$("$T/app/bin/origin" '$ORIGIN/../plug/libcxxplug.so' 3)
	for v in "default" "nest --nest-libcall"; do
		name=${v%% *}
		opt=${v#"$name"}
		out=$(NEEDLE_SITES= "$NEEDLE" record $opt -o "$T/cxx$name.data" -- "$T/app/bin/origin" '$ORIGIN/../plug/libcxxplug.so' 3 2>"$T/cxx$name.err")
		check_eq "C++ plugin ($name): the same output under needle ($(head -c 200 "$T/cxx$name.err"))" "$out" "$want"
		"$NEEDLE" replay -i "$T/cxx$name.data" | sed 's/^[^|]*| //' >"$T/cxx$name.graph"
	done
	check_eq "C++ plugin: main's own lines, dlopen, dlsym, 3 plug_fn calls and printf, nothing of libstdc++'s start-up" \
		"$(awk '/^  [^ }]/ { sub(/\(.*/, ""); print $1 }' "$T/cxxdefault.graph" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' ')" \
		"dlopen=1 dlsym=1 plug_fn=3 printf=1 strtol=1 "
	check "C++ plugin --nest-libcall: libstdc++'s __cxa_atexit calls while dlopen runs" \
		grep -q '__cxa_atexit' "$T/cxxnest.graph"
else
	fail "g++ builds the C++ plugin"
fi
