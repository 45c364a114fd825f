#!/usr/bin/env bash
# run.sh SCRIPT... - run the server tests one after the other (never two
# servers under load at once on a small machine) and print, like
# tests/run.sh, each script's counts and the summary "N passed, N failed".
# A script that exits non-zero without a FAIL: line counts as one failure.
set -u
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for prog in "$@"; do
	name=$(basename "$prog")
	start=$(date +%s)
	timeout -k 10 300 bash "$prog" >"$log" 2>&1
	rc=$?
	p=$(grep -c '^PASS:' "$log")
	f=$(grep -c '^FAIL:' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "FAIL: $name exited with status $rc; the end of its output:"
		tail -15 "$log" | sed 's/^/      /'
	fi
	grep -A1 '^FAIL:' "$log"
	printf '%-40s %4d passed, %d failed (%d s)\n' "$name" "$p" "$f" $(($(date +%s) - start))
	passed=$((passed + p))
	failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
