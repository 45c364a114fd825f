#!/usr/bin/env bash
# test_fuzz_reader_libfuzzer - fuzz the trace reader with libFuzzer from the
# checked-in seed corpus.  In `make test`: @FUZZ_TEST_RUNS@ inputs from a fixed
# seed, the same every time (FUZZ_RUNS, FUZZ_SEED change them).  With
# FUZZ_SECONDS (`make fuzz`): that long, from a seed taken from the clock.
# New inputs go to FUZZ_CORPUS (default: a scratch directory).
# A finding is saved under build/fuzz/artifacts; reproduce it with
#   UBSAN_OPTIONS=halt_on_error=1 build/tests/fuzz/fuzz_reader_libfuzzer build/fuzz/artifacts/crash-...
# Findings reported but not fixed yet are held back by UBSan and LSan
# suppressions (tests/robust/known_findings.supp, known_leaks.supp).
set -u
BUILD=${NEEDLE_BUILD:?NEEDLE_BUILD must point at the build directory}
F="$BUILD/tests/fuzz"
if [ -n "${FUZZ_SECONDS:-}" ]; then
	seed=${FUZZ_SEED:-$(( $(date +%s) % 100000 + 1 ))}
	bound=(-max_total_time="$FUZZ_SECONDS")
	what="$FUZZ_SECONDS s"
else
	seed=${FUZZ_SEED:-1}
	bound=(-runs="${FUZZ_RUNS:-@FUZZ_TEST_RUNS@}" -max_total_time=300)
	what="${FUZZ_RUNS:-@FUZZ_TEST_RUNS@} inputs"
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
corpus=${FUZZ_CORPUS:-$scratch/corpus}
artifacts="$BUILD/fuzz/artifacts"
mkdir -p "$corpus" "$artifacts"

echo "fuzz_reader: $what, -seed=$seed"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$F/known_findings.supp
export LSAN_OPTIONS=suppressions=$F/known_leaks.supp
start=$(date +%s)
"$F/fuzz_reader_libfuzzer" "${bound[@]}" -seed="$seed" -max_len=8192 -timeout=20 \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
	"$corpus" "$F/seed" >"$scratch/log" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/log")
cov=$(grep -E '^#[0-9]+' "$scratch/log" | tail -1 | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
if [ "$rc" = 0 ]; then
	echo "PASS: libFuzzer on the trace reader: ${runs:-?} inputs in $took s, no finding (coverage ${cov:-?} edges, -seed=$seed)"
else
	echo "FAIL: libFuzzer on the trace reader found a problem (status $rc, -seed=$seed); the report:"
	grep -E -A25 '^==[0-9]+==ERROR|runtime error|contract broken|^SUMMARY|artifact_prefix|Test unit written' \
		"$scratch/log" | head -60 | sed 's/^/      /'
fi
