#!/usr/bin/env bash
# test_stress_reloc - test_stress (4 threads calling 1,200 functions while
# a link on all of them is attached and detached 1,000 times) on relocated
# sites, under AddressSanitizer.
. "$(dirname "$0")/../cli/lib.sh"
NEEDLE_SITES=all "$BUILD/tests/relocate/test_stress_reloc_asan"
check_eq "test_stress_reloc_asan exits 0" "$?" 0
