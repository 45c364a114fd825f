#!/usr/bin/env bash
# test_faults - every allocation, mmap and mprotect that libneedle's code
# makes is failed, one per run (tests/robust/fault_shim.c): the traced
# program must never crash and print exactly what it prints untraced;
# needle says what it could not do.
. "$(dirname "$0")/../lib.sh"
SHIM="$BUILD/tests/robust/fault_shim.so"
API="$BUILD/tests/robust/fault_api"

# count_points LOG COMMAND...: fault points met by a run without faults.
count_points() {
	local log=$1
	shift
	rm -f "$log"
	LD_PRELOAD="$SHIM" NEEDLE_FAULT_AT=0 NEEDLE_FAULT_LOG="$log" "$@" >/dev/null 2>&1
	cat "$log" 2>/dev/null || echo 0
}

# The C API, used by a program: each failure is an error code.
"$API" >"$T/api.plain" 2>/dev/null
n=$(count_points "$T/api.log" "$API")
check "API: fault points found" test "$n" -gt 5
bad=0
for i in $(seq 1 "$n"); do
	LD_PRELOAD="$SHIM" NEEDLE_FAULT_AT=$i "$API" >"$T/api.out" 2>"$T/api.err"
	rc=$?
	if [ "$rc" -ne 0 ] || ! cmp -s "$T/api.plain" "$T/api.out"; then
		bad=$((bad + 1))
		echo "      fault $i: exit $rc; $(tail -1 "$T/api.err")"
	fi
done
check_eq "API: $n faults, one per run: the program never crashed, output unchanged" "$bad" 0

# needle record: the program runs on whatever the agent cannot do; with
# compiled entries only, and with every object's functions relocated
# (--sites=all: discovery, decoding and detours fail in turn too).
# The shim's own malloc, mmap... are functions of a loaded object too: with
# --sites=all they would be traced, their return address hooked, and the
# shim would take libneedle's return trampoline for a caller in libneedle.
# They (and the C library's of the same names) stay untraced.
SHIM_FUNCS=(-N malloc -N calloc -N realloc -N posix_memalign -N mmap -N mprotect)
record_faults() { # record_faults LABEL SITES
	local label=$1 sites=$2
	P="$PROGS/threads"
	"$P" 2 500 >"$T/rec.plain"
	n=$(count_points "$T/rec.log" env NEEDLE_SITES="$sites" "$NEEDLE" record "${SHIM_FUNCS[@]}" -o "$T/probe.data" -- "$P" 2 500)
	check "$label: fault points found" test "$n" -gt 5
	bad=0
	for i in $(seq 1 "$n"); do
		rm -f "$T/f.data"
		LD_PRELOAD="$SHIM" NEEDLE_FAULT_AT=$i NEEDLE_SITES="$sites" "$NEEDLE" record "${SHIM_FUNCS[@]}" -o "$T/f.data" -- "$P" 2 500 \
			>"$T/rec.out" 2>"$T/rec.err"
		rc=$?
		why=
		[ "$rc" -ge 128 ] && why="killed ($rc)"
		cmp -s "$T/rec.plain" "$T/rec.out" || why="$why output differs"
		if [ "$rc" -ne 0 ] && ! grep -q '^needle: ' "$T/rec.err"; then why="$why exit $rc without a word"; fi
		if [ -e "$T/f.data" ] && ! "$NEEDLE" info -i "$T/f.data" >/dev/null 2>&1; then why="$why unreadable trace"; fi
		if [ -n "$why" ]; then
			bad=$((bad + 1))
			echo "      fault $i:$why; $(tail -1 "$T/rec.err")"
		fi
	done
	check_eq "$label: $n faults, one per run: the program never crashed, output unchanged" "$bad" 0
}
record_faults record compiled
record_faults "record --sites=all" all
