#!/usr/bin/env bash
# test_unwind - returns that do not happen the ordinary way: longjmp and
# siglongjmp (-O0 and -O2), signal handlers running traced code (also on a
# sigaltstack), pthread_exit and pthread_cancel from deep frames, fork,
# vfork + exec, backtrace(), swapcontext coroutines, and C++ exceptions
# caught in traced and
# untraced frames, rethrown and nested.  The program's output and exit
# status are byte-identical to an untraced run, and the trace's nesting is
# exact: calls skipped by an unwind are closed "(unwound)" where the unwind
# happened.  Each case runs through the recorder's assembly path, and again
# with returns hijacked and with its calls in C.
. "$(dirname "$0")/../lib.sh"

# same_run NAME PROG ARGS...: record PROG, compare with an untraced run.
same_run() {
	local name=$1
	shift
	local plain traced ps ts
	plain=$("$@" 2>&1)
	ps=$?
	traced=$("$NEEDLE" record -o "$T/$name.data" -- "$@" 2>"$T/$name.err")
	ts=$?
	check_eq "$name: output byte-identical" "$traced" "$plain"
	check_eq "$name: exit status identical" "$ts" "$ps"
	"$NEEDLE" replay --mark-unwound -i "$T/$name.data" >"$T/$name.replay"
	"$NEEDLE" export --format=folded -i "$T/$name.data" -o "$T/$name.folded"
}
count() { grep -c -- "$1" "$2" | tr -d ' '; }

for o in O0 O2; do
	P="$PROGS/unwind_c_$o"
	same_run "longjmp-$o" "$P" longjmp
	check_eq "longjmp-$o: level3 called 100 times" "$(calls "$T/longjmp-$o.data" level3)" 100
	check_eq "longjmp-$o: every level1..3 closed as unwound" "$(count '(unwound) \*/$' "$T/longjmp-$o.replay")" 300
	check_eq "longjmp-$o: after() never nested under a skipped call" "$(count ';level[123];after' "$T/longjmp-$o.folded")" 0
	check "longjmp-$o: after() is nested directly under run_jumps" grep -q ';main;run_jumps;after;leaf ' "$T/longjmp-$o.folded"
	check_eq "longjmp-$o: no call left running" "$(count 'with these calls open' "$T/longjmp-$o.replay")" 0

	same_run "siglongjmp-$o" "$P" siglongjmp
	check_eq "siglongjmp-$o: the handler is nested in the interrupted call" \
		"$(calls "$T/siglongjmp-$o.data" on_usr1)" 100
	check "siglongjmp-$o: handler under level3" grep -q ';level3;on_usr1 ' "$T/siglongjmp-$o.folded"
	check_eq "siglongjmp-$o: handler and levels closed as unwound" "$(count '(unwound) \*/$' "$T/siglongjmp-$o.replay")" 400

	for m in signal altstack; do
		same_run "$m-$o" "$P" $m
		check_eq "$m-$o: handler_work called 100 times" "$(calls "$T/$m-$o.data" handler_work)" 100
		check_eq "$m-$o: handler_work always under the handler inside the interrupted call" \
			"$(grep ';handler_work' "$T/$m-$o.folded" | grep -cv ';main;run_signals;interrupted;on_usr2;handler_work')" 0
	done

	for m in exit cancel; do
		same_run "$m-$o" "$P" $m
		check "$m-$o: t_level2 closed as unwound" grep -q '} /\* t_level2 (unwound) \*/' "$T/$m-$o.replay"
		check "$m-$o: t_level1 closed as unwound" grep -q '} /\* t_level1 (unwound) \*/' "$T/$m-$o.replay"
		check_eq "$m-$o: no call left running" "$(count 'with these calls open' "$T/$m-$o.replay")" 0
		check_eq "$m-$o: the main thread goes on: after() recorded" "$(calls "$T/$m-$o.data" after)" 1
	done

	same_run "fork-$o" "$P" fork
	check_eq "fork-$o: child_work in the child and in the parent" "$(calls "$T/fork-$o.data" child_work)" 2
	check_eq "fork-$o: every leaf of both processes" "$(calls "$T/fork-$o.data" leaf)" 110
	check_eq "fork-$o: the child is its own thread in the trace" \
		"$("$NEEDLE" info -i "$T/fork-$o.data" | awk '/^threads:/ {print $2}')" 2

	same_run "vfork-$o" "$P" vfork
	check_eq "vfork-$o: the parent goes on tracing" "$(calls "$T/vfork-$o.data" child_work)" 1
	same_run "backtrace-$o" "$P" backtrace

	same_run "coroutine-$o" "$P" coroutine
	check_eq "coroutine-$o: co_yield called 5 times" "$(calls "$T/coroutine-$o.data" co_yield)" 5
	check_eq "coroutine-$o: co_resume called 6 times" "$(calls "$T/coroutine-$o.data" co_resume)" 6
	check_eq "coroutine-$o: run_coroutine returns" "$(count '} /\* run_coroutine \*/' "$T/coroutine-$o.replay")" 1
	# Each context keeps its own nesting: every call closes in its context.
	check_eq "coroutine-$o: every co_resume closes normally" "$(count '} /\* co_resume \*/' "$T/coroutine-$o.replay")" 6
	check_eq "coroutine-$o: every co_yield closes normally" "$(count '} /\* co_yield \*/' "$T/coroutine-$o.replay")" 5
	check_eq "coroutine-$o: co_body closes normally" "$(count '} /\* co_body \*/' "$T/coroutine-$o.replay")" 1
	check_eq "coroutine-$o: no call mismatched" "$(grep -cE 'not recorded|with these calls open|its entry' "$T/coroutine-$o.replay")" 0
done

P="$PROGS/unwind_cpp"
same_run cpp-traced "$P" traced
check_eq "cpp-traced: thrower called 100 times" "$(calls "$T/cpp-traced.data" thrower)" 100
check_eq "cpp-traced: names are demangled" "$(calls "$T/cpp-traced.data" catcher)" 100
check_eq "cpp-traced: 50 throws unwind thrower and middle" "$(count '(unwound) \*/$' "$T/cpp-traced.replay")" 100
check_eq "cpp-traced: no call left running" "$(count 'with these calls open' "$T/cpp-traced.replay")" 0
same_run cpp-untraced "$P" untraced
check_eq "cpp-untraced: caught in an untraced frame, thrower and middle unwound" \
	"$(count '(unwound) \*/$' "$T/cpp-untraced.replay")" 100
check_eq "cpp-untraced: main still encloses everything" "$(count '} /\* main \*/' "$T/cpp-untraced.replay")" 1
same_run cpp-rethrow "$P" rethrow
check_eq "cpp-rethrow: thrower, middle and rethrower unwound 50 times each" \
	"$(count '(unwound) \*/$' "$T/cpp-rethrow.replay")" 150
check_eq "cpp-rethrow: outer_catcher always returns" "$(count '} /\* outer_catcher \*/' "$T/cpp-rethrow.replay")" 100
same_run cpp-nested "$P" nested
check_eq "cpp-nested: nested returns every time" "$(count '} /\* nested \*/' "$T/cpp-nested.replay")" 100
check_eq "cpp-nested: no call left running" "$(count 'with these calls open' "$T/cpp-nested.replay")" 0
same_run cpp-cancel "$P" cancel
check "cpp-cancel: all three destructors ran under tracing" grep -q 'destructors 3' <(cat "$T/cpp-cancel.err" /dev/null; "$NEEDLE" record -o "$T/cc.data" -- "$P" cancel 2>/dev/null)
check "cpp-cancel: c_inner closed as unwound" grep -q '} /\* c_inner (unwound) \*/' "$T/cpp-cancel.replay"
check "cpp-cancel: c_outer closed as unwound" grep -q '} /\* c_outer (unwound) \*/' "$T/cpp-cancel.replay"

# Every case again with the C library's and libstdc++'s functions traced
# too (--sites=all, needle record's default): jumps, handlers, thread exits,
# context switches and exceptions now pass through relocated functions
# (longjmp's and swapcontext's callees, __cxa_throw, qsort's callbacks...).
# Output and exit status are those of an untraced run, and the program's
# own calls are counted exactly as above.
for o in O0 O2; do
	P="$PROGS/unwind_c_$o"
	for m in longjmp siglongjmp signal altstack exit cancel fork vfork backtrace coroutine; do
		NEEDLE_SITES=all same_run "$m-$o-all" "$P" "$m"
	done
	check_eq "longjmp-$o-all: level3 called 100 times" "$(calls "$T/longjmp-$o-all.data" level3)" 100
	check_eq "siglongjmp-$o-all: on_usr1 called 100 times" "$(calls "$T/siglongjmp-$o-all.data" on_usr1)" 100
	check_eq "signal-$o-all: handler_work called 100 times" "$(calls "$T/signal-$o-all.data" handler_work)" 100
	check_eq "altstack-$o-all: handler_work called 100 times" "$(calls "$T/altstack-$o-all.data" handler_work)" 100
	check_eq "fork-$o-all: every leaf of both processes" "$(calls "$T/fork-$o-all.data" leaf)" 110
	check_eq "coroutine-$o-all: co_yield called 5 times" "$(calls "$T/coroutine-$o-all.data" co_yield)" 5
	check_eq "coroutine-$o-all: every co_resume closes normally" \
		"$(count '} /\* co_resume \*/' "$T/coroutine-$o-all.replay")" 6
	check_eq "coroutine-$o-all: the C library's makecontext traced, once" \
		"$(calls "$T/coroutine-$o-all.data" makecontext)" 1
done
P="$PROGS/unwind_cpp"
for m in traced untraced rethrow nested; do
	NEEDLE_SITES=all same_run "cpp-$m-all" "$P" "$m"
done
check_eq "cpp-traced-all: thrower called 100 times" "$(calls "$T/cpp-traced-all.data" thrower)" 100
check_eq "cpp-traced-all: libstdc++'s __cxa_allocate_exception traced, once per throw" \
	"$(calls "$T/cpp-traced-all.data" __cxa_allocate_exception)" 50
# uftrace's view, replay's default: the C++ runtime's exception machinery
# (__cxa_throw, __cxa_rethrow, the catches, and __cxa_end_catch's tail
# calls of __cxa_free_exception and free) is no line, and a call the
# unwinding left closes as a return, with no mark.
"$NEEDLE" replay -i "$T/cpp-rethrow-all.data" >"$T/cpp-rethrow-all.default"
check_eq "cpp-rethrow-all (default view): no line of the exception machinery" \
	"$(grep -cE '__cxa_(throw|rethrow|begin_catch|end_catch|free_exception)|_Unwind|[| ]free\(' "$T/cpp-rethrow-all.default")" 0
check_eq "cpp-rethrow-all (default view): the throw's allocation, the program's call, is a line 50 times" \
	"$(count '__cxa_allocate_exception();' "$T/cpp-rethrow-all.default")" 50
check_eq "cpp-rethrow-all (default view): no call marked unwound" "$(count 'unwound' "$T/cpp-rethrow-all.default")" 0
check_eq "cpp-rethrow-all (default view): rethrower closes 100 times, 50 of them unwound" \
	"$(count '} /\* rethrower \*/$' "$T/cpp-rethrow-all.default")" 100
check_eq "cpp-nested-all: nested returns every time" "$(count '} /\* nested \*/' "$T/cpp-nested-all.replay")" 100

# The cases above ran through the calling trampoline (the recorder's
# direct path calls each function whose exit it wants, trampoline.S), in
# the recorder's assembly path (agent/graph_trampoline.S).  Once more with
# every return hijacked instead (NEEDLE_CALLING=0), and with the
# recorder's calls taken by the C direct path (NEEDLE_GRAPH_ASM=0): the
# frames each pushes are closed by the others' exits and by every unwind
# above, so the graph is the same, thread by thread, for the program's
# own functions.
shape() { replay_threads "$1" | sed 's/^[^|]*| //; s/^task: [0-9]*$/task/'; }
# again SUFFIX VAR=VALUE WHAT: every case once more with VAR=VALUE in the
# environment, against the above (same_run's checks print their lines
# from the subshell; tests/run.sh counts the lines).
again() {
	local suffix=$1 env=$2 what=$3 o m P
	for o in O0 O2; do
		P="$PROGS/unwind_c_$o"
		for m in longjmp siglongjmp signal altstack exit cancel fork backtrace coroutine; do
			(export "${env?}" && same_run "$m-$o-$suffix" "$P" "$m")
			check_eq "$m-$o: the same graph $what" \
				"$(diff <(shape "$T/$m-$o.data") <(shape "$T/$m-$o-$suffix.data") | head -4)" ""
		done
	done
	P="$PROGS/unwind_cpp"
	for m in traced untraced rethrow nested cancel; do
		(export "${env?}" && same_run "cpp-$m-$suffix" "$P" "$m")
		check_eq "cpp-$m: the same graph $what" \
			"$(diff <(shape "$T/cpp-$m.data") <(shape "$T/cpp-$m-$suffix.data") | head -4)" ""
	done
}
again hijacked NEEDLE_CALLING=0 "with returns hijacked"
again c NEEDLE_GRAPH_ASM=0 "with the recorder's calls in C"
