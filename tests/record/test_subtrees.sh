# test_subtrees.sh - the function graph as uftrace users read it: -F and -N
# select and drop subtrees at record and replay, -P keeps ftrace's
# one-function filter, library calls are one line each, replay -t keeps
# the callers of a slow call, -C shows a function's callers.
. "$(dirname "$0")/../lib.sh"
# The library-call view is about relocated C library functions.
unset NEEDLE_SITES
P="$PROGS/subtrees"
cd "$T" || exit 1

# graph ARGS...: replay's function column, the header dropped.
graph() { "$NEEDLE" replay "$@" | sed -n 's/^[^|]*| //p'; }
rec() { "$NEEDLE" record -o "$T/$1.data" "${@:2}" -- "$P" >/dev/null 2>"$T/$1.err"; }

rec all
check_eq "default: the program's calls into the C library, one line each; none of its insides" \
	"$(graph -i all.data)" "main() {
  grab() {
    malloc();
  } /* grab */
  free();
  outer() {
    inner() {
      leaf() {
        getpid();
      } /* leaf */
    } /* inner */
  } /* outer */
  slow() {
    leaf() {
      getpid();
    } /* leaf */
    nap() {
      usleep();
    } /* nap */
  } /* slow */
} /* main */"

rec nolib --no-libcall
check_eq "--no-libcall: the program's own functions only" "$(graph -i nolib.data | tr -d ' \n')" \
	"main(){grab();outer(){inner(){leaf();}/*inner*/}/*outer*/slow(){leaf();nap();}/*slow*/}/*main*/"

rec every --libcall=all
check "--libcall=all: every call, the C library's of its own functions too (usleep calls nanosleep)" \
	grep -q '^nanosleep() {$' <(graph -i every.data | sed 's/^ *//')
check "--libcall=all: usleep is a call with its callees" grep -q '^usleep() {$' <(graph -i every.data | sed 's/^ *//')
rec nest --nest-libcall
check_eq "--nest-libcall: calls between objects only, none of the C library's of its own (uftrace's)" \
	"$(graph -i nest.data | grep -c 'nanosleep')" 0
check_eq "--libcall=nest is --nest-libcall" "$(rec nest2 --libcall=nest; graph -i nest2.data | grep -c 'nanosleep')" 0
check_eq "--libcall=bogus: refused, exit 2" "$(rec bad --libcall=bogus; echo $?)" 2
check_eq "--nest-libcall with --no-libcall: refused" "$(rec bad --nest-libcall --no-libcall; echo $?)" 2

rec F -F inner
check_eq "record -F: the calls of inner and all they call, nothing else" "$(graph -i F.data)" "inner() {
  leaf() {
    getpid();
  } /* leaf */
} /* inner */"

rec N -N outer -N nap
check_eq "record -N: outer and nap dropped with what they call" "$(graph -i N.data | tr -d ' \n')" \
	"main(){grab(){malloc();}/*grab*/free();slow(){leaf(){getpid();}/*leaf*/}/*slow*/}/*main*/"

rec FD -F main -D 2
check_eq "record -F main -D 2: two levels from main" "$(graph -i FD.data | tr -d ' \n')" \
	"main(){grab();free();outer();slow();}/*main*/"

rec P -P inner -P leaf --no-libcall
check_eq "record -P --no-libcall: only the patched functions, each on its own (ftrace's filter)" "$(graph -i P.data)" "inner() {
  leaf();
} /* inner */
leaf();"
rec PL -P inner -P leaf
check_eq "record -P: the patched functions, and every call the program makes into libraries (uftrace's -P)" \
	"$(graph -i PL.data | tr -d ' \n')" "malloc();free();inner(){leaf(){getpid();}/*leaf*/}/*inner*/leaf(){getpid();}/*leaf*/usleep();"

rec PG -P getpid --no-libcall
check_eq "record -P naming a library function with --no-libcall: refused, saying how to name it" \
	"$?/$(grep -c -- '-P NAME@LIBRARY' PG.err)/$(test -e PG.data && echo file || echo none)" "1/1/none"
rec PM -P 'getpid@libc.so.6' --no-libcall
check_eq "record -P NAME@libc.so.6 --no-libcall: that library function on its own, nothing else" \
	"$(graph -i PM.data | sort | uniq -c | tr -s ' ')" " 2 getpid();"
rec R -F '^(inner|nap)$'
check_eq "record -F with a regular expression (uftrace's patterns)" "$(graph -i R.data | tr -d ' \n')" \
	"inner(){leaf(){getpid();}/*leaf*/}/*inner*/nap(){usleep();}/*nap*/"

check_eq "replay -F: a subtree" "$(graph -i all.data -F slow | tr -d ' \n')" \
	"slow(){leaf(){getpid();}/*leaf*/nap(){usleep();}/*nap*/}/*slow*/"
check_eq "replay -N: a subtree dropped; a call left with no shown call is one line" \
	"$(graph -i all.data -N 'lea?' -N grab | tr -d ' \n')" \
	"main(){free();outer(){inner();}/*outer*/slow(){nap(){usleep();}/*nap*/}/*slow*/}/*main*/"
check_eq "replay -D 2: a call whose calls are deeper is one line" "$(graph -i all.data -D 2 | tr -d ' \n')" \
	"main(){grab();free();outer();slow();}/*main*/"
check_eq "replay -F GLOB@depth=N: N levels of its calls" "$(graph -i all.data -F 'main' -F 'inner@depth=1' | tr -d ' \n')" \
	"main(){grab(){malloc();}/*grab*/free();outer(){inner();}/*outer*/slow(){leaf(){getpid();}/*leaf*/nap(){usleep();}/*nap*/}/*slow*/}/*main*/"
check_eq "replay -t: the slow call with its callers, the tree pruned" "$(graph -i all.data -t 1ms)" "main() {
  slow() {
    nap() {
      usleep();
    } /* nap */
  } /* slow */
} /* main */"
check_eq "replay -C: the calls of getpid and their callers" "$(graph -i all.data -C getpid | tr -d ' \n')" \
	"main(){outer(){inner(){leaf(){getpid();}/*leaf*/}/*inner*/}/*outer*/slow(){leaf(){getpid();}/*leaf*/}/*slow*/}/*main*/"
# -Z SIZE: functions smaller than SIZE bytes are not patched.  grab and
# nap are the program's smallest (they only call the C library).
size_of() { printf '%d' "0x$(nm -S "$P" | awk -v f="$1" '$4 == f { print $2 }')"; }
Z=$(( $(size_of grab) > $(size_of nap) ? $(size_of grab) + 1 : $(size_of nap) + 1 ))
check "(-Z $Z is above grab's and nap's sizes and below the others')" \
	test "$(size_of slow)" -ge "$Z" -a "$(size_of leaf)" -ge "$Z" -a "$(size_of inner)" -ge "$Z"
# The C library's getpid is smaller still (8 bytes in Debian 12's): not
# recorded either.
libc=$(ldd "$P" | awk '/libc.so/ { print $3 }')
getpid_size=$(printf '%d' "0x$(nm -D -S "$libc" | awk '$4 ~ /^getpid@@/ { print $2 }')")
check "(the C library's getpid, $getpid_size bytes, is below -Z $Z)" test "$getpid_size" -lt "$Z"
rec Z -Z "$Z"
check_eq "record -Z: grab, nap and getpid not recorded, what grab and nap call one level up" \
	"$(graph -i Z.data | tr -d ' \n')" \
	"main(){malloc();free();outer(){inner(){leaf();}/*inner*/}/*outer*/slow(){leaf();usleep();}/*slow*/}/*main*/"
# replay -Z and -T FUNC@size=: the same functions hidden at view time,
# from the sizes the trace keeps (SITE_SIZES).
check_eq "replay -Z: the graph record -Z gives" "$(graph -i all.data -Z "$Z" | tr -d ' \n')" \
	"$(graph -i Z.data | tr -d ' \n')"
check_eq "replay -T 'slow|grab@size=N': of those two, the one under N hidden, a level up" \
	"$(graph -i all.data -F main -T "slow|grab@size=$(( $(size_of grab) + 1 ))" | tr -d ' \n')" \
	"main(){malloc();free();outer(){inner(){leaf(){getpid();}/*leaf*/}/*inner*/}/*outer*/slow(){leaf(){getpid();}/*leaf*/nap(){usleep();}/*nap*/}/*slow*/}/*main*/"
check_eq "replay -T grab@size=N at grab's own size: shown" \
	"$(graph -i all.data -F grab -T "grab@size=$(size_of grab)" | tr -d ' \n')" "grab(){malloc();}/*grab*/"
check_eq "record -T grab@size=N: kept for the views" \
	"$("$NEEDLE" record -o "$T/zt.data" -T "grab@size=$(( $(size_of grab) + 1 ))" -- "$P" >/dev/null 2>&1;
	   graph -i "$T/zt.data" -F main -D 2 | tr -d ' \n')" "main(){malloc();free();outer();slow();}/*main*/"
check_eq "replay -Z 0 and -T f@size=x: refused, exit 2" \
	"$("$NEEDLE" replay -i all.data -Z 0 >/dev/null 2>&1; echo $?; "$NEEDLE" replay -i all.data -T 'grab@size=x' >/dev/null 2>&1; echo $?)" "2
2"
check_eq "record -Z 0: refused" "$("$NEEDLE" record -o "$T/z0.data" -Z 0 -- "$P" >/dev/null 2>&1; echo $?)" 2
rec C -C getpid
check_eq "record -C: kept for the views, as replay -C shows it" "$(graph -i C.data)" "$(graph -i all.data -C getpid)"
check_eq "replay -C with -t: only the slow calls among them" "$(graph -i all.data -C usleep -t 1ms | tr -d ' \n')" \
	"main(){slow(){nap(){usleep();}/*nap*/}/*slow*/}/*main*/"
check_eq "replay -F FUNC@PLT: the program's calls into other objects (uftrace's @plt)" \
	"$(graph -i all.data -F 'getpid|malloc|leaf@plt' | tr -d ' \n')" "malloc();getpid();getpid();"
check_eq "replay -F FUNC@PLT: a function of the program is not one" "$(graph -i all.data -F 'leaf@PLT' | wc -l)" 0
check_eq "replay --no-comment: closing braces without the name" "$(graph -i all.data -F outer --no-comment | tr -d ' \n')" \
	"outer(){inner(){leaf(){getpid();}}}"
check "replay takes the recorded program's name after the options, as uftrace replay does" \
	eval '"$NEEDLE" replay -i all.data subtrees >/dev/null'
check "... and refuses another name" eval '! "$NEEDLE" replay -i all.data other 2>/dev/null'
check "replay refuses a pattern that is not a regular expression" eval '! "$NEEDLE" replay -i all.data -F "^(a" 2>/dev/null'
check_eq "record -F naming nothing stops the program before main" \
	"$("$NEEDLE" record -o "$T/x.data" -F no_such_fn -- "$P" >/dev/null 2>&1; echo $?)" 1

# Run as `uftrace` (a link so named): uftrace's command line.  Patterns
# read as uftrace reads them, a regular expression when they have any of
# .?*+-^$|()[]{} ("ea*f": "e", any a's, "f", found in leaf); needle's own
# reading takes "ea*f" for a glob, which names nothing here.
ln -sf "$NEEDLE" "$T/uftrace"
check_eq "as uftrace: replay -F 'ea*f' is a regular expression (leaf's subtrees)" \
	"$("$T/uftrace" replay -i all.data -F 'ea*f' | sed -n 's/^[^|]*| //p' | tr -d ' \n')" \
	"leaf(){getpid();}/*leaf*/leaf(){getpid();}/*leaf*/"
check_eq "as needle: the same pattern is a glob that names nothing" \
	"$(graph -i all.data -F 'ea*f' | wc -l)" 0
"$T/uftrace" record -o "$T/ua.data" -R 'ea*f@retval' -- "$P" >/dev/null 2>"$T/ua.err"
check_eq "as uftrace: record -R 'ea*f@retval' takes leaf's return values" \
	"$(graph -i ua.data | grep -cE '} = [01]; /\* leaf \*/')" 2
"$NEEDLE" record -o "$T/mr.data" --match=regex -R 'ea*f@retval' -- "$P" >/dev/null 2>"$T/mr.err"
check_eq "as needle with --match=regex, given after -R: the same" \
	"$(graph -i mr.data | grep -cE '} = [01]; /\* leaf \*/')" 2
check_eq "as uftrace: a first argument that is no command is the program (uftrace's live)" \
	"$(cd "$T" && "$T/uftrace" --no-pager "$P" 2>/dev/null | sed -n 's/^[^|]*| //p' | head -1)" "main() {"
# The calls open at -r's end, titled as uftrace titles them.
nap_ns=$("$NEEDLE" replay -i all.data -f time | awk -F'|' '$2 ~ /^ +usleep\(\);$/ { split($1, f, " "); printf "%.0f", f[1] * 1e9 + 1000; exit }')
check_eq "as uftrace: the calls open at the end under uftrace's title" \
	"$("$T/uftrace" replay -i all.data -r "~${nap_ns}ns" | grep stopped)" \
	"uftrace stopped tracing with remaining functions"
check_eq "as needle: under needle's" "$("$NEEDLE" replay -i all.data -r "~${nap_ns}ns" | grep stopped)" \
	"needle stopped recording with these calls open"
# --match is an option of needle's, not of the program's: after the
# program's name it is the program's own argument.
"$NEEDLE" record -o "$T/ma.data" -R 'ea*f@retval' -- "$P" --match=regex >/dev/null 2>"$T/ma.err"
check_eq "--match after the program's name is the program's: 'ea*f' stays a glob, naming nothing" \
	"$?:$(graph -i ma.data 2>/dev/null | grep -c '} = ')" "1:0"
# --match=regex leaves a plain name a name: the one debug info describes.
"$NEEDLE" record -o "$T/mn.data" --match=regex -A 'target@x' -- "$PROGS/uvalues" >/dev/null 2>"$T/mn.err"
st=$?; check_eq "--match=regex -A 'target@x': a parameter named by a plain name ($(tail -1 "$T/mn.err"))" "$st" 0
# Run as uftrace with --match=glob: the agent and the views read 'ou*' alike.
check_eq "as uftrace with --match=glob: -N 'ou*' is a glob for the views too (outer only dropped)" \
	"$(cd "$T" && "$T/uftrace" --match=glob -F main -N 'ou*' "$P" 2>/dev/null | sed -n 's/^[^|]*| //p' | tr -d ' \n')" \
	"main(){grab(){malloc();}/*grab*/free();slow(){leaf(){getpid();}/*leaf*/nap(){usleep();}/*nap*/}/*slow*/}/*main*/"
# -H and -C are patterns too: kept as uftrace meant them for every later view.
"$T/uftrace" record -o "$T/uh.data" -H 'sl*' -- "$P" >/dev/null 2>&1
check_eq "as uftrace: record -H 'sl*' (a regular expression) hides usleep in a later needle replay too" \
	"$("$T/uftrace" replay -i uh.data | grep -c usleep) $("$NEEDLE" replay -i uh.data | grep -c usleep)" "0 0"
# A regular expression names the program's functions and the libraries'
# alike (it is not replaced by the program's it names).
check_eq "record -N '^(leaf|usleep)\$': the program's leaf and the C library's usleep both dropped" \
	"$(cd "$T" && "$NEEDLE" live -N '^(leaf|usleep)$' -- "$P" 2>/dev/null | sed -n 's/^[^|]*| //p' | grep -cE '^ *(leaf|usleep)\(')" 0
# uftrace filters by -F only once one names a function: one naming none
# leaves the recording whole, and says so; needle's own reading refuses it.
"$T/uftrace" record -o "$T/un.data" -F 'no_such_function' -- "$P" >/dev/null 2>"$T/un.err"
check_eq "as uftrace: -F naming nothing records every call ($(tail -1 "$T/un.err"))" \
	"$?:$("$T/uftrace" replay -i un.data | sed -n 's/^[^|]*| //p' | tr -d ' \n')" \
	"0:main(){grab(){malloc();}/*grab*/free();outer(){inner(){leaf(){getpid();}/*leaf*/}/*inner*/}/*outer*/slow(){leaf(){getpid();}/*leaf*/nap(){usleep();}/*nap*/}/*slow*/}/*main*/"
check "as uftrace: -F naming nothing is said on standard error" \
	grep -q -- "-F names no function here; recording every call, as uftrace does" "$T/un.err"
"$NEEDLE" record -o "$T/nn.data" -F 'no_such_function' -- "$P" >/dev/null 2>"$T/nn.err"
check_eq "as needle: -F naming nothing is refused" "$?:$(grep -c 'the filters match no function' "$T/nn.err")" "1:1"
# uftrace's short forms -e (--estimate-return) and -l (--nest-libcall),
# and --time: the program's times when it ends, in uftrace's words.
"$T/uftrace" record -e -o "$T/se.data" -- "$P" >/dev/null 2>&1
check_eq "record -e is --estimate-return" "$("$NEEDLE" info -i "$T/se.data" | grep -c -- '--estimate-return')" 1
"$T/uftrace" record -l -o "$T/sl.data" -- "$P" >/dev/null 2>"$T/sl.err"
"$NEEDLE" record --nest-libcall -o "$T/sl2.data" -- "$P" >/dev/null 2>&1
check "record -l is --nest-libcall (the same graph, $(graph -i sl.data | wc -l) lines)" \
	test "$(graph -i sl.data | wc -l)" -gt 5 -a "$(graph -i sl.data | md5sum)" = "$(graph -i sl2.data | md5sum)"
"$T/uftrace" record --time -o "$T/st.data" -- "$P" >"$T/st.out" 2>"$T/st.err"
check_eq "record --time: the program's three times, after it ends, not taken for -t" \
	"$(grep -cE '^(elapsed| system|   user) time: +[0-9]+\.[0-9]{9} sec$' "$T/st.err"):$(cat "$T/st.out" | wc -c)" \
	"3:$("$P" | wc -c)"
