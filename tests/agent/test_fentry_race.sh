#!/usr/bin/env bash
# test_fentry_race - 200 objects built with gcc -pg -mfentry -fPIC (each
# function opens with the 6-byte `call *__fentry__@GOTPCREL(%rip)`) are
# loaded while their own threads run through every site; needle's dlopen
# hook rewrites each site into "NOP5; NOP1" with those threads running
# (the int3 batch).  A thread that traps on a site mid-rewrite must be
# sent to the end of the 6-byte instruction: sent 5 bytes on, it ran the
# old instruction's last byte and crashed (SIGSEGV or SIGILL, nearly
# every run).  Every result the threads compute is checked.
. "$(dirname "$0")/../lib.sh"
P="$BUILD/tests/patch"

"$NEEDLE" record -F fr_f1 -F main -o "$T/r.data" -- "$P/fentry_race" "$P/libfentry_race.so" 200 "$T" \
	>"$T/out" 2>"$T/rec"
rc=$?
check_eq "200 objects normalized under busy threads: exit status ($(tail -1 "$T/rec"))" "$rc" 0
check_eq "every result right" "$(cat "$T/out")" "loads 200 wrong 0"
n=$(calls "$T/r.data" fr_f1)
check "fr_f1 calls recorded through the normalized sites ($n)" test "$n" -gt 200 2>/dev/null
check_eq "main recorded once" "$(calls "$T/r.data" main)" 1
