#!/usr/bin/env bash
# run.sh BUILD [SCRIPT...] - run every test program under a build
# directory (or only the scripts named, one after the other: make
# test-servers) and print the summary line "N passed, N failed".  A
# program that crashes or exits non-zero without printing a FAIL: line
# counts as one failure.
set -u
build=$(cd "${1:-build/tests}" && pwd)
passed=0
failed=0
log=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$log" "$scratch"' EXIT

here=$(cd "$(dirname "$0")" && pwd)
export NEEDLE_BUILD=$(cd "$build/.." && pwd)
progs=("$build"/test_* "$here"/cli/test_*.sh)
[ $# -gt 1 ] && progs=("${@:2}")
for prog in "${progs[@]}"; do
	name=$(basename "$prog")
	# A script runs under bash whatever its mode; a program that cannot
	# be run (a test built wrong) fails below, never skipped.
	run=("$prog")
	case "$prog" in *.sh) run=(bash "$prog") ;; esac
	# Programs run in a scratch directory: -pg binaries write gmon.out.
	(cd "$scratch" && timeout 600 "${run[@]}") >"$log" 2>&1
	rc=$?
	p=$(grep -c '^PASS:' "$log")
	f=$(grep -c '^FAIL:' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "FAIL: $name exited with status $rc; the end of its output:"
		tail -15 "$log" | sed 's/^/      /'
	fi
	grep -A1 '^FAIL:' "$log"
	printf '%-40s %4d passed, %d failed\n' "$name" "$p" "$f"
	passed=$((passed + p))
	failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
