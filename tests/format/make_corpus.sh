#!/usr/bin/env bash
# make_corpus.sh BUILD - (re)make the seed corpus of the reader fuzzer,
# tests/format/corpus/: tiny traces recorded from the command-line test
# programs (each feature of the format at least once: several threads,
# the function tracer, a crash with salvaged chunks, longjmp unwinds, a
# coroutine switch, a forked child, values with their names and enums,
# USDT probes with their PROBES section: root),
# then truncated and corrupted copies.
# Only the needle command is used: nothing here knows the format.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out="$here/corpus"
needle="$build/needle"
t=$(mktemp -d /tmp/needle-corpus.XXXXXX)
trap 'rm -rf "$t"' EXIT
# The programs run from a scratch directory: the traces name no build tree.
progs="$t/bin"
mkdir "$progs"
cp "$build/tests/progs/"{marker,threads,crash,unwind_c_O2,auto_prog,usdt_prog} "$progs/"

rec() { # rec NAME [record options] -- PROG ARGS
	local name=$1
	shift
	"$needle" record -o "$out/$name" "$@" >/dev/null 2>&1 </dev/null || true
	test -s "$out/$name" || { echo "make_corpus: $name not recorded" >&2; exit 1; }
}

rm -f "$out"/*
rec marker -- "$progs/marker" "$t/m"
rec threads -- "$progs/threads" 2 3
rec function -t function -- "$progs/threads" 2 3
rec filtered -F step -N work -- "$progs/threads" 1 4
rec depth -D 1 -- "$progs/threads" 1 3
rec crash_segv -- "$progs/crash" segv 2
rec crash_kill -- "$progs/crash" kill 1
rec longjmp -- "$progs/unwind_c_O2" longjmp
rec coroutine -- "$progs/unwind_c_O2" coroutine
rec fork -- "$progs/unwind_c_O2" fork
rec cancel -- "$progs/unwind_c_O2" cancel
rec values --sites=compiled --auto-args -F 't_[a-m]*' -- "$progs/auto_prog"
rec usdt --sites=compiled -E 'usdt_test:*' -- "$progs/usdt_prog" 2

# Damaged copies of one trace: truncated in the middle and just before the
# end, a byte flipped in its first and in its last third, zeroed tail.
src="$out/threads"
size=$(stat -c %s "$src")
head -c $((size / 2)) "$src" >"$out/threads_trunc_half"
head -c $((size - 7)) "$src" >"$out/threads_trunc_end"
head -c 100 "$src" >"$out/threads_trunc_100"
for at in $((size / 3)) $((size * 2 / 3)); do
	cp "$src" "$out/threads_flip_$at"
	printf '\x5a' | dd of="$out/threads_flip_$at" bs=1 seek="$at" conv=notrunc 2>/dev/null
done
cp "$src" "$out/threads_zero_tail"
dd if=/dev/zero of="$out/threads_zero_tail" bs=1 seek=$((size - 64)) count=64 conv=notrunc 2>/dev/null
ls -l "$out" | awk 'NR > 1 { n++; s += $5 } END { printf "make_corpus: %d files, %d bytes\n", n, s }'
