#!/usr/bin/env bash
# test_corrupt - corrupted trace files: every view says what is wrong and
# exits 1, never crashes; a truncated one (the recording did not finish)
# is read with a warning (tests/views/test_views_truncated.sh has the
# details); then a bounded fuzzing pass over the reader, built with
# AddressSanitizer.
. "$(dirname "$0")/../lib.sh"

"$NEEDLE" record -o "$T/good.data" -- "$PROGS/threads" 2 2000 >/dev/null 2>&1
size=$(stat -c %s "$T/good.data")
check "seed trace recorded" test "$size" -gt 1000

views() { # views FILE: run every view, print their exit codes
	for v in info replay report "export --format=perfetto -o $T/x.pf" "export --format=chrome -o $T/x.json" \
		"export --format=folded -o $T/x.folded"; do
		"$NEEDLE" $v -i "$1" >/dev/null 2>>"$T/views.err"
		printf '%s ' $?
	done
}

head -c $((size - 7)) "$T/good.data" >"$T/trunc.data"
check_eq "truncated file: every view reads it" "$(views "$T/trunc.data")" "0 0 0 0 0 0 "
check "truncated file: the warning says incomplete" grep -q "is incomplete" <("$NEEDLE" info -i "$T/trunc.data" 2>&1)
rm -f "$T/x.pf" "$T/x.json" "$T/x.folded"

cp "$T/good.data" "$T/flip.data"
printf '\xff' | dd of="$T/flip.data" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
check_eq "corrupted byte: every view exits 1" "$(views "$T/flip.data")" "1 1 1 1 1 1 "
check "corrupted byte: the message names the damage" grep -qE "CRC|corrupted|malformed|truncated" <("$NEEDLE" info -i "$T/flip.data" 2>&1)

printf 'not a trace at all' >"$T/junk.data"
check_eq "not a trace: every view exits 1" "$(views "$T/junk.data")" "1 1 1 1 1 1 "
check "not a trace: bad magic" grep -q "not a needle trace" <("$NEEDLE" info -i "$T/junk.data" 2>&1)
: >"$T/empty.data"
check_eq "empty file: every view exits 1" "$(views "$T/empty.data")" "1 1 1 1 1 1 "
head -c 20 "$T/good.data" >"$T/head.data"
check_eq "a header cut off: every view exits 1" "$(views "$T/head.data")" "1 1 1 1 1 1 "
check_eq "a header cut off: says so, in one line" "$("$NEEDLE" info -i "$T/head.data" 2>&1)" \
	"needle: $T/head.data is cut off: 20 bytes, less than a trace's 64-byte header"
mkdir "$T/dir.data"
check_eq "a directory (uftrace's traces are): says so, in one line" "$("$NEEDLE" replay -i "$T/dir.data" 2>&1)" \
	"needle: $T/dir.data is a directory, not a needle trace (a file: needle record -o FILE)"
mkdir "$T/ufdir" "$T/ufdir/uftrace.data"
check_eq "no needle.data, uftrace's uftrace.data/ there: says so" \
	"$(cd "$T/ufdir" && "$NEEDLE" replay 2>&1; echo "rc $?")" \
	"needle: no needle.data here; uftrace.data is uftrace's trace directory, which needle does not read (record with needle, or give -i FILE)"$'\n'"rc 1"
check "no export file is left behind" test ! -e "$T/x.pf" -a ! -e "$T/x.json" -a ! -e "$T/x.folded"

# Random truncations and byte flips through the command itself.
crashes=0
for i in $(seq 1 40); do
	cp "$T/good.data" "$T/m.data"
	off=$(( (i * 7919) % size ))
	if [ $((i % 2)) = 0 ]; then
		head -c "$off" "$T/good.data" >"$T/m.data"
	else
		printf "\\x$(printf %02x $(( (i * 37) % 256 )))" | dd of="$T/m.data" bs=1 seek="$off" conv=notrunc 2>/dev/null
	fi
	for v in info replay report; do
		"$NEEDLE" $v -i "$T/m.data" >/dev/null 2>&1
		[ $? -gt 1 ] && crashes=$((crashes + 1))
	done
done
check_eq "40 damaged files x 3 views: no crash" "$crashes" 0

"$BUILD/tests/fuzz_reader_asan" "$T/good.data" 3000
