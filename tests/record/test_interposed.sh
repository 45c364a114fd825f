# test_interposed.sh - the functions libneedle interposes (signal,
# sigaction, sigprocmask, pthread_sigmask, pthread_create, backtrace) are
# calls of the program like any library call: a line each, with their
# arguments and filters, none of libneedle's own work under them, and
# none of libneedle's own calls to them.
. "$(dirname "$0")/../lib.sh"
# Library calls are relocated C library functions and these interposers.
unset NEEDLE_SITES
P="$PROGS/interposed"
cd "$T" || exit 1

"$P" >"$T/plain"
# graph FILE: the function column of main's thread (the first TID), on
# its own (replay_threads: no other thread's lines split its calls).
graph() {
	replay_threads "$1" | grep -v '^#' | awk -F'|' '
		{ match($1, /\[ *[0-9]+\]/); tid = substr($1, RSTART, RLENGTH) }
		!first { first = tid }
		tid == first { sub(/^ /, "", $2); print $2 }'
}
# others FILE: each other thread's graph on a line of its own (their
# lines interleave in the replay), sorted.
others() {
	replay_threads "$1" | grep -v '^#' | awk -F'|' '
		{ match($1, /\[ *[0-9]+\]/); tid = substr($1, RSTART, RLENGTH); gsub(/ /, "", $2) }
		!first { first = tid }
		tid != first { g[tid] = g[tid] $2 }
		END { for (t in g) print g[t] }' | sort
}
rec() { "$NEEDLE" record -o "$T/$1.data" "${@:2}" -- "$P" >"$T/$1.out" 2>"$T/$1.err"; }

rec all
check "output identical to a run left alone" cmp -s "$T/plain" "$T/all.out"
check_eq "each interposed call is a line; the signal its unblocking let in runs under pthread_sigmask" \
	"$(graph all.data)" "main() {
  signal();
  sigemptyset();
  sigaction();
  sigemptyset();
  sigaddset();
  sigprocmask();
  raise();
  pthread_sigmask() {
    on_usr1();
  } /* pthread_sigmask */
  pthread_create();
  pthread_create();
  pthread_create();
  pthread_join();
  pthread_join();
  pthread_join();
  frames() {
    backtrace();
  } /* frames */
  printf();
} /* main */"
check_eq "the threads it created: their own graphs" "$(others all.data)" \
	"$(printf 'worker(){work(){getpid();}/*work*/}/*worker*/\n%.0s' 1 2 3)"

# needle's own thread (--ctl's listener) is created through the same
# interposer: not a call of the program's.
rec ctl --ctl
check_eq "--ctl: needle's own pthread_create is not recorded" "$(calls "$T/ctl.data" pthread_create)" 3

rec args -A 'pthread_create@arg4/d' -A 'signal@arg1'
check_eq "-A on interposed functions: their arguments" \
	"$(graph args.data | grep -E '^  (pthread_create|signal)\(' | tr -d ' \n')" \
	"signal(12);pthread_create(0);pthread_create(1);pthread_create(2);"
rec N -N pthread_create -N 'sig*'
check_eq "-N on interposed functions: dropped" "$(graph N.data | grep -cE 'pthread_create|signal|sigaction|sigprocmask')" 0
rec F -F backtrace
check_eq "-F on an interposed function: its call alone" "$(graph F.data)" "backtrace();"
rec nolib --no-libcall
check_eq "--no-libcall: none of them" "$(graph nolib.data | tr -d ' \n')" \
	"main(){on_usr1();frames();}/*main*/"

# longjmp and dlopen are interposed and not traced; ppoll is interposed
# and traced.  What their interposers do on their own account (errno, the
# system call that unblocks needle's stop signal) is not the program's.
J="$PROGS/jumps"
"$J" >"$T/jplain"
"$NEEDLE" record -o "$T/j.data" -- "$J" >"$T/j.out" 2>"$T/j.err"
check "jumps: output identical to a run left alone" cmp -s "$T/jplain" "$T/j.out"
check_eq "the interposers' own calls are not lines; ppoll, called for the program, is; setjmp, longjmp, dlopen and dlsym are lines; a call left by longjmp closes as uftrace closes it" \
	"$(graph j.data | tr -d ' \n')" \
	"main(){_setjmp();jump_back(){longjmp();}/*jump_back*/after(){getpid();}/*after*/dlopen();dlsym();dlsym();sigemptyset();ppoll();printf();}/*main*/"
check "jumps: dlsym(RTLD_NEXT) found the ppoll the program is bound to, as untraced" grep -q 'next is the bound ppoll 1' "$T/jplain"
check_eq "jumps: _setjmp, longjmp, dlopen and dlsym, whose return is never hooked, show when they were called, not a duration" \
	"$(replay_threads "$T/j.data" | grep -cE '^ *@[0-9.]+ .*\| +(_setjmp|longjmp|dlopen|dlsym)\(\);$')" 5
# Those lines keep to -D as every other call does: longjmp, inside
# jump_back, is left out at -D 2, and every one of them at -D 1.
check_eq "jumps: replay -D 2 leaves out longjmp (depth 3), keeps the depth-2 lines" \
	"$("$NEEDLE" replay -D 2 -i "$T/j.data" | grep -v "^#" | sed 's/^[^|]*| //' | tr -d ' \n')" \
	"main(){_setjmp();jump_back();after();dlopen();dlsym();dlsym();sigemptyset();ppoll();printf();}/*main*/"
check_eq "jumps: replay -D 1: main alone" "$("$NEEDLE" replay -D 1 -i "$T/j.data" | grep -v "^#" | sed 's/^[^|]*| //' | tr -d ' \n')" "main();"
