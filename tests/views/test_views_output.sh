#!/usr/bin/env bash
# test_views_output - a view that cannot write its output says so once on
# stderr and exits non-zero: standard output on a full device (/dev/full),
# and export -o FILE on a file system that fills up.  Nothing is left
# behind by a failed export.
. "$(dirname "$0")/../lib.sh"

"$NEEDLE" record -o "$T/t.data" -- "$PROGS/threads" 2 2000 >/dev/null 2>&1
check "trace recorded" test -s "$T/t.data"

for v in "replay" "replay -t 0" "report" "report --csv" "info" "export --format=folded -o -" \
	"export --format=chrome -o -" "export --format=perfetto -o -"; do
	"$NEEDLE" $v -i "$T/t.data" >/dev/full 2>"$T/err"
	rc=$?
	check "$v >/dev/full: exits non-zero" test "$rc" -ne 0
	check_eq "$v >/dev/full: one line on stderr" "$(wc -l <"$T/err" | tr -d ' ')" 1
	check "$v >/dev/full: the message says why" grep -q "No space left on device" "$T/err"
done

# A view that succeeds still exits 0 and says nothing.
"$NEEDLE" report -i "$T/t.data" >/dev/null 2>"$T/err"
check_eq "report >/dev/null: exit 0" "$?" 0
check_eq "report >/dev/null: nothing on stderr" "$(wc -c <"$T/err" | tr -d ' ')" 0

# export -o FILE on a file system that is full (a 32 KiB tmpfs, filled, as
# root).
mkdir -p "$T/small"
if mount -t tmpfs -o size=32k needle-test "$T/small" 2>/dev/null; then
	dd if=/dev/zero of="$T/small/fill" bs=4k 2>/dev/null
	for f in folded chrome perfetto; do
		"$NEEDLE" export --format=$f -i "$T/t.data" -o "$T/small/out.$f" 2>"$T/err"
		rc=$?
		check "export $f to a full file system: exits non-zero" test "$rc" -ne 0
		check_eq "export $f to a full file system: one line on stderr" "$(wc -l <"$T/err" | tr -d ' ')" 1
		check "export $f to a full file system: the message names the file" grep -q "out.$f" "$T/err"
		check_eq "export $f to a full file system: nothing left behind" "$(ls -A "$T/small" | grep -cv '^fill$')" 0
	done
	umount "$T/small"
else
	pass "export to a full file system: skipped (mounting a tmpfs needs root)"
fi

# export -o to what is not a regular file is written in place: renaming a
# temporary file over /dev/null (or a pipe) would replace the device.
mknod "$T/null" c 1 3 2>/dev/null || mkfifo "$T/null"
for f in folded chrome perfetto pprof otlp; do
	if [ -p "$T/null" ]; then (cat "$T/null" >/dev/null &); fi
	"$NEEDLE" export --format=$f -i "$T/t.data" -o "$T/null" 2>"$T/err"
	st=$?
	check_eq "export $f to a device (or a pipe): exit 0 ($(head -1 "$T/err"))" "$st" 0
	check "export $f to a device (or a pipe): it is still one" test -c "$T/null" -o -p "$T/null"
done
check_eq "no temporary file left beside it" "$(ls "$T" | grep -c '^null\.tmp')" 0
view_refused "export -o a directory" 1 "is a directory" "$NEEDLE" export --format=chrome -i "$T/t.data" -o "$T"

# Never over the trace being read.
cp "$T/t.data" "$T/self.data"
view_refused "export onto its own trace" 1 "is the trace being read" \
	"$NEEDLE" export --format=chrome -i "$T/self.data" -o "$T/self.data"
check "the trace is intact" cmp -s "$T/t.data" "$T/self.data"

# Interrupted (SIGINT, then again until it ends): either whole, or nothing
# and a non-zero exit, never a temporary file or directory left.
"$NEEDLE" record -o "$T/big.data" -- "$PROGS/views_deep" 1 200 1000 >/dev/null 2>&1
for f in pprof otlp chrome ctf uftrace; do
	"$NEEDLE" export --format=$f -i "$T/big.data" -o "$T/int.$f" 2>"$T/int.err" &
	xp=$!
	sleep 0.05
	while kill -INT "$xp" 2>/dev/null; do sleep 0.05; done
	wait "$xp"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		check "export $f interrupted: it had finished, whole" test -e "$T/int.$f"
	else
		check "export $f interrupted: nothing written, said so ($(head -1 "$T/int.err"))" \
			sh -c "test ! -e '$T/int.$f' && grep -q 'interrupted' '$T/int.err'"
	fi
	check_eq "export $f interrupted: no temporary output left" "$(ls -d "$T"/int.$f.tmp* 2>/dev/null | wc -l)" 0
	rm -rf "$T/int.$f"
done
