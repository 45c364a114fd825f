#!/usr/bin/env bash
# test_stress_reloc - test_stress on relocated sites, under
# AddressSanitizer: 4 threads call 10,000 functions built without
# patchable entries while a link on all of them is attached and detached
# 300 times (and a stable link on 100 of them counts exactly).
. "$(dirname "$0")/../lib.sh"
NEEDLE_SITES=all "$BUILD/tests/relocate/stress_reloc_asan"
check_eq "test_stress_reloc_asan exits 0" "$?" 0
