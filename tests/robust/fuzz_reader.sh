#!/usr/bin/env bash
# test_fuzz_reader_libfuzzer - fuzz the trace reader with libFuzzer for
# FUZZ_SECONDS (default @FUZZ_TEST_SECONDS@), starting from the checked-in
# seed corpus; new inputs go to FUZZ_CORPUS (default: a scratch directory).
# A finding is saved under build/fuzz/artifacts; reproduce it with
#   UBSAN_OPTIONS=halt_on_error=1 build/tests/fuzz/fuzz_reader_libfuzzer build/fuzz/artifacts/crash-...
# Findings reported but not fixed yet are held back by UBSan suppressions
# (tests/robust/known_findings.supp, known_leaks.supp).
set -u
BUILD=${NEEDLE_BUILD:?NEEDLE_BUILD must point at the build directory}
F="$BUILD/tests/fuzz"
seconds=${FUZZ_SECONDS:-@FUZZ_TEST_SECONDS@}
seed=${FUZZ_SEED:-$(( $(date +%s) % 100000 + 1 ))}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
corpus=${FUZZ_CORPUS:-$scratch/corpus}
artifacts="$BUILD/fuzz/artifacts"
mkdir -p "$corpus" "$artifacts"

echo "fuzz_reader: $seconds s, -seed=$seed"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$F/known_findings.supp
export LSAN_OPTIONS=suppressions=$F/known_leaks.supp
"$F/fuzz_reader_libfuzzer" -max_total_time="$seconds" -seed="$seed" -max_len=8192 -timeout=20 \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
	"$corpus" "$F/seed" >"$scratch/log" 2>&1
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/log")
cov=$(grep -E '^#[0-9]+' "$scratch/log" | tail -1 | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
if [ "$rc" = 0 ]; then
	echo "PASS: libFuzzer on the trace reader: ${runs:-?} inputs in $seconds s, no finding (coverage ${cov:-?} edges, -seed=$seed)"
else
	echo "FAIL: libFuzzer on the trace reader found a problem (status $rc, -seed=$seed); the report:"
	grep -E -A25 '^==[0-9]+==ERROR|runtime error|contract broken|^SUMMARY|artifact_prefix|Test unit written' \
		"$scratch/log" | head -60 | sed 's/^/      /'
fi
