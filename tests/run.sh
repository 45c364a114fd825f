#!/usr/bin/env bash
# run.sh BUILD [SELECTION [PATTERN]] - run tests and print the summary line
# "N passed, N failed".
#
#   run.sh build/tests                    every tier, in TEST_TIERS' order
#   run.sh build/tests views              one tier (tests/views/)
#   run.sh build/tests unit,api,record/test_record_demo
#                                         tiers, and single tests as TIER/NAME
#                                         (NAME may be a glob)
#   run.sh build/tests all snapshot       every test whose name holds "snapshot"
#   run.sh build/tests PATH...            the test programs or scripts named
#
# A test is an executable BUILD/TIER/test_* (a compiled program, or the
# launcher of tests/TIER/test_*.sh).  The tiers and their order are
# TEST_TIERS in tests/tests.mk; a folder of tests under BUILD that is not
# a tier is an error, so that no test can drop out of the suite unseen.
# A program that crashes or exits non-zero without printing a FAIL: line
# counts as one failure; a selection that matches nothing is a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build/tests}" && pwd) || { echo "run.sh: no build directory ${1:-build/tests}: run make tests"; exit 2; }
export NEEDLE_BUILD=$(cd "$build/.." && pwd)
read -r -a tiers <<<"$(sed -n 's/^TEST_TIERS := //p' "$here/tests.mk")"
[ "${#tiers[@]}" -gt 0 ] || { echo "run.sh: no TEST_TIERS in $here/tests.mk"; exit 2; }

passed=0
failed=0
log=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$log" "$scratch"' EXIT

is_tier() {
	local t
	for t in "${tiers[@]}"; do [ "$t" = "$1" ] && return 0; done
	return 1
}

# Every folder under BUILD that holds a test must be a tier.
for prog in "$build"/*/test_*; do
	[ -f "$prog" ] && [ -x "$prog" ] || continue
	dir=$(basename "$(dirname "$prog")")
	if ! is_tier "$dir"; then
		echo "FAIL: $prog is in $dir/, which is not a tier of TEST_TIERS (tests/tests.mk)"
		failed=$((failed + 1))
	fi
done

progs=()
pattern=${3:-}
# tier_tests TIER [GLOB]: the tier's tests, matching GLOB and PATTERN.
tier_tests() {
	local prog name
	for prog in "$build/$1"/test_*; do
		[ -f "$prog" ] && [ -x "$prog" ] || continue
		name=$(basename "$prog")
		# shellcheck disable=SC2053
		[[ $name == ${2:-*} ]] || continue
		[ -z "$pattern" ] || [[ $name == *"$pattern"* ]] || continue
		progs+=("$prog")
	done
}

selection=${2:-all}
if [[ $selection == */* ]] && [ -e "$selection" ]; then
	progs=("${@:2}")
else
	IFS=, read -r -a items <<<"$selection"
	for item in "${items[@]}"; do
		tier=${item%%/*}
		glob=
		[[ $item == */* ]] && glob=${item#*/}
		if [ "$tier" = all ]; then
			for t in "${tiers[@]}"; do tier_tests "$t" "$glob"; done
		elif is_tier "$tier"; then
			before=${#progs[@]}
			tier_tests "$tier" "$glob"
			if [ "${#progs[@]}" -eq "$before" ]; then
				echo "FAIL: $item names no built test (make tests first?)"
				failed=$((failed + 1))
			fi
		else
			echo "FAIL: $tier is not a tier; the tiers are: ${tiers[*]}"
			failed=$((failed + 1))
		fi
	done
fi
if [ "${#progs[@]}" -eq 0 ] && [ "$failed" -eq 0 ]; then
	echo "FAIL: no test selected by '${2:-all}' ${3:+and '$3' }under $build"
	failed=1
fi

for prog in "${progs[@]}"; do
	name=$(basename "$prog")
	# A script runs under bash whatever its mode; a program that cannot
	# be run (a test built wrong) fails below, never skipped.
	run=("$prog")
	case "$prog" in *.sh) run=(bash "$prog") ;; esac
	# Programs run in a scratch directory: -pg binaries write gmon.out.
	start=$SECONDS
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
	tier=$(basename "$(dirname "$prog")")
	printf '%-44s %4d passed, %d failed %5ds\n' "$tier/$name" "$p" "$f" $((SECONDS - start))
	passed=$((passed + p))
	failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
