# test_uftrace_compat.sh - uftrace 0.13's replay-graph tests through needle
# (run.py): one PASS line per test that passes, FAIL for a test of
# expected_pass.txt that no longer does; the others are XFAIL lines, not
# counted.  Without the suite (NEEDLE_UFTRACE_TESTS, or
# ../shared/uftrace-0.13/tests beside the checkout) it says so and counts
# nothing.
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/run.py" --needle "${NEEDLE_BUILD:?}/needle" --jobs 2
